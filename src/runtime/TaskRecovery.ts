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
import { TASK_MACHINE_VERSION, type TaskEvent } from '../../machines/task/index.js';
import { nonTerminalPages, putRecords, TaskFencedError, type TaskStore } from '../store/TaskStore.js';
import { taskRecordProblem } from '../tasks/recordProblem.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import type { Logger } from './Logger.js';
import { endFromRecord } from './endFromRecord.js';
import { heldCallLost, isHeldCallLost } from './heldCallLost.js';
import { setAside } from './readStoredTask.js';
import { endFromSnapshot } from '../tasks/storedTransition.js';
import type { TaskActorFactory } from './TaskActorFactory.js';
import type { TaskRegistry } from './TaskRegistry.js';

/** Unfinished tasks recovered per page; a page's failures are one `putMany` (one transaction or journal batch, one fsync). */
const RECOVERY_PAGE = 2_000;

/** Tasks recovered between two event-loop turns: requests served meanwhile (RecoveryGate) never wait for a whole page. */
const TURN = 250;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

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
  /** Keeps a resumable task that only waits for input passivated, no actor built; true when it did. */
  hold?: (record: TaskRecord) => boolean;
}

type Counts = Record<RecoveryOutcome, number>;

export class TaskRecovery {
  /** Whether start-up recovery ({@link recoverAll}) runs now: tasks not taken over yet cannot be updated or cancelled. */
  running = false;

  constructor(private readonly options: TaskRecoveryOptions) {}

