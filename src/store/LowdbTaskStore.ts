/**
 * File-backed {@link TaskStore}: one lowdb document (one small JSON file) per
 * task, written through {@link DurableJsonFile} so every acknowledged create,
 * put and delete survives `kill -9` and power loss (T-07, I-1).
 *
 * Group commit (issue 20 item 2): creates and puts do not write their task
 * file on the request path. The writes accepted together go into one batch
 * file of the store's {@link BatchJournal} (`<dir>/journal/`), durable after
 * one fdatasync and one folder fsync for the whole batch; each caller is
 * answered once its batch is durable. A checkpoint then writes each journaled
 * task's latest record to its task file (durably, as before) off the request
 * path — a create and the completion that follows it often become one file
 * write — and removes the batch files it covered. `open()` replays batch files
 * a crash left behind, and a clean `close()` checkpoints, so a closed store is
 * one file per task exactly as before (older stores open unchanged).
 *
 * Why one file per task instead of one lowdb database: lowdb rewrites its
 * whole file on every write, so a single database costs O(total tasks) per
 * create (reference/xstate-notes.md §2: ~95 ms at 10k records). A file per
 * task costs two fsyncs regardless of how many tasks exist.
 *
 * One process owns a folder at a time: the in-memory index and the per-task
 * write chains are only correct for a single writer, so `open()` takes the
 * folder's exclusive OS-level lock (`<dir>/store.lock`, {@link StoreLock})
 * before it reads anything, and a second process is refused.
 */
