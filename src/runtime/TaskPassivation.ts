/**
 * Passivation (ARCHITECTURE "Passivation"): a task that has
 * waited for input for `idleAfterMs` with nothing left to write lives in the
 * store, not in memory. Its actor is stopped (the handler's suspended run is
 * aborted and dropped) and only a {@link PassivatedTask} entry stays: owner,
 * admission slot, deadline. Clients cannot tell:
 *
 * - `get` answers from the store, which holds exactly what a live task would
 *   show (a task is passivated only when its persister is idle: every change
 *   is durable, I-1, nothing unpersisted is dropped);
 * - every event for it (`update`, `cancel`, its deadline) goes through the
 *   machine's pure transition of its stored snapshot (I-3), is stored, then
 *   published (the one durable-publish order, I-1): the same record and the
 *   same listen frame a live actor would have produced. Ignored answers
 *   (T-22) change nothing; `cancel` and the deadline end it at once (T-24,
 *   T-26) without running anything; accepted answers then rehydrate it
 *   (`TaskRecovery.resumeRecord`: the handler runs again from the start with
 *   every answer replayed, and sets none of its earlier status messages
 *   again, see `ToolExecution`), so it goes on exactly where a live one would.
 *
 * A task that only sleeps (`ctx.sleep`) is passivated too (`sleepingWait.ts`).
 *
 * Only `resume: 'replay'`/`'resume'` tools' tasks are passivated (running
 * the handler again is what the tool promised to tolerate); a `'fail'`
 * handler cannot run again nor be stored: it stays live.
 */
import { TASK_MACHINE_VERSION, type TaskEvent } from '../../machines/task/index.js';
import { TaskFencedError, type TaskStore } from '../store/TaskStore.js';
import { isTerminal, visibleKey } from '../tasks/project.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import type { Logger } from './Logger.js';
import { PassivatedDeadlines } from './PassivatedDeadlines.js';
import { readStoredTask } from './readStoredTask.js';
import { pendingWake, sleepsLong, waitOf } from './sleepingWait.js';
import { transitionStored } from '../tasks/storedTransition.js';
import type { TaskRecovery } from './TaskRecovery.js';
import type { LiveTask, PassivatedTask, TaskRegistry } from './TaskRegistry.js';

export interface TaskPassivationOptions {
  store: TaskStore;
  tools: Pick<ToolRegistry, 'get'>;
  logger: Logger;
  registry: TaskRegistry;
  recovery: Pick<TaskRecovery, 'resumeRecord'>;
  now: () => number;
  /** How long a task waits for input, with nothing to write, before its actor leaves memory; `false`: never. Default 60 s. */
  passivateIdleAfterMs?: number | false | undefined;
  finishedRetentionMs?: number | undefined;
  /** A passivated task ended (cancel, deadline) and its final record is stored: tell listeners. */
  publish: (record: TaskRecord) => void;
}

/** Default `passivateIdleAfterMs`: a minute waiting for input, with nothing to write. */
export const DEFAULT_PASSIVATE_IDLE_AFTER_MS = 60_000;

export class TaskPassivation {
  /** Passivated tasks' ttl deadlines (T-26): one timer, no scan. */
  private readonly deadlines: PassivatedDeadlines;
  private stopped = false;
  /** The task being rehydrated right now (recovery must build its actor, not {@link hold} it again). */
  private rehydrating: string | undefined;
  /** Events being applied to passivated tasks: `stop()` waits for their writes. */
  private readonly applying = new Set<Promise<unknown>>();

  constructor(private readonly options: TaskPassivationOptions) {
    const { registry, logger, now } = options;
    this.deadlines = new PassivatedDeadlines({
      registry,
      logger,
      now,
      deliver: (taskId, principal, event) => this.deliver(taskId, principal, event),
    });
  }

