/**
 * The lowdb store's write path: creates and puts do not write their task
 * file on the request path. The writes accepted together go into one batch
 * file of a {@link BatchJournal} (`<dir>/journal/`), durable after one
 * fdatasync and one folder fsync for the whole batch; each caller is answered
 * once its batch is durable (I-1). A checkpoint then writes each journaled
 * task's latest record to its task file (durably) off the request path — a
 * create and the completion that follows it often become one file write —
 * and removes the batch files it covered. `open()` replays batch files a
 * crash left behind, and a clean `close()` checkpoints, so a closed store is
 * one file per task.
 */
import { join } from 'node:path';
import type { TaskRecord } from '../../tasks/TaskRecord.js';
import { BatchJournal, type JournalBatch } from '../BatchJournal.js';
import { DurableJsonFile, errorMessage, fsyncDir, type DurableJsonFileHooks } from '../DurableJsonFile.js';
import { checkStoredRecord } from '../kit/storedRecord.js';
import { locateTask, type TaskLocation } from '../taskFiles.js';
import { forEachSettled, indexEntryOf, type IndexEntry } from './files.js';

/** How long journaled records wait before a checkpoint writes them to their task files: long enough for a short task's completion to overwrite its create in memory. */
const CHECKPOINT_DELAY_MS = 500;
/** Journaled records at which a checkpoint starts at once instead of after the delay. */
const CHECKPOINT_SOON = 2_000;
/** Journaled records at which new writes wait for the checkpoint (bounds memory and replay time). */
const JOURNAL_LIMIT = 20_000;
/** Task files a checkpoint writes at a time: leaves libuv's other threads to the batches on the request path. */
const CHECKPOINT_CONCURRENCY = 2;

/** A record committed to the journal and not yet in its task file (compared by identity: a newer commit replaces it). */
interface Journaled {
  text: string;
}

/** One record to commit: its index entry and its JSON text. */
export interface RecordWrite {
  entry: IndexEntry;
  text: string;
}

/** What the journal shares with its store. */
export interface JournalHost {
  readonly dir: string;
  readonly tasksDir: string;
  /** This process owns the folder: only then are checkpoints written and batches removed. */
  readonly owner: boolean;
  readonly index: Map<string, IndexEntry>;
  readonly hooks: DurableJsonFileHooks | undefined;
  isQuarantined(taskId: string): boolean;
  ensureShard(location: TaskLocation): Promise<void>;
  /** A batch file holds damaged lines: reported, and kept whole beside the quarantined records. */
  damagedBatch(path: string, error: Error): Promise<void>;
  warn(message: string): void;
  closed(): boolean;
}

export class JournaledWrites {
  readonly #journal: BatchJournal;
  /** Each journaled task's latest record not yet in its task file: what `get` and lists read first. */
  readonly #journaled = new Map<string, Journaled>();
  /** The last batch holding each task, until that batch file is removed. */
  readonly #lastBatch = new Map<string, number>();
  /** Tail of the checkpoint queue (one checkpoint at a time); `undefined` when none is queued. */
  #checkpointRun: Promise<void> | undefined;
  #checkpointTimer: NodeJS.Timeout | undefined;

  constructor(private readonly host: JournalHost) {
    this.#journal = new BatchJournal(join(host.dir, 'journal'), host.hooks);
  }

  /** The task's journaled record (newer than its file), if any. */
  textOf(taskId: string): string | undefined {
    return this.#journaled.get(taskId)?.text;
  }