import { copyFile, mkdir, readdir, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { Low } from 'lowdb';
import type { TaskStatus } from '../../machines/task/types.js';
import { TASK_STATUSES } from '../core/statuses.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { DurableJsonFile, errorCode, errorMessage, fsyncDir, type DurableJsonFileHooks } from './DurableJsonFile.js';
import { BatchJournal, type JournalBatch } from './BatchJournal.js';
import { mayReportDamaged, ownerOfStored } from '../tasks/storedOwner.js';
import { isNonTerminal, selectExpired, selectListed } from './query.js';
import { invalidTaskIdReason, locateTask, SHARD_NAME, type TaskLocation } from './taskFiles.js';
import { TaskDamagedError, TaskExistsError, type QuarantinedRecord, type TaskListQuery, type TaskStore } from './TaskStore.js';
import { StoreInUseError, StoreLock } from './StoreLock.js';
import { ensurePrivateDir, PRIVATE_DIR_MODE, warnOnStderr } from './privateDir.js';

export interface LowdbTaskStoreOptions {
  /** Folder owned by this store (created if missing); records go to `<dir>/tasks/<shard>/<id>.json`. */
  dir: string;
  /**
   * Called for each record file that cannot be read or is not a task record
   * (it is skipped, never fatal). Default: one line on stderr.
   */
  onCorrupt?: (path: string, error: Error) => void;
  /** Called after each fsync of a journal batch (file, then folder): lets tests observe the syncs a create or put waits for. */
  hooks?: DurableJsonFileHooks;
  /**
   * Take the store's exclusive lock in `open()` (default true): one process
   * owns a store (issue 13 item 2). `false` only for read-only views of a
   * store another process may be serving (`taskvisor tasks list|show`): such a
   * store must not be written.
   */
  lock?: boolean;
  /** Called when an existing store folder is open to other users (issue 12.5). Default: one line on stderr. */
  onWarning?: (message: string) => void;
}

/** What the index keeps per task: enough to answer list/listNonTerminal/listExpired and version checks without disk reads. */
interface IndexEntry {
  taskId: string;
  status: TaskStatus;
  owner: string;
  createdAt: number;
  ttlMs: number | null;
  version: number;
}

type State = 'new' | 'opening' | 'open' | 'closed';

/** Parallel file operations during open and listing; bounded so 10k records do not hit EMFILE. */
const IO_CONCURRENCY = 32;

const STATUSES: ReadonlySet<string> = new Set<TaskStatus>(TASK_STATUSES);

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

/**
 * {@link TaskStore} over a folder of per-task lowdb JSON documents.
 *
 * - `open()` scans the folder once into a small index (status, owner,
 *   createdAt, ttlMs, version per task), removes temp files left by a crash
 *   and skips (and reports) corrupt files.
 * - Writes for one task run one after another (a promise chain per id), and
 *   the version check is made inside that chain, so two puts never interleave
 *   and a lower version never overwrites a higher one.
 * - `get` always reads the file, the source of truth.
 */
export class LowdbTaskStore implements TaskStore {
  /** Absolute path of the folder this store owns. */
  readonly dir: string;
  readonly #tasksDir: string;
  readonly #onCorrupt: (path: string, error: Error) => void;
  readonly #locking: boolean;
  #lock: StoreLock | undefined;
  readonly #index = new Map<string, IndexEntry>();
  /** Tail of each task's write chain; never rejects. Removed once idle. */
  readonly #chains = new Map<string, Promise<void>>();
  /** Shard folders known to exist durably (or being created). */
  readonly #shards = new Map<string, Promise<void>>();
  #state: State = 'new';
  readonly #onWarning: (message: string) => void;
  readonly #quarantineDir: string;
  /** Ids set aside (issue 13 item 3) with why and whose (when known), loaded by open() from `<dir>/quarantine/`. */
  readonly #quarantined = new Map<string, { reason: string; owner: string | undefined }>();
  readonly #journal: BatchJournal;
  /** Record files open() could not read and did not set aside: their ids stay taken. */
  readonly #unreadable = new Set<string>();
  /** Each journaled task's latest record not yet in its task file: what `get` and lists read first. */
  readonly #journaled = new Map<string, Journaled>();
  /** The last batch holding each task, until that batch file is removed. */
  readonly #lastBatch = new Map<string, number>();
  /** Tail of the checkpoint queue (one checkpoint at a time); `undefined` when none is queued. */
  #checkpointRun: Promise<void> | undefined;
  #checkpointTimer: NodeJS.Timeout | undefined;

  constructor(options: LowdbTaskStoreOptions) {
    this.dir = resolve(options.dir);
    this.#tasksDir = join(this.dir, 'tasks');
    this.#quarantineDir = join(this.dir, 'quarantine');
    this.#onCorrupt = options.onCorrupt ?? defaultOnCorrupt;
    this.#locking = options.lock ?? true;
    this.#onWarning = options.onWarning ?? warnOnStderr;
    this.#journal = new BatchJournal(join(this.dir, 'journal'), options.hooks);
  }

  /** Creates the folders if needed and loads the index. Corrupt record files are reported and skipped. */
  /**
   * Whether this store holds its exclusive lock (readiness reports it, issue 16.1);
   * `undefined` when locking is off.
   */
  get locked(): boolean | undefined {
    return this.#locking ? this.#lock !== undefined : undefined;
  }

  async open(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`lowdb task store at ${this.dir}: open() called on a store that is ${this.#state}`);
    this.#state = 'opening';
    try {
      // 0700: the file names are task ids (issue 12.5).
      const firstCreated = await ensurePrivateDir(this.#tasksDir, this.#onWarning, [this.dir, this.#tasksDir]);
      if (firstCreated !== undefined) {
        // I-1: folders we just created must be durable before any record in them is
        // acknowledged, so fsync every parent from `<dir>` up to the one that already existed.
        const existing = dirname(firstCreated);
        for (let folder = this.dir; ; folder = dirname(folder)) {
          await fsyncDir(folder);
          if (folder === existing || folder === dirname(folder)) break;
        }
      }
      // One owner (issue 13 item 2): locked before any record is read or written.
      if (this.#locking) this.#lock = await StoreLock.acquire(join(this.dir, 'store.lock'), `lowdb ${this.dir}`);
      await this.#scan();
      await this.#replayJournal();
      // close() may have been called while scanning.
      if (this.#state === 'opening') this.#state = 'open';
    } catch (error) {
      this.#state = 'closed';
      await this.#lock?.release();
      if (error instanceof StoreInUseError) throw error;
      throw new Error(`cannot open lowdb task store at ${this.dir}: ${errorMessage(error)}`, { cause: error });
    }
  }

  /** Waits for every accepted write to finish; later calls reject with "store is closed". */
  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    const wasOpen = this.#state === 'open';
    this.#state = 'closed';
    while (this.#chains.size > 0) await Promise.all(this.#chains.values());
    await this.#journal.idle();
    clearTimeout(this.#checkpointTimer);
    this.#checkpointTimer = undefined;
    // A clean stop leaves one file per task and no journal; if this fails the batches stay and the next open replays them.
    if (wasOpen && this.#locking && this.#journal.committedThrough > this.#journal.droppedThrough)
      await this.#checkpoint().catch((error: unknown) =>
        this.#onWarning(`lowdb task store at ${this.dir}: journal left for the next open: ${errorMessage(error)}`),
      );
    await this.#checkpointRun?.catch(() => undefined);
    await Promise.allSettled(this.#shards.values());
    this.#index.clear();
    await this.#lock?.release();
  }

  /**
   * Durably stores a new task (in the next journal batch). Rejects with {@link TaskExistsError} when
   * the id is stored (or journaled), and with an Error for ids that
   * cannot be stored (empty, longer than 200 chars, malformed UTF-16).
   */
  async create(record: TaskRecord): Promise<void> {
    this.#assertOpen();
    const reason = invalidTaskIdReason(record.taskId);
    const location = reason === undefined ? locateTask(this.#tasksDir, record.taskId) : undefined;
    if (location === undefined) throw new Error(`cannot create task in ${this.#tasksDir}: ${reason ?? 'invalid task id'}`);
    // Serialized now: the write may wait behind others and the caller may mutate its object meanwhile.
    const text = JSON.stringify(record);
    const entry = indexEntryOf(record);
    await this.#serialize(record.taskId, async () => {
      // From memory only (no lstat on the request path): with the lock, every file is indexed, quarantined or known unreadable.
      if (this.#index.has(entry.taskId) || this.#quarantined.has(entry.taskId) || this.#unreadable.has(location.file))
        throw new TaskExistsError(entry.taskId);
      await this.#journalWrite(entry, text);
    });
  }

  /** Durably replaces the record when its version is higher than the stored one; ignores stale versions and unknown ids. */
  async put(record: TaskRecord): Promise<void> {
    this.#assertOpen();
    if (locateTask(this.#tasksDir, record.taskId) === undefined) return;
    const text = JSON.stringify(record);
    const entry = indexEntryOf(record);
    await this.#serialize(entry.taskId, async () => {
      // Checked inside the chain: `current` is the latest version written by any earlier put.
      const current = this.#index.get(entry.taskId);
      if (current === undefined || entry.version <= current.version) return;
      await this.#journalWrite(entry, text);
    });
  }

  /**
   * Durably replaces many records in one journal batch (one member of it: all
   * of them land or none). Waits for earlier writes of each of the tasks,
   * then keeps the records newer than the stored ones.
   */
  async putMany(records: readonly TaskRecord[]): Promise<void> {
    this.#assertOpen();
    // Serialized now, like put: the caller may mutate its objects while the batch waits.
    const writes = records
      .filter((record) => locateTask(this.#tasksDir, record.taskId) !== undefined)
      .map((record) => ({ entry: indexEntryOf(record), text: JSON.stringify(record) }));
    if (writes.length === 0) return;
    await this.#serializeAll(
      writes.map((write) => write.entry.taskId),
      async () => {
        // Of one task's records the highest version, and only when it is newer than what is stored (latest wins).
        const newest = new Map<string, { entry: IndexEntry; text: string }>();
        for (const write of writes) {
          const current = newest.get(write.entry.taskId)?.entry ?? this.#index.get(write.entry.taskId);
          if (current !== undefined && write.entry.version > current.version) newest.set(write.entry.taskId, write);
        }
        if (newest.size > 0) await this.#journalWriteAll([...newest.values()]);
      },
    );
  }

  /**
   * Writes every journaled record to its task file now and removes the batch
   * files (a clean `close()` does it too). For tools and tests that look at
   * the files; the store's own reads never need it.
   */
  async checkpoint(): Promise<void> {
    this.#assertOpen();
    if (this.#locking) await this.#checkpoint();
  }

  /** Commits one record in the next journal batch (I-1: resolves once that batch is durable); the index and reads see it from then on. */
  #journalWrite(entry: IndexEntry, text: string): Promise<void> {
    return this.#journalWriteAll([{ entry, text }]);
  }

  /** Commits records as one member of the next journal batch: all of them durable and visible together, or none. */
  async #journalWriteAll(writes: readonly { entry: IndexEntry; text: string }[]): Promise<void> {
    // Backpressure: the journal (and the memory holding its records) stays bounded when the disk cannot keep up.
    while (this.#journaled.size >= JOURNAL_LIMIT) await this.#checkpoint();
    // JSON text holds no raw newline: each record stays one line of the batch file.
    const lines = writes.length === 1 ? writes[0]!.text : writes.map((write) => write.text).join('\n');
    await this.#journal.append(lines, (seq) => {
      for (const { entry, text } of writes) {
        this.#index.set(entry.taskId, entry);
        this.#journaled.set(entry.taskId, { text });
        this.#lastBatch.set(entry.taskId, seq);
      }
    });
    this.#scheduleCheckpoint();
  }

  /** Until a task's batches are removed, a crash would replay them: a delete or quarantine waits for a checkpoint covering the task first. */
  async #unjournal(taskId: string): Promise<void> {
    while ((this.#lastBatch.get(taskId) ?? 0) > this.#journal.droppedThrough) await this.#checkpoint();
  }

  #scheduleCheckpoint(): void {
    if (!this.#locking || this.#state === 'closed') return;
    if (this.#journaled.size >= CHECKPOINT_SOON) {
      if (this.#checkpointRun === undefined) this.#backgroundCheckpoint();
      return;
    }
    if (this.#checkpointTimer !== undefined) return;
    this.#checkpointTimer = setTimeout(() => {
      this.#checkpointTimer = undefined;
      this.#backgroundCheckpoint();
    }, CHECKPOINT_DELAY_MS);
    this.#checkpointTimer.unref();
  }

  #backgroundCheckpoint(): void {
    this.#checkpoint().then(
      () => {
        if (this.#journal.committedThrough > this.#journal.droppedThrough) this.#scheduleCheckpoint();
      },
      (error: unknown) => {
        // Nothing is lost: the batches stay on disk and the records in memory; tried again after the delay.
        this.#onWarning(`lowdb task store at ${this.dir}: checkpoint failed, retrying: ${errorMessage(error)}`);
        this.#scheduleCheckpoint();
      },
    );
  }

  /** Queues a checkpoint after the one running (whose snapshot of the journal may predate the caller's writes). */
  #checkpoint(): Promise<void> {
    const run = (this.#checkpointRun ?? Promise.resolve()).catch(() => undefined).then(() => this.#writeCheckpoint());
    this.#checkpointRun = run;
    void run
      .catch(() => undefined)
      .then(() => {
        if (this.#checkpointRun === run) this.#checkpointRun = undefined;
      });
    return run;
  }

  /** Every journaled record into its task file (durably), then the batches committed before it started are removed. */
  async #writeCheckpoint(): Promise<void> {
    const through = this.#journal.committedThrough;
    if (through <= this.#journal.droppedThrough && this.#journaled.size === 0) return;
    const written: Array<[string, Journaled]> = [];
    const folders = new Set<string>();
    await forEachSettled([...this.#journaled], CHECKPOINT_CONCURRENCY, async ([taskId, journaled]) => {
      const location = locateTask(this.#tasksDir, taskId);
      if (location === undefined) return;
      await this.#ensureShard(location);
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

  /**
   * Loads the batches a crash (or a running owner, for a read-only view) left
   * in the journal: each record newer than its task file becomes the task's
   * journaled record; the owner checkpoints them soon after.
   */
  async #replayJournal(): Promise<void> {
    const batches = await this.#journal.load(this.#locking, (path, error) => this.#onCorrupt(path, error));
    for (const batch of batches) await this.#replayBatch(batch);
    if (this.#locking && batches.length > 0) this.#backgroundCheckpoint();
  }

  async #replayBatch(batch: JournalBatch): Promise<void> {
    let damaged = false;
    for (const line of batch.lines) {
      let entry: IndexEntry;
      try {
        entry = toIndexEntry(JSON.parse(line), undefined, this.#tasksDir);
      } catch (error) {
        // A batch file is complete by construction (renamed after its sync): bad bytes are damage, reported and kept.
        this.#onCorrupt(batch.path, toError(error));
        damaged = true;
        continue;
      }
      if (this.#quarantined.has(entry.taskId)) continue;
      const current = this.#index.get(entry.taskId);
      if (current !== undefined && current.version >= entry.version) continue;
      this.#index.set(entry.taskId, entry);
      this.#journaled.set(entry.taskId, { text: line });
      this.#lastBatch.set(entry.taskId, batch.seq);
    }
    if (damaged && this.#locking) {
      await mkdir(this.#quarantineDir, { recursive: true, mode: PRIVATE_DIR_MODE });
      await copyFile(batch.path, join(this.#quarantineDir, `journal-${basename(batch.path)}`));
      await fsyncDir(this.#quarantineDir);
    }
  }

  /** Reads the task's file; `undefined` when there is none (or the id cannot be stored). */
  async get(taskId: string, owner?: string): Promise<TaskRecord | undefined> {
    this.#assertOpen();
    const quarantined = this.#quarantined.get(taskId);
    if (quarantined !== undefined) {
      // Damaged only to its owner; any other principal gets what an unknown id gets (I-7).
      if (mayReportDamaged(quarantined.owner, owner)) throw new TaskDamagedError(taskId, quarantined.reason);
      return undefined;
    }
    // Issue 12.6: the index knows every record's owner; another owner's file is never read or parsed.
    if (owner !== undefined) {
      const entry = this.#index.get(taskId);
      if (entry === undefined || entry.owner !== owner) return undefined;
    }
    try {
      return await this.#readTask(taskId);
    } catch (error) {
      // An I/O error (EIO, EACCES) says nothing about the bytes: passed on, nothing moved.
      if (errorCode(error) !== undefined) throw error;
      // Unreadable: reported once and set aside, then answered from the quarantine (issue 13 item 3).
      const location = locateTask(this.#tasksDir, taskId);
      this.#onCorrupt(location?.file ?? taskId, toError(error));
      if (this.#locking && location) await this.quarantine(taskId, errorMessage(error)).catch(() => false);
      throw new TaskDamagedError(taskId, errorMessage(error));
    }
  }

  async #readTask(taskId: string): Promise<TaskRecord | undefined> {
    const journaled = this.#journaled.get(taskId);
    if (journaled !== undefined) return JSON.parse(journaled.text) as TaskRecord;
    const location = locateTask(this.#tasksDir, taskId);
    if (location === undefined) return undefined;
    const record = await this.#read(location.file);
    if (record === undefined) return undefined;
    if (record.taskId !== taskId)
      throw new Error(`task file ${location.file} holds task ${JSON.stringify(record.taskId)}, expected ${JSON.stringify(taskId)}`);
    return record;
  }

  /** The file is moved to `<dir>/quarantine/` with a `.reason.json` beside it: kept byte for byte, never served again. */
  async quarantine(taskId: string, reason: string): Promise<boolean> {
    this.#assertOpen();
    const location = locateTask(this.#tasksDir, taskId);
    if (location === undefined) return false;
    return this.#serialize(taskId, async () => {
      await this.#unjournal(taskId);
      return this.#setAside(location.file, location.shard, taskId, reason);
    });
  }

  async listQuarantined(): Promise<QuarantinedRecord[]> {
    this.#assertOpen();
    const out: QuarantinedRecord[] = [];
    for (const name of await readdirIfAny(this.#quarantineDir)) {
      if (!name.endsWith('.reason.json')) continue;
      const note = JSON.parse(await readFile(join(this.#quarantineDir, name), 'utf8')) as Omit<QuarantinedRecord, 'stored'>;
      const stored = await readFile(join(this.#quarantineDir, name.slice(0, -'.reason.json'.length)), 'utf8').catch(() => '');
      const owner = this.#quarantined.get(note.taskId)?.owner;
      out.push({
        taskId: note.taskId,
        reason: note.reason,
        quarantinedAt: note.quarantinedAt,
        stored,
        ...(owner === undefined ? {} : { owner }),
      });
    }
    return out.sort((a, b) => a.quarantinedAt - b.quarantinedAt || (a.taskId < b.taskId ? -1 : 1));
  }

  /** Renames a record file into the quarantine folder (durably) and forgets it; `false` when the file is gone. */
  async #setAside(file: string, shard: string, taskId: string, reason: string): Promise<boolean> {
    await mkdir(this.#quarantineDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    const target = join(this.#quarantineDir, `${shard}-${basename(file)}`);
    // The index knows the owner of a record it loaded; a file that never loaded is read for what its bytes still tell.
    const owner = this.#index.get(taskId)?.owner ?? ownerOfStored(await readFile(file, 'utf8').catch(() => ''), taskId);
    const note: Omit<QuarantinedRecord, 'stored'> = {
      taskId,
      reason,
      quarantinedAt: Date.now(),
      ...(owner === undefined ? {} : { owner }),
    };
    await writeFile(`${target}.reason.json`, `${JSON.stringify(note)}\n`, { mode: 0o600 });
    try {
      await rename(file, target);
    } catch (error) {
      await rm(`${target}.reason.json`, { force: true });
      if (errorCode(error) === 'ENOENT') return false;
      throw error;
    }
    await fsyncDir(this.#quarantineDir);
    await fsyncDir(dirname(file));
    this.#index.delete(taskId);
    this.#quarantined.set(taskId, { reason, owner });
    return true;
  }

  /** Unlinks the task's file and fsyncs its folder; `true` when it existed. */
  async delete(taskId: string): Promise<boolean> {
    this.#assertOpen();
    const location = locateTask(this.#tasksDir, taskId);
    if (location === undefined) return false;
    return this.#serialize(taskId, async () => {
      await this.#unjournal(taskId);
      let removed = true;
      try {
        await unlink(location.file);
      } catch (error) {
        if (errorCode(error) !== 'ENOENT') throw new Error(`cannot delete ${location.file}: ${errorMessage(error)}`, { cause: error });
        removed = false;
      }
      this.#index.delete(taskId);
      // I-1: a purge that was acknowledged must not reappear after a crash.
      if (removed) await fsyncDir(location.shardDir);
      return removed;
    });
  }

  /** Full records of every `working` / `input_required` task. */
  async listNonTerminal(): Promise<TaskRecord[]> {
    this.#assertOpen();
    const ids: string[] = [];
    for (const entry of this.#index.values()) if (isNonTerminal(entry.status)) ids.push(entry.taskId);
    return this.#readMany(ids);
  }

  /** Unfinished records page by page: ids from the index, each page's files read as it is consumed. */
  async *scanNonTerminal(pageSize: number): AsyncIterable<TaskRecord[]> {
    this.#assertOpen();
    const size = Math.max(1, Math.floor(pageSize));
    const ids: string[] = [];
    for (const entry of this.#index.values()) if (isNonTerminal(entry.status)) ids.push(entry.taskId);
    for (let start = 0; start < ids.length; start += size) {
      this.#assertOpen();
      // A task that finished since the index was read is not unfinished any more.
      yield (await this.#readMany(ids.slice(start, start + size))).filter((record) => isNonTerminal(record.status));
    }
  }

  /** Ids whose `createdAt + ttlMs <= now`, most overdue first, at most `limit`; answered from the index. */
  // eslint-disable-next-line @typescript-eslint/require-await -- TaskStore port: a closed store's throw must reject, not throw synchronously
  async listExpired(now: number, limit: number): Promise<string[]> {
    this.#assertOpen();
    return selectExpired(this.#index.values(), now, limit);
  }

  /** Full records matching the query, newest first. */
  async list(query: TaskListQuery = {}): Promise<TaskRecord[]> {
    this.#assertOpen();
    return this.#readMany(selectListed(this.#index.values(), query).map((entry) => entry.taskId));
  }

  #assertOpen(): void {
    if (this.#state === 'open') return;
    if (this.#state === 'closed') throw new Error(`store is closed (lowdb task store at ${this.dir})`);
    throw new Error(`store is not open: call open() first (lowdb task store at ${this.dir})`);
  }

  /** Runs `fn` after every earlier operation on the same task has settled. */
  #serialize<R>(taskId: string, fn: () => Promise<R>): Promise<R> {
    return this.#serializeAll([taskId], fn);
  }

  /** Runs `fn` after every earlier operation on any of these tasks has settled; later ones on them wait for it. */
  #serializeAll<R>(taskIds: readonly string[], fn: () => Promise<R>): Promise<R> {
    const ids = taskIds.length === 1 ? taskIds : [...new Set(taskIds)];
    const earlier: Promise<void>[] = [];
    for (const taskId of ids) {
      const chain = this.#chains.get(taskId);
      if (chain !== undefined) earlier.push(chain);
    }
    const previous: Promise<unknown> = earlier.length === 0 ? Promise.resolve() : earlier.length === 1 ? earlier[0]! : Promise.all(earlier);
    const result = previous.then(fn);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    for (const taskId of ids) this.#chains.set(taskId, tail);
    void tail.then(() => {
      for (const taskId of ids) if (this.#chains.get(taskId) === tail) this.#chains.delete(taskId);
    });
    return result;
  }

  /** Creates a shard folder once and fsyncs its parent, so the folder entry is durable before a file in it is acknowledged (I-1). */
  #ensureShard(location: TaskLocation): Promise<void> {
    let ready = this.#shards.get(location.shard);
    if (ready === undefined) {
      ready = (async () => {
        await mkdir(location.shardDir, { recursive: true, mode: PRIVATE_DIR_MODE });
        await fsyncDir(this.#tasksDir);
      })();
      this.#shards.set(location.shard, ready);
      // A failed mkdir/fsync is retried by the next create instead of being cached.
      ready.catch(() => this.#shards.delete(location.shard));
    }
    return ready;
  }

  async #read(file: string): Promise<TaskRecord | undefined> {
    const db = new Low<TaskRecord | null>(new DurableJsonFile<TaskRecord | null>(file), null);
    await db.read();
    return db.data ?? undefined;
  }

  /** Reads records in order, skipping ids deleted meanwhile and reporting unreadable files. */
  async #readMany(ids: readonly string[]): Promise<TaskRecord[]> {
    const records = await mapLimit(ids, IO_CONCURRENCY, async (taskId) => {
      try {
        return await this.#readTask(taskId);
      } catch (error) {
        const location = locateTask(this.#tasksDir, taskId);
        this.#onCorrupt(location?.file ?? taskId, toError(error));
        return undefined;
      }
    });
    return records.filter((record): record is TaskRecord => record !== undefined);
  }

  /** Builds the index from disk, deleting crash leftovers and skipping corrupt files. */
  async #scan(): Promise<void> {
    const files: string[] = [];
    for (const shard of await readdir(this.#tasksDir, { withFileTypes: true })) {
      if (!shard.isDirectory() || !SHARD_NAME.test(shard.name)) continue;
      const shardDir = join(this.#tasksDir, shard.name);
      this.#shards.set(shard.name, Promise.resolve());
      for (const name of await readdir(shardDir)) {
        const path = join(shardDir, name);
        // A temp file is a write that never got renamed, i.e. was never acknowledged: safe to drop.
        // Without the lock it may be a live writer's: left alone.
        if (name.endsWith('.tmp')) {
          if (this.#locking) await rm(path, { force: true });
        } else if (name.endsWith('.json')) files.push(path);
      }
    }
    await mapLimit(files, IO_CONCURRENCY, async (path) => {
      try {
        const entry = toIndexEntry(await this.#read(path), path, this.#tasksDir);
        this.#index.set(entry.taskId, entry);
      } catch (error) {
        // Reported once, then set aside (kept, never deleted) when this store owns the folder (issue 13 item 3).
        this.#onCorrupt(path, toError(error));
        if (this.#locking && errorCode(error) === undefined)
          await this.#setAside(path, basename(dirname(path)), taskIdOfFile(path), errorMessage(error));
        else this.#unreadable.add(path);
      }
    });
    for (const name of await readdirIfAny(this.#quarantineDir)) {
      if (!name.endsWith('.reason.json')) continue;
      try {
        const note = JSON.parse(await readFile(join(this.#quarantineDir, name), 'utf8')) as {
          taskId?: unknown;
          reason?: unknown;
          owner?: unknown;
        };
        if (typeof note.taskId !== 'string') continue;
        // A note written before owners were kept: the owner is read from the record's bytes, kept beside it.
        const owner =
          typeof note.owner === 'string'
            ? note.owner
            : ownerOfStored(
                await readFile(join(this.#quarantineDir, name.slice(0, -'.reason.json'.length)), 'utf8').catch(() => ''),
                note.taskId,
              );
        this.#quarantined.set(note.taskId, { reason: String(note.reason), owner });
      } catch {
        // A damaged note: the file it describes stays in quarantine all the same.
      }
    }
  }
}

/** The task id a record file's name encodes (a hashed name of a very long id stands for itself). */
function taskIdOfFile(path: string): string {
  const name = basename(path, '.json');
  try {
    return name.startsWith('~') ? name : decodeURIComponent(name);
  } catch {
    return name;
  }
}

async function readdirIfAny(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
}

function indexEntryOf(record: TaskRecord): IndexEntry {
  const { taskId, status, owner, createdAt, ttlMs, version } = record;
  return { taskId, status, owner, createdAt, ttlMs, version };
}

/**
 * Validates a loaded record just enough for the index; throws an error naming
 * the file otherwise. `path`: the file it came from, which must be the one its
 * id maps to; `undefined` for a journal line (any storable id).
 */
function toIndexEntry(value: unknown, path: string | undefined, tasksDir: string): IndexEntry {
  const fail = (what: string): never => {
    throw new Error(`${path ?? 'journal line'} is not a task record: ${what}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('not a JSON object');
  const record = value as Partial<Record<keyof TaskRecord, unknown>>;
  const { taskId, status, owner, createdAt, ttlMs, version } = record;
  if (typeof taskId !== 'string') return fail('taskId is not a string');
  if (typeof status !== 'string' || !STATUSES.has(status)) return fail(`unknown status ${JSON.stringify(status)}`);
  if (typeof owner !== 'string') return fail('owner is not a string');
  if (typeof createdAt !== 'number' || !Number.isFinite(createdAt)) return fail('createdAt is not a number');
  if (ttlMs !== null && (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs))) return fail('ttlMs is neither a number nor null');
  if (typeof version !== 'number' || !Number.isFinite(version)) return fail('version is not a number');
  // A file under the wrong name (copied or renamed by hand) would be unreachable by get(): refuse it.
  const expected = locateTask(tasksDir, taskId)?.file;
  if (path === undefined ? expected === undefined : expected !== path)
    return fail(`it holds task ${JSON.stringify(taskId)}, whose file would be ${expected ?? '(none: invalid id)'}`);
  return { taskId, status: status as TaskStatus, owner, createdAt, ttlMs, version };
}

/** `fn` over `items` with at most `limit` calls in flight; results keep the input order. */
async function mapLimit<I, O>(items: readonly I[], limit: number, fn: (item: I) => Promise<O>): Promise<O[]> {
  const out = new Array<O>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as I);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * `fn` over `items` with at most `limit` calls in flight; rejects with the
 * first failure only after every call started has settled (a checkpoint must
 * not leave a write running behind the next one) and starts no new call after it.
 */
async function forEachSettled<I>(items: readonly I[], limit: number, fn: (item: I) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < items.length && failure === undefined) {
      const item = items[next++] as I;
      try {
        await fn(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure.error;
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function defaultOnCorrupt(path: string, error: Error): void {
  console.error(`taskvisor: skipping unreadable task record ${path}: ${error.message}`);
}