  /**
   * A live task's record was stored (or created: a task promoted while it
   * waited for input may write nothing more): (re)starts its idle timer if
   * it now only waits for input, or sleeps long enough to be passivated at
   * once (the registry clears it when the task leaves).
   */
  written(live: LiveTask, record: TaskRecord): void {
    const idleAfterMs = this.idleAfterMs;
    if (idleAfterMs === false) return;
    clearTimeout(live.idleTimer);
    live.idleTimer = undefined;
    if (this.stopped || !this.rerunnable(record.tool)) return;
    if (record.status === 'input_required') live.idleTimer = setTimeout(() => this.passivate(live), idleAfterMs);
    // On a later turn: the persister that called this is not idle yet.
    else if (record.status === 'working' && sleepsLong(waitOf(record), idleAfterMs, this.options.now()))
      live.idleTimer = setTimeout(() => this.passivate(live), 0);
  }

  /**
   * Applies `event` to the task if it is passivated here and `principal`
   * owns it (I-7); false otherwise (the caller routes it as before). Events
   * for one task are applied one at a time, in the order they came; one that
   * finds the task rehydrated by an earlier one goes to its actor.
   */
  async deliver(taskId: string, principal: string, event: TaskEvent): Promise<boolean> {
    const entry = this.options.registry.passivatedOwned(taskId, principal);
    if (!entry) return false;
    const turn = (entry.queue ?? Promise.resolve()).then(() => this.apply(taskId, entry, event));
    entry.queue = turn.catch(() => undefined);
    this.applying.add(entry.queue);
    void entry.queue.then(() => this.applying.delete(entry.queue!));
    await turn;
    return true;
  }

  /**
   * Recovery (start-up, cluster adoption) found `record` unfinished: a task
   * of a re-runnable tool that has waited for input for `idleAfterMs`
   * already, or sleeps for longer than that still, is kept passivated, no
   * actor built (its handler runs again on its next accepted answer or at
   * its wake time, as after any rehydration). Returns whether it did; it
   * then counts against its owner's limit like any recovered task.
   */
  hold(record: TaskRecord): boolean {
    const { registry, now } = this.options;
    const idleAfterMs = this.idleAfterMs;
    if (idleAfterMs === false || this.stopped || record.taskId === this.rehydrating || !this.rerunnable(record.tool)) return false;
    const wait = waitOf(record);
    if (record.status === 'working') {
      // A sleep shorter than that (or none) runs live: its handler sleeps until the stored wake time.
      if (!sleepsLong(wait, this.idleAfterMs, this.options.now())) return false;
    } else if (record.status === 'input_required') {
      if (now() - record.lastUpdatedAt < idleAfterMs) {
        // Waiting for a shorter while: it runs live and is passivated when its idle time is up (registered right after this).
        queueMicrotask(() => {
          const live = registry.get(record.taskId);
          if (live?.persister.durable) this.written(live, live.persister.durable);
        });
        return false;
      }
    } else return false;
    const deadline = record.ttlMs === null ? null : record.createdAt + record.ttlMs;
    const wakeAt = pendingWake(wait.sleepingUntil, this.options.now());
    registry.hold(record.taskId, { owner: record.owner, slot: registry.slots.adopt(record.owner), deadline, wakeAt });
    this.deadlines.add(record.taskId, deadline, wakeAt);
    return true;
  }

  /** Nothing is written again (I-9): timers stop, writes under way finish, passivated tasks leave (recovered on the next start). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.deadlines.stop();
    for (const [taskId] of this.options.registry.allPassivated()) this.options.registry.remove(taskId);
    await Promise.all(this.applying);
  }

  private get idleAfterMs(): number | false {
    return this.options.passivateIdleAfterMs ?? DEFAULT_PASSIVATE_IDLE_AFTER_MS;
  }

  private rerunnable(toolName: string): boolean {
    const tool = this.options.tools.get(toolName); // a held upstream call is a request in flight here: never passivated
    return !tool?.held && ['replay', 'resume'].includes(tool?.options.resume ?? 'fail');
  }

  /** The idle timer fired: passivates the task if it still only waits (or sleeps) and everything it did is stored. */
  private passivate(live: LiveTask): void {
    const { registry } = this.options;
    live.idleTimer = undefined;
    // The same actor still (not finished and recovered again), nothing unwritten or being written (I-1).
    if (this.stopped || registry.get(live.taskId) !== live || !live.persister.idle) return;
    const durable = live.persister.durable;
    const snapshot = live.actor.getSnapshot();
    if (snapshot.status !== 'active') return;
    const { context } = snapshot;
    const waitsForInput = durable?.status === 'input_required' && snapshot.matches({ active: 'input_required' });
    const sleeps =
      durable?.status === 'working' && snapshot.matches({ active: 'working' }) && sleepsLong(context, this.idleAfterMs, this.options.now());
    if (!waitsForInput && !sleeps) return;
    const deadline = context.ttlMs === null ? null : context.createdAt + context.ttlMs;
    const wakeAt = pendingWake(context.sleepingUntil, this.options.now());
    registry.passivate(live, deadline, wakeAt);
    this.deadlines.add(live.taskId, deadline, wakeAt);
  }

