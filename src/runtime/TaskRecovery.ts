/**
 * Takes over unfinished stored tasks whose actors do not run in this process:
 * on start (every unfinished task in the store) and on cluster adoption (the
 * tasks of an instance whose lease expired). Each one is resumed (a tool with
 * `resume: 'replay' | 'resume'` runs again from its restored snapshot), ended
 * `failed` saying why, or set aside when its record is damaged: nothing stays
 * `working` forever.
 *
 * A task is only ever ended through the task machine (I-3): its restored
 * snapshot, or when that cannot be restored a fresh actor built from the
 * stored record, is sent `SERVER_RESTARTED`; no status is written by hand.
 */
import { createActor } from 'xstate';
import { taskMachine, TASK_MACHINE_VERSION, type TaskEvent } from '../../machines/task/index.js';
import type { TaskStore } from '../store/TaskStore.js';
import { recordOf } from '../tasks/project.js';
import { taskRecordProblem } from '../tasks/recordProblem.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import type { Logger } from './Logger.js';
import { setAside } from './setAside.js';
import { endFromSnapshot } from './storedTransition.js';
import { inputOf, throwIfUnrestorable, type TaskActorFactory } from './TaskActorFactory.js';
import type { TaskRegistry } from './TaskRegistry.js';

/** Unfinished tasks recovered concurrently per batch. */
const RECOVERY_BATCH = 500;

/** Why a stored task is being taken over: this process restarted, or its instance lost its cluster lease. */
export type RecoveryCause = 'restart' | 'adopted';

/** What became of one stored task. */
export type RecoveryOutcome = 'resumed' | 'failed' | 'live' | 'quarantined';

export interface TaskRecoveryOptions {
  store: TaskStore;
  tools: Pick<ToolRegistry, 'get'>;
  /** Builds and starts the actor of a resumed task. */
  factory: TaskActorFactory;
  /** Where a resumed task runs; a task already there is left alone. */
  registry: TaskRegistry;
  logger: Logger;
  now: () => number;
  /** A task recovery ended `failed` was stored: tell change listeners. */
  publish: (record: TaskRecord) => void;
  /** Keeps a resumable task that only waits for input passivated, no actor built; true when it did (issue 20 item 3). */
  hold?: (record: TaskRecord) => boolean;
}

export class TaskRecovery {
  /** Whether start-up recovery ({@link recoverAll}) runs now: tasks not taken over yet cannot be updated or cancelled. */
  running = false;

  constructor(private readonly options: TaskRecoveryOptions) {}

  /**
   * Every unfinished task in the store (start-up recovery), page by page as
   * the store reads them (issue 13 item 6): one scan, and never all records
   * in memory at once (at 100k the collector's work on a heap holding them
   * all made recovery slower per task the more tasks there were).
   */
  async recoverAll(): Promise<{ resumed: number; failed: number; quarantined: number }> {
    const counts = { resumed: 0, failed: 0, quarantined: 0 };
    const { store } = this.options;
    this.running = true;
    try {
      // A store without a paged scan (memory, a custom one) is read at once and recovered in the same batches.
      const pages = store.scanNonTerminal ? store.scanNonTerminal(RECOVERY_BATCH) : [await store.listNonTerminal()];
      for await (const page of pages) {
        const outcome = await this.resumeAll(page);
        counts.resumed += outcome.resumed;
        counts.failed += outcome.failed;
        counts.quarantined += outcome.quarantined;
      }
      return counts;
    } finally {
      this.running = false;
    }
  }

  /**
   * {@link resumeRecord} for many stored tasks (start-up recovery, cluster
   * adoption), in bounded concurrent batches: a store with group commit turns
   * each batch into few fsyncs (one at a time cost ~0.9 ms per task on
   * sqlite: 100k tasks took minutes).
   */
  async resumeAll(
    records: readonly TaskRecord[],
    cause: RecoveryCause = 'restart',
  ): Promise<{ resumed: number; failed: number; live: number; quarantined: number }> {
    const counts = { resumed: 0, failed: 0, live: 0, quarantined: 0 };
    for (let start = 0; start < records.length; start += RECOVERY_BATCH) {
      const outcomes = await Promise.all(records.slice(start, start + RECOVERY_BATCH).map((record) => this.resumeRecord(record, cause)));
      for (const outcome of outcomes) counts[outcome]++;
    }
    return counts;
  }

