/**
 * A stored unfinished task taken through one event by the task machine's
 * pure transition function, without building its actor (I-3): recovery ends
 * tasks it cannot resume this way, passivation ends passivated tasks
 * (cancel, deadline) this way.
 */
import { createActor, type AnyActorScope } from 'xstate';
import { taskMachine, TASK_MACHINE_VERSION, type TaskEvent } from '../../machines/task/index.js';
import { recordOf } from './project.js';
import type { TaskRecord } from './TaskRecord.js';

/**
 * The task's stored snapshot taken through `event` by the machine's pure
 * transition function (I-3): the same record an actor restored from it would
 * reach, without building an actor and its system for each of
 * possibly 100k tasks (recovery was ~0.5 ms of actor set-up
 * per task).
 */
export function endFromSnapshot(record: TaskRecord, event: TaskEvent): TaskRecord {
  const { snapshot } = resolveStored(record);
  // What xstate's transition() does, with one inert scope for every task: it built an actor per call for its
  // scope (with the machine's initial snapshot), which was two thirds of this function's cost.
  const next = taskMachine.transition(snapshot, event, inertScope());
  if (next.status === 'error') throw next.error instanceof Error ? next.error : new Error(String(next.error));
  return recordOf(next, undefined, record.version + 1, TASK_MACHINE_VERSION);
}

/** What a stored task record keeps of its machine snapshot (JSON, so untyped). */
interface StoredSnapshot {
  value: unknown;
  context: unknown;
  children?: unknown;
}

/**
 * The stored snapshot resolved by the machine. The one cast here: the record
 * is JSON this machine wrote (its state value and context), which TypeScript
 * cannot see; `resolveState` rebuilds the typed state from it.
 */
function resolveStored(record: TaskRecord) {
  const stored = record.snapshot as StoredSnapshot;
  const config = { value: stored.value, context: stored.context } as Parameters<typeof taskMachine.resolveState>[0];
  return { stored, snapshot: taskMachine.resolveState(config) };
}

let scope: AnyActorScope | undefined;

/**
 * A scope whose effects do nothing, as xstate's `createInertActorScope` builds
 * for `transition()`: actions are not executed, children not started or
 * stopped, nothing emitted. Built once (its actor is never started).
 */
function inertScope(): AnyActorScope {
  if (scope === undefined) {
    const self = createActor(taskMachine, {
      input: { taskId: 'inert', owner: 'inert', tool: 'inert', args: {}, now: 0, ttlMs: null },
    });
    scope = {
      self,
      defer: () => {},
      id: '',
      logger: () => {},
      sessionId: '',
      stopChild: () => {},
      system: self.system,
      emit: () => {},
      actionExecutor: () => {},
    };
  }
  return scope;
}

/**
 * A passivated task's stored record taken through `event` by the machine
 * (I-3), ready to be stored as its next version; `undefined` when the
 * machine ignores the event (unknown or answered keys, T-22). The snapshot
 * has no children (the machine invokes none; a stored
 * `worker` child from before is dropped, as a restore skips it): the actor
 * restored from it starts the task's run again from its context, as the
 * live task did, and its deadline is queued again from its context (I-8).
 */
export function transitionStored(record: TaskRecord, event: TaskEvent): TaskRecord | undefined {
  const { stored, snapshot } = resolveStored(record);
  // The inert scope drops what the machine emits (`INPUT`): the rehydrated run reads every answer from the context.
  const next = taskMachine.transition(snapshot, event, inertScope());
  if (next.status === 'error') throw next.error instanceof Error ? next.error : new Error(String(next.error));
  if (JSON.stringify([next.value, next.context]) === JSON.stringify([stored.value, stored.context])) return undefined;
  const persisted = {
    ...stored,
    status: next.status,
    value: next.value,
    context: next.context,
    historyValue: next.historyValue,
    children: {},
  };
  return recordOf(next, persisted, record.version + 1, TASK_MACHINE_VERSION);
}
