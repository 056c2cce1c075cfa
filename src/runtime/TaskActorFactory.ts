/**
 * Builds task actors: the task machine provided with its real worker (the
 * tool run), each actor wired to its own persister; each started actor's
 * ttl deadline goes to the process's one deadline timer (LiveDeadlines).
 *
 * Everything it needs comes in as options (tools, clock, limits, store,
 * callbacks); what a worker needs of its task (the run to adopt, the
 * persister to wait for, the actor's context) is kept here per task, from
 * the moment the actor is built until its worker stops. It never reads the
 * supervisor's maps.
 */
import { createActor, fromCallback, type Actor, type InspectionEvent, type Snapshot } from 'xstate';
import {
  taskMachine,
  TASK_MACHINE_VERSION,
  type TaskEvent,
  type TaskInput,
  type WorkerInput,
  type WorkerMessage,
} from '../../machines/task/index.js';
import type { TaskStore } from '../store/TaskStore.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import type { Logger } from './Logger.js';
import { deadlineOf } from './LiveDeadlines.js';
import { Persister } from './Persister.js';
import { ToolExecution } from './ToolExecution.js';

/** A task actor of the provided machine: real worker. */
export type TaskActor = Actor<typeof taskMachine>;

/** A built, not yet started, task actor and the persister that writes it. */
export interface TaskHandle {
  readonly actor: TaskActor;
  readonly persister: Persister;
}

export interface TaskActorFactoryOptions {
  store: TaskStore;
  tools: Pick<ToolRegistry, 'get'>;
  logger: Logger;
  now: () => number;
  /** Input requests a run may have outstanding at once. */
  maxPendingInputRequestsPerTask: number;
  /** Also receives every inspection event of every task actor (opt-in: costs nothing when absent). */
  inspect?: ((event: InspectionEvent) => void) | undefined;
  /** A task's record was stored (the one durable-publish path: Persister). */
  onWritten: (record: TaskRecord) => void;
  /** The store refused a task's write: another instance claimed it (fencing). */
  onFenced: (taskId: string) => void;
  /** Where a started actor's ttl deadline goes: the one timer that sends it `DEADLINE` (T-26). */
  deadlines: { add(taskId: string, deadline: number | null): void };
}

/** What the worker of one task needs, kept from build until the worker stops. */
interface Wiring {
  actor: TaskActor;
  persister: Persister;
  /** A run already under way (`auto` promotion), or the one the worker started. */
  execution?: ToolExecution | undefined;
}

export class TaskActorFactory {
  private readonly machine;
  private readonly wired = new Map<string, Wiring>();

  constructor(private readonly options: TaskActorFactoryOptions) {
    this.machine = taskMachine.provide({
      actors: {
        worker: fromCallback<WorkerMessage, WorkerInput>(({ input, sendBack, receive }) => {
          const wiring = this.wired.get(input.taskId);
          const execution = wiring ? (wiring.execution ?? this.startRun(input, wiring.actor)) : undefined;
          if (!wiring || !execution) {
            this.wired.delete(input.taskId);
            return () => {};
          }
          wiring.execution = execution;
          const { persister } = wiring;
          execution.attach(
            (event: TaskEvent) => sendBack(event),
            // Let the event reach the actor (and its persister) before waiting for the write (and its retries).
            async () => {
              await Promise.resolve();
              await persister.flushed();
            },
          );
          receive((message) => {
            if (message.type === 'ABORT') execution.cancel();
            else execution.deliver(message.responses);
          });
          return () => {
            execution.detach();
            execution.abort(taskEnded());
            this.wired.delete(input.taskId);
          };
        }),
      },
    });
  }

  /**
   * A new task's actor, constructed, not started: its worker has not run and
   * its snapshot holds the invokes to start (I-1). `execution` is a run
   * already under way (`auto` promotion) for the worker to adopt.
   */
  create(input: TaskInput, execution?: ToolExecution): TaskHandle {
    const persister = this.newPersister(1);
    const actor = createActor(this.machine, { input, inspect: this.inspectFor(persister) });
    this.wired.set(input.taskId, { actor, persister, execution });
    return { actor, persister };
  }

  /**
   * The actor of a stored unfinished task, restored from its snapshot, not
   * started. A snapshot the machine cannot restore throws here (recovery then
   * fails the task), never starts into an actor in error that xstate would
   * rethrow from a timer (issue 13 item 3).
   */
  restore(record: TaskRecord): TaskHandle {
    const persister = this.newPersister(record.version);
    const actor = createActor(this.machine, {
      // Cast: a stored snapshot is plain JSON, not xstate's Snapshot type; xstate checks it as it restores
      // and throwIfUnrestorable (below) reports one it cannot use.
      snapshot: record.snapshot as Snapshot<unknown>,
      // xstate restores the snapshot and ignores `input`, but its options type requires one for a
      // machine with input (statelyai/xstate#4915): the task's own, as far as the record shows it.
      input: inputOf(record),
      inspect: this.inspectFor(persister),
    });
    throwIfUnrestorable(actor);
    this.wired.set(record.taskId, { actor, persister });
    return { actor, persister };
  }