  /**
   * Takes over one unfinished stored task: a tool with `resume: 'replay'` or
   * `'resume'` runs again from its restored snapshot (`resume` with its last
   * checkpoint); any other ends `failed` with a `statusMessage` saying why. A
   * task already live here is left alone.
   */
  async resumeRecord(record: TaskRecord, cause: RecoveryCause = 'restart'): Promise<RecoveryOutcome> {
    const { store, logger, registry } = this.options;
    if (registry.has(record.taskId)) return 'live';
    // A record that cannot be recovered never stops start-up: it is set aside and the rest go on (issue 13 item 3).
    const problem = taskRecordProblem(record);
    if (problem !== undefined) {
      await setAside(store, logger, record.taskId, problem);
      return 'quarantined';
    }
    const reason = this.failureReason(record, cause);
    try {
      if (reason === null) {
        this.resume(record);
        return 'resumed';
      }
      await this.fail(record, reason);
      return 'failed';
    } catch (error) {
      logger.error(`could not recover task ${record.taskId}`, error);
      try {
        await this.fail(record, `The server restarted and could not restore this task: ${(error as Error).message}`);
        return 'failed';
      } catch (again) {
        // Not even its failure can be stored (the store refuses the record): set aside, never retried in a loop.
        await setAside(store, logger, record.taskId, `recovery could not store it: ${(again as Error).message}`);
        return 'quarantined';
      }
    }
  }

  /**
   * `null` when the task runs again; otherwise the message it fails with
   * (`undefined`: the machine's own restart error, T-15, T-34).
   */
  private failureReason(record: TaskRecord, cause: RecoveryCause): string | undefined | null {
    if (record.historyOnly) return 'The server stopped during this synchronous run; its caller got no answer';
    if (record.machineVersion !== TASK_MACHINE_VERSION || record.snapshot === undefined) {
      return `The server restarted with a task machine version it cannot restore (stored ${record.machineVersion}, running ${TASK_MACHINE_VERSION})`;
    }
    const tool = this.options.tools.get(record.tool);
    if (!tool) return `The server restarted and no longer has the tool ${record.tool}`;
    if (tool.options.resume === 'replay' || tool.options.resume === 'resume') return null;
    return cause === 'adopted' ? ADOPTED_MESSAGE : undefined;
  }

  /** Restores the task's actor and runs it here; it counts against its owner's limit but is never refused (it exists). */
  private resume(record: TaskRecord): void {
    const { factory, registry } = this.options;
    if (this.options.hold?.(record)) return;
    const task = factory.restore(record);
    registry.add(task, record, registry.slots.adopt(record.owner));
    factory.start(task, record);
  }

  /** Ends an unfinished stored task `failed` without running anything (T-15, T-34), through the machine (I-3). */
  private async fail(record: TaskRecord, reason: string | undefined): Promise<void> {
    const event: TaskEvent = {
      type: 'SERVER_RESTARTED',
      at: Math.max(record.lastUpdatedAt, this.options.now()),
      ...(reason !== undefined ? { message: reason } : {}),
    };
    const failed = restorable(record, reason) ? endFromSnapshot(record, event) : endFromRecord(record, event);
    // A synchronous run's history entry stays one (never a task to tasks/*).
    const next: TaskRecord = record.historyOnly ? { ...failed, historyOnly: true } : failed;
    await this.options.store.put(next);
    this.options.publish(next);
  }
}

/** A fresh actor built from what the stored record shows (its snapshot cannot be used), taken through `event`. */
function endFromRecord(record: TaskRecord, event: TaskEvent): TaskRecord {
  // The unprovided machine has inert workers: this runs only the transitions.
  const actor = createActor(taskMachine, { input: inputOf(record) });
  throwIfUnrestorable(actor);
  actor.start();
  // A fresh actor carries the stored progress report on (a restored one has it in its context).
  if (record.checkpoint !== undefined) actor.send({ type: 'CHECKPOINT', at: event.at, checkpoint: record.checkpoint });
  actor.send(event);
  const failed = recordOf(actor.getSnapshot(), undefined, record.version + 1, TASK_MACHINE_VERSION);
  actor.stop();
  return failed;
}

/**
 * Whether the failure runs from the task's own snapshot: a plain restart or an
 * adoption. Any other reason (machine version, missing tool, a snapshot that
 * would not restore) builds a fresh actor from the stored record instead.
 */
function restorable(record: TaskRecord, reason: string | undefined): boolean {
  return (reason === undefined || reason === ADOPTED_MESSAGE) && record.snapshot !== undefined;
}

/**
 * Why an adopted task that cannot be resumed ends `failed`: its instance did
 * not restart, it lost its lease (issue 13 item 4: a stalled database made
 * live tasks end "The server restarted" in a process that never restarted).
 */
const ADOPTED_MESSAGE =
  'The instance running this task lost its cluster lease (it died, stalled, or was cut off from the database) and the instance that took the task over cannot resume it';