  /**
   * Every unfinished task in the store (start-up recovery), page by page as
   * the store reads them: one scan, and never all records
   * in memory at once (at 100k the collector's work on a heap holding them
   * all made recovery slower per task the more tasks there were).
   */
  async recoverAll(): Promise<{ resumed: number; failed: number; quarantined: number }> {
    const counts = { resumed: 0, failed: 0, quarantined: 0 };
    this.running = true;
    try {
      for await (const page of nonTerminalPages(this.options.store, RECOVERY_PAGE)) {
        const outcome = await this.recoverPage(page, 'restart');
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
   * adoption), a page at a time: the tasks that end `failed` are taken
   * through the machine one by one (I-3) and stored with one batched write.
   */
  async resumeAll(records: readonly TaskRecord[], cause: RecoveryCause = 'restart'): Promise<Counts> {
    const counts: Counts = { resumed: 0, failed: 0, live: 0, quarantined: 0 };
    for (let start = 0; start < records.length; start += RECOVERY_PAGE) {
      const outcome = await this.recoverPage(records.slice(start, start + RECOVERY_PAGE), cause);
      for (const key of Object.keys(counts) as RecoveryOutcome[]) counts[key] += outcome[key];
    }
    return counts;
  }

  /**
   * Takes over one unfinished stored task: a tool with `resume: 'replay'` or
   * `'resume'` runs again from its restored snapshot (`resume` with its last
   * checkpoint); any other ends `failed` with a `statusMessage` saying why. A
   * task already live here is left alone. A resumed task's actor is
   * registered before this first awaits (passivation hands it an event then).
   */
  async resumeRecord(record: TaskRecord, cause: RecoveryCause = 'restart'): Promise<RecoveryOutcome> {
    const outcome = await this.recoverPage([record], cause);
    return (Object.keys(outcome) as RecoveryOutcome[]).find((key) => outcome[key] > 0) ?? 'live';
  }

  /**
   * One page of unfinished stored tasks. Each one is resumed (its actor
   * restored, or kept passivated), set aside when its record is damaged, or
   * ended `failed` by the machine's pure transition of its stored snapshot
   * (I-3; a fresh actor only when the snapshot cannot be used). The failed records are written with
   * one batched store call and published only once it resolved (durable
   * before visible). When that write fails, each record is
   * written on its own, so one record the store refuses fails alone.
   */
  private async recoverPage(records: readonly TaskRecord[], cause: RecoveryCause): Promise<Counts> {
    const { store, logger, registry } = this.options;
    const counts: Counts = { resumed: 0, failed: 0, live: 0, quarantined: 0 };
    const ended: TaskRecord[] = [];
    const settingAside: Promise<void>[] = [];
    const setAsideNow = (taskId: string, reason: string) => {
      counts.quarantined++;
      settingAside.push(setAside(store, logger, taskId, reason));
    };
    for (const [index, record] of records.entries()) {
      if (index > 0 && index % TURN === 0) await nextTurn();
      if (registry.has(record.taskId)) {
        counts.live++;
        continue;
      }
      // A record that cannot be recovered never stops start-up: it is set aside and the rest go on.
      const problem = taskRecordProblem(record);
      if (problem !== undefined) {
        setAsideNow(record.taskId, problem);
        continue;
      }
      const reason = this.failureReason(record, cause);
      try {
        if (reason === null) {
          this.resume(record);
          counts.resumed++;
        } else ended.push(this.ending(record, reason));
      } catch (error) {
        logger.error(`could not recover task ${record.taskId}`, error);
        try {
          ended.push(this.ending(record, `The server restarted and could not restore this task: ${(error as Error).message}`));
        } catch (again) {
          setAsideNow(record.taskId, `recovery could not end it: ${(again as Error).message}`);
        }
      }
    }
    if (ended.length > 0) {
      let stored: readonly TaskRecord[] = ended;
      try {
        // One store write for the page: a transaction, a journal batch, never a fsync per task.
        await putRecords(store, ended);
      } catch (error) {
        logger.error(`could not store ${ended.length} recovered task(s) at once; storing each on its own`, error);
        stored = await this.storeEach(ended, setAsideNow);
      }
      counts.failed += stored.length;
      for (const record of stored) this.options.publish(record);
    }
    await Promise.all(settingAside);
    return counts;
  }

  /** The failed records written one by one (after their batch failed); returns those stored. A record refused is set aside. */
  private async storeEach(records: readonly TaskRecord[], setAsideNow: (taskId: string, reason: string) => void): Promise<TaskRecord[]> {
    const outcomes = await Promise.all(
      records.map((record) =>
        this.options.store.put(record).then(
          () => record,
          (error: unknown) => {
            // Claimed by another instance meanwhile (cluster adoption): its task now, nothing to end or set aside here (I-9).
            if (error instanceof TaskFencedError) return undefined;
            // Not even its failure can be stored (the store refuses the record): set aside, never retried in a loop.
            setAsideNow(record.taskId, `recovery could not store it: ${(error as Error).message}`);
            return undefined;
          },
        ),
      ),
    );
    return outcomes.filter((record): record is TaskRecord => record !== undefined);
  }

  /** `null` when the task runs again, else the message it fails with (`undefined`: the machine's own, T-15, T-34). */
  private failureReason(record: TaskRecord, cause: RecoveryCause): string | undefined | null {
    if (record.historyOnly) return 'The server stopped during this synchronous run; its caller got no answer';
    if (record.machineVersion !== TASK_MACHINE_VERSION || record.snapshot === undefined) {
      return `The server restarted with a task machine version it cannot restore (stored ${record.machineVersion}, running ${TASK_MACHINE_VERSION})`;
    }
    const tool = this.options.tools.get(record.tool);
    if (!tool) return `The server restarted and no longer has the tool ${record.tool}`;
    if (tool.options.resume === 'replay' || tool.options.resume === 'resume') return null;
    // A held upstream request lives in the process that sent it: never silently lost, never silently sent twice.
    if (tool.held) return heldCallLost(tool.held.upstream, cause);
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

  /** An unfinished stored task ended `failed` without running anything (T-15, T-34), through the machine (I-3). */
  private ending(record: TaskRecord, reason: string | undefined): TaskRecord {
    const event: TaskEvent = {
      type: 'SERVER_RESTARTED',
      at: Math.max(record.lastUpdatedAt, this.options.now()),
      ...(reason !== undefined ? { message: reason } : {}),
    };
    const failed = restorable(record, reason) ? endFromSnapshot(record, event) : endFromRecord(record, event);
    // A synchronous run's history entry stays one (never a task to tasks/*).
    return record.historyOnly ? { ...failed, historyOnly: true } : failed;
  }
}

/** Why a task whose worker was a held upstream call of a tool not marked idempotent ends `failed` on restart or adoption. */
/**
 * Whether the failure runs from the task's own snapshot: a plain restart or an
 * adoption. Any other reason (machine version, missing tool, a snapshot that
 * would not restore) builds a fresh actor from the stored record instead.
 */
function restorable(record: TaskRecord, reason: string | undefined): boolean {
  return (reason === undefined || reason === ADOPTED_MESSAGE || isHeldCallLost(reason)) && record.snapshot !== undefined;
}

/**
 * Why an adopted task that cannot be resumed ends `failed`: its instance did
 * not restart, it lost its lease (a stalled database made
 * live tasks end "The server restarted" in a process that never restarted).
 */
const ADOPTED_MESSAGE =
  'The instance running this task lost its cluster lease (it died, stalled, or was cut off from the database) and the instance that took the task over cannot resume it';