  /**
   * Starts a built actor whose record (`stored`) is in the store: from now on
   * each change is written. `projected`: `stored` was projected from this
   * actor as it is (a new task), so its unchanged start writes nothing.
   */
  start({ actor, persister }: TaskHandle, stored: TaskRecord, projected = false): void {
    persister.attach(actor, stored, projected);
    actor.subscribe({ error: (error) => this.options.logger.error(`task ${stored.taskId} actor failed`, error) });
    actor.start();
    // After start: a deadline already past is sent on the timer's next turn, to a running actor (I-8).
    this.options.deadlines.add(stored.taskId, deadlineOf(actor));
  }

  /** Forgets a built actor that will never start (its record could not be stored; the caller stops its run). */
  discard(taskId: string): void {
    this.wired.delete(taskId);
  }

  /** Aborts every run (the server stops). */
  abortAll(reason: string): void {
    for (const wiring of this.wired.values()) wiring.execution?.abort(new DOMException(reason, 'AbortError'));
    this.wired.clear();
  }

  private newPersister(version: number): Persister {
    return new Persister({
      store: this.options.store,
      machineVersion: TASK_MACHINE_VERSION,
      version,
      onError: (error, taskId) => this.options.logger.error(`could not store task ${taskId}; retrying`, error),
      onFenced: this.options.onFenced,
      onWritten: this.options.onWritten,
    });
  }

  /** The persister's hook, plus the user's inspector when one is configured (costs nothing otherwise). */
  private inspectFor(persister: Persister): (event: InspectionEvent) => void {
    const extra = this.options.inspect;
    if (!extra) return persister.inspect;
    return (event) => {
      persister.inspect(event);
      try {
        extra(event);
      } catch (error) {
        this.options.logger.error('inspector failed', error);
      }
    };
  }

  /** Starts the run of a task whose worker has none yet: a fresh `always` task, or a `replay` after restart. */
  private startRun(input: WorkerInput, actor: TaskActor): ToolExecution | undefined {
    const tool = this.options.tools.get(input.tool);
    if (!tool) return undefined;
    const context = actor.getSnapshot().context;
    return new ToolExecution({
      // `resume`: continue from the last saved progress; `replay` starts over by definition.
      ...(tool.options.resume === 'resume' && context.checkpoint !== undefined ? { checkpoint: context.checkpoint } : {}),
      tool,
      args: input.args,
      principal: context.owner,
      taskId: input.taskId,
      inputMode: 'wait',
      // From the context, not `input`: a restored invoke keeps the input it was first started with,
      // which predates the answers given since (a replay would ask again under a used key and hang).
      answers: context.answers,
      issuedKeys: context.issuedKeys,
      ...(context.sleeps ? { sleeps: context.sleeps } : {}),
      outstandingKeys: Object.keys(context.inputRequests),
      ...(context.clientCapabilities ? { clientCapabilities: context.clientCapabilities } : {}),
      ...(context.trace ? { trace: context.trace } : {}),
      maxPendingInputRequests: this.options.maxPendingInputRequestsPerTask,
      now: this.options.now,
    });
  }
}

/**
 * The reason `ctx.signal` gives when a task ends: an `AbortError` without a
 * stack (it would show only the actor's cleanup inside xstate), which costs a
 * third of one with (issue 20 item 2: one per task).
 */
function taskEnded(): DOMException {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new DOMException('The task ended', 'AbortError');
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * A task actor's input as far as the stored record shows it (its args are not kept): what a fresh actor
 * built from the record starts with (recovery), and what a restore passes for xstate to ignore.
 */
export function inputOf(record: TaskRecord): TaskInput {
  return {
    taskId: record.taskId,
    owner: record.owner,
    tool: record.tool,
    args: {},
    now: record.createdAt,
    ttlMs: record.ttlMs,
    ...(record.pollIntervalMs !== undefined ? { pollIntervalMs: record.pollIntervalMs } : {}),
    ...(record.statusMessage !== undefined ? { statusMessage: record.statusMessage } : {}),
    ...(record.trace !== undefined ? { trace: record.trace } : {}),
  };
}

/** Throws the error of an actor whose stored snapshot could not be restored (before it is started). */
export function throwIfUnrestorable(actor: { getSnapshot(): { status: string; error?: unknown } }): void {
  const snapshot = actor.getSnapshot();
  if (snapshot.status === 'error') throw snapshot.error instanceof Error ? snapshot.error : new Error(String(snapshot.error));
}