  /** One event for one passivated task (its turn in the task's queue). */
  private async apply(taskId: string, entry: PassivatedTask, event: TaskEvent): Promise<void> {
    const { registry, store } = this.options;
    if (registry.passivated(taskId) !== entry) {
      // Rehydrated by an earlier event: the actor takes this one (a task that ended ignores it, I-2). Not a wake:
      // the live run keeps its own sleep timers, and a WOKE now would hide a sleep it has pending again.
      if (event.type !== 'WOKE') registry.owned(taskId, entry.owner)?.actor.send(event);
      return;
    }
    if (this.stopped) return;
    const record = await readStoredTask(this.options, taskId, entry.owner, this.options.now());
    if (isTerminal(record)) {
      registry.remove(taskId);
      return;
    }
    // Not for the pure transition: recovery decides (it fails such a task through the machine, I-3).
    // Its sleep is over: the handler runs again (its actor clears the sleep it waited for).
    if (record.machineVersion !== TASK_MACHINE_VERSION || record.snapshot === undefined || event.type === 'WOKE')
      return this.rehydrate(taskId, entry, record, event);
    // A working passivated task only sleeps: nothing runs on its behalf, so it is cancelled at once (T-24).
    const next = transitionStored(record, event.type === 'CANCEL' && record.status === 'working' ? { ...event, idle: true } : event);
    // Ignored by the machine (answers to keys not outstanding, T-22): nothing changes, nothing runs.
    if (next === undefined || this.stopped) return;
    // Accepted answers: the handler goes on. Its actor takes the event as a live one would, and its
    // persister writes what follows in the same order, coalesced the same way (the same listen frames).
    if (!isTerminal(next)) return this.rehydrate(taskId, entry, record, event);
    // The end (cancel, deadline): nothing runs, the transition is stored, then published.
    try {
      await store.put(next);
    } catch (error) {
      if (!(error instanceof TaskFencedError)) throw error;
      // Another instance runs this task now: it leaves this process, nothing written (I-9).
      registry.remove(taskId);
      this.options.logger.info(`task ${taskId} is no longer run by this instance (claimed by another)`);
      return;
    }
    // Stored, then published: what a live task's persister does with the same change.
    if (visibleKey(next) !== visibleKey(record)) this.options.publish(next);
    registry.remove(taskId);
  }

  /**
   * Builds and starts the task's actor from `record` (its latest stored
   * version) and hands it `event` at once, before its handler has run a
   * step; the entry's slot passes to it.
   */
  private async rehydrate(taskId: string, entry: PassivatedTask, record: TaskRecord, event: TaskEvent): Promise<void> {
    const { registry, recovery } = this.options;
    registry.unpassivate(taskId);
    // resumeRecord registers the actor synchronously, before its first await (and asks hold(), which must not hold it again).
    this.rehydrating = taskId;
    let resumed: Promise<unknown>;
    try {
      resumed = recovery.resumeRecord(record);
      registry.get(taskId)?.actor.send(event);
    } finally {
      this.rehydrating = undefined;
    }
    try {
      await resumed;
    } finally {
      // The live task took a slot of its own: the owner's count never dropped in between.
      entry.slot.release();
    }
    const live = registry.get(taskId);
    // Armed now: a rehydrated task that writes nothing new would otherwise never leave memory again.
    if (live?.persister.durable) this.written(live, live.persister.durable);
  }
}