  /** Commits records as one member of the next batch: all of them durable and visible (index, reads) together, or none. */
  async write(writes: readonly RecordWrite[]): Promise<void> {
    // Backpressure: the journal (and the memory holding its records) stays bounded when the disk cannot keep up.
    while (this.#journaled.size >= JOURNAL_LIMIT) await this.checkpoint();
    // JSON text holds no raw newline: each record stays one line of the batch file.
    const lines = writes.length === 1 ? writes[0]!.text : writes.map((write) => write.text).join('\n');
    await this.#journal.append(lines, (seq) => {
      for (const { entry, text } of writes) {
        this.host.index.set(entry.taskId, entry);
        this.#journaled.set(entry.taskId, { text });
        this.#lastBatch.set(entry.taskId, seq);
      }
    });
    this.#schedule();
  }

  /** Until a task's batches are removed, a crash would replay them: a delete or quarantine waits for a checkpoint covering the task first. */
  async unjournal(taskId: string): Promise<void> {
    while ((this.#lastBatch.get(taskId) ?? 0) > this.#journal.droppedThrough) await this.checkpoint();
  }

  /** Queues a checkpoint after the one running (whose snapshot of the journal may predate the caller's writes). */
  checkpoint(): Promise<void> {
    const run = (this.#checkpointRun ?? Promise.resolve()).catch(() => undefined).then(() => this.#writeCheckpoint());
    this.#checkpointRun = run;
    void run
      .catch(() => undefined)
      .then(() => {
        if (this.#checkpointRun === run) this.#checkpointRun = undefined;
      });
    return run;
  }

  /**
   * Loads the batches a crash (or a running owner, for a read-only view) left
   * in the journal: each record newer than its task file becomes the task's
   * journaled record; the owner checkpoints them soon after.
   */
  async replay(): Promise<void> {
    const batches = await this.#journal.load(this.host.owner, (path, error) => void this.host.damagedBatch(path, error));
    for (const batch of batches) await this.#replayBatch(batch);
    if (this.host.owner && batches.length > 0) this.#background();
  }

  /** Waits for the batches under way; an owner that was open checkpoints, so a clean stop leaves one file per task and no journal. */
  async close(wasOpen: boolean): Promise<void> {
    await this.#journal.idle();
    clearTimeout(this.#checkpointTimer);
    this.#checkpointTimer = undefined;
    // If this fails the batches stay and the next open replays them.
    if (wasOpen && this.host.owner && this.#journal.committedThrough > this.#journal.droppedThrough)
      await this.checkpoint().catch((error: unknown) =>
        this.host.warn(`lowdb task store at ${this.host.dir}: journal left for the next open: ${errorMessage(error)}`),
      );
    await this.#checkpointRun?.catch(() => undefined);
  }

  #schedule(): void {
    if (!this.host.owner || this.host.closed()) return;
    if (this.#journaled.size >= CHECKPOINT_SOON) {
      if (this.#checkpointRun === undefined) this.#background();
      return;
    }
    if (this.#checkpointTimer !== undefined) return;
    this.#checkpointTimer = setTimeout(() => {
      this.#checkpointTimer = undefined;
      this.#background();
    }, CHECKPOINT_DELAY_MS);
    this.#checkpointTimer.unref();
  }

  #background(): void {
    this.checkpoint().then(
      () => {
        if (this.#journal.committedThrough > this.#journal.droppedThrough) this.#schedule();
      },
      (error: unknown) => {
        // Nothing is lost: the batches stay on disk and the records in memory; tried again after the delay.
        this.host.warn(`lowdb task store at ${this.host.dir}: checkpoint failed, retrying: ${errorMessage(error)}`);
        this.#schedule();
      },
    );
  }

  /** Every journaled record into its task file (durably), then the batches committed before it started are removed. */
  async #writeCheckpoint(): Promise<void> {
    const through = this.#journal.committedThrough;
    if (through <= this.#journal.droppedThrough && this.#journaled.size === 0) return;
    const written: Array<[string, Journaled]> = [];
    const folders = new Set<string>();
    await forEachSettled([...this.#journaled], CHECKPOINT_CONCURRENCY, async ([taskId, journaled]) => {
      const location = locateTask(this.host.tasksDir, taskId);
      if (location === undefined) return;
      await this.host.ensureShard(location);
      // No hooks: they observe the syncs on the request path (the journal's), which a checkpoint is not.
      await new DurableJsonFile<TaskRecord>(location.file).writeText(journaled.text, { syncFolder: false });
      folders.add(location.shardDir);
      written.push([taskId, journaled]);
    });
    // I-1: each shard folder once for all the renames made in it, before any batch is removed.
    await forEachSettled([...folders], CHECKPOINT_CONCURRENCY, fsyncDir);
    // A newer commit made meanwhile stays journaled for the next checkpoint.
    for (const [taskId, journaled] of written) if (this.#journaled.get(taskId) === journaled) this.#journaled.delete(taskId);
    // Every record of batches ≤ through is in a task file now (its own, or a newer one of the same task).
    await this.#journal.dropThrough(through);
    for (const [taskId, seq] of this.#lastBatch) if (seq <= through) this.#lastBatch.delete(taskId);
  }

  async #replayBatch(batch: JournalBatch): Promise<void> {
    const problems: string[] = [];
    for (const line of batch.lines) {
      const entry = entryOfLine(line, this.host.tasksDir);
      if (typeof entry === 'string') {
        // A batch file is complete by construction (renamed after its sync): bad bytes are damage, reported and kept.
        problems.push(entry);
        continue;
      }
      if (this.host.isQuarantined(entry.taskId)) continue;
      const current = this.host.index.get(entry.taskId);
      if (current !== undefined && current.version >= entry.version) continue;
      this.host.index.set(entry.taskId, entry);
      this.#journaled.set(entry.taskId, { text: line });
      this.#lastBatch.set(entry.taskId, batch.seq);
    }
    if (problems.length > 0)
      await this.host.damagedBatch(batch.path, new Error(`journal line is not a task record: ${problems.join('; ')}`));
  }
}

/** The index entry of a journal line, or what is wrong with it (the same record check as every read). */
function entryOfLine(line: string, tasksDir: string): IndexEntry | string {
  let taskId: unknown;
  try {
    taskId = (JSON.parse(line) as { taskId?: unknown } | null)?.taskId;
  } catch {
    taskId = undefined;
  }
  if (typeof taskId !== 'string' || locateTask(tasksDir, taskId) === undefined) return 'no storable task id';
  const checked = checkStoredRecord({ taskId, text: line });
  return 'record' in checked ? indexEntryOf(checked.record) : checked.problem;
}
