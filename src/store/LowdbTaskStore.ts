/**
 * File-backed {@link TaskStore}: one lowdb document (one small JSON file) per
 * task, `<dir>/tasks/<shard>/<id>.json` (`taskFiles.ts`), so every
 * acknowledged create, put and delete survives `kill -9` and power loss
 * (T-07, I-1). Creates and puts are group-committed through a journal and
 * reach their task files at the next checkpoint (`lowdb/JournaledWrites.ts`);
 * damaged files are set aside in `<dir>/quarantine/` (`lowdb/QuarantineFolder.ts`).
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
import { mkdir, readdir, rm, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { errorCode, errorMessage, fsyncDir, type DurableJsonFileHooks } from './DurableJsonFile.js';
import { KitTaskStore, type ListSelection, type SetAsideNote } from './kit/KitTaskStore.js';
import { checkStoredRecord, type StoredRecord } from './kit/storedRecord.js';
import { IO_CONCURRENCY, indexEntryOf, mapLimit, readTextIfAny, taskIdOfFile, type IndexEntry } from './lowdb/files.js';
import { JournaledWrites, type RecordWrite } from './lowdb/JournaledWrites.js';
import { QuarantineFolder } from './lowdb/QuarantineFolder.js';
import { TaskChains } from './lowdb/TaskChains.js';
import { isNonTerminal, selectExpired, selectListed } from './query.js';
import { locateTask, SHARD_NAME, type TaskLocation } from './taskFiles.js';
import { TaskExistsError, type QuarantinedRecord } from './TaskStore.js';
import { StoreInUseError, StoreLock } from './StoreLock.js';
import { ensurePrivateDir, PRIVATE_DIR_MODE, warnOnStderr } from './privateDir.js';

export interface LowdbTaskStoreOptions {
  /** Folder owned by this store (created if missing); records go to `<dir>/tasks/<shard>/<id>.json`. */
  dir: string;
  /**
   * Called once for each stored record found damaged, with its task id (set
   * aside when this store holds the lock; skipped either way, never fatal),
   * and for a damaged journal batch, with its path. Default: one line on stderr.
   */
  onCorrupt?: (taskId: string, error: Error) => void;
  /** Called after each fsync of a journal batch (file, then folder): lets tests observe the syncs a create or put waits for. */
  hooks?: DurableJsonFileHooks;
  /**
   * Take the store's exclusive lock in `open()` (default true): one process
   * owns a store. `false` only for read-only views of a
   * store another process may be serving (`taskvisor tasks list|show`): such a
   * store must not be written.
   */
  lock?: boolean;
  /** Called when an existing store folder is open to other users. Default: one line on stderr. */
  onWarning?: (message: string) => void;
}

/**
 * {@link TaskStore} over a folder of per-task lowdb JSON documents.
 *
 * - `open()` scans the folder once into a small index (status, owner,
 *   createdAt, ttlMs, version per task), removes temp files left by a crash
 *   and sets damaged files aside.
 * - Writes for one task run one after another (`lowdb/TaskChains.ts`), and
 *   the version check is made inside that chain, so two puts never interleave
 *   and a lower version never overwrites a higher one.
 * - `get` reads the journaled record, else the file: the source of truth.
 */
export class LowdbTaskStore extends KitTaskStore {
  /** Absolute path of the folder this store owns. */
  readonly dir: string;
  readonly #tasksDir: string;
  readonly #locking: boolean;
  readonly #onWarning: (message: string) => void;
  #lock: StoreLock | undefined;
  readonly #index = new Map<string, IndexEntry>();
  readonly #chains = new TaskChains();
  /** Shard folders known to exist durably (or being created). */
  readonly #shards = new Map<string, Promise<void>>();
  readonly #quarantine: QuarantineFolder;
  readonly #journal: JournaledWrites;
  /** Record files open() could not read and did not set aside: their ids stay taken. */
  readonly #unreadable = new Set<string>();

  constructor(options: LowdbTaskStoreOptions) {
    super(options.onCorrupt);
    this.dir = resolve(options.dir);
    this.#tasksDir = join(this.dir, 'tasks');
    this.#locking = options.lock ?? true;
    this.#onWarning = options.onWarning ?? warnOnStderr;
    this.#quarantine = new QuarantineFolder(join(this.dir, 'quarantine'));
    this.#journal = new JournaledWrites({
      dir: this.dir,
      tasksDir: this.#tasksDir,
      owner: this.#locking,
      index: this.#index,
      hooks: options.hooks,
      isQuarantined: (taskId) => this.#quarantine.has(taskId),
      ensureShard: (location) => this.#ensureShard(location),
      damagedBatch: async (path, error) => {
        this.reportCorrupt(path, error);
        if (this.#locking) await this.#quarantine.keepBatch(path).catch(() => undefined);
      },
      warn: this.#onWarning,
      closed: () => this.state === 'closed',
    });
  }

  /** Whether this store holds its exclusive lock (readiness reports it); `undefined` when locking is off. */
  get locked(): boolean | undefined {
    return this.#locking ? this.#lock !== undefined : undefined;
  }

  protected get storeName(): string {
    return `lowdb task store at ${this.dir}`;
  }

  /** Only the lock holder writes: a read-only view never moves a damaged file. */
  protected get ownsData(): boolean {
    return this.#locking;
  }

  /** Creates the folders if needed, takes the lock, loads the index and replays the journal. */
  protected async openStorage(): Promise<void> {
    try {
      // 0700: the file names are task ids.
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
      // One owner: locked before any record is read or written.
      if (this.#locking) this.#lock = await StoreLock.acquire(join(this.dir, 'store.lock'), `lowdb ${this.dir}`);
      await this.#quarantine.load();
      await this.#scan();
      await this.#journal.replay();
    } catch (error) {
      await this.#lock?.release();
      this.#lock = undefined;
      if (error instanceof StoreInUseError) throw error;
      throw new Error(`cannot open lowdb task store at ${this.dir}: ${errorMessage(error)}`, { cause: error });
    }
  }

  /** Waits for every accepted write to finish; a clean stop checkpoints the journal. */
  protected async closeStorage(): Promise<void> {
    await this.#chains.idle();
    await this.#journal.close(this.#lock !== undefined);
    await Promise.allSettled(this.#shards.values());
    this.#index.clear();
    await this.#lock?.release();
    this.#lock = undefined;
  }

  /** Rejects with {@link TaskExistsError} when the id is stored, journaled, quarantined or held by a file open() could not read. */
  protected async createStored(record: TaskRecord): Promise<void> {
    const location = locateTask(this.#tasksDir, record.taskId)!;
    // Serialized now: the write may wait behind others and the caller may mutate its object meanwhile.
    const write: RecordWrite = { entry: indexEntryOf(record), text: JSON.stringify(record) };
    await this.#chains.run([record.taskId], async () => {
      // From memory only (no lstat on the request path): with the lock, every file is indexed, quarantined or known unreadable.
      if (this.#index.has(record.taskId) || this.#quarantine.has(record.taskId) || this.#unreadable.has(location.file))
        throw new TaskExistsError(record.taskId);
      await this.#journal.write([write]);
    });
  }

  protected async putStored(record: TaskRecord): Promise<void> {
    const write: RecordWrite = { entry: indexEntryOf(record), text: JSON.stringify(record) };
    await this.#chains.run([record.taskId], async () => {
      // Checked inside the chain: the index holds the latest version written by any earlier put.
      const current = this.#index.get(record.taskId);
      if (current === undefined || write.entry.version <= current.version) return;
      await this.#journal.write([write]);
    });
  }

  /** One member of one journal batch: all of them land or none. Of one task's records the highest version, when newer than the stored one. */
  protected async putManyStored(records: readonly TaskRecord[]): Promise<void> {
    const writes = records.map((record): RecordWrite => ({ entry: indexEntryOf(record), text: JSON.stringify(record) }));
    await this.#chains.run(
      writes.map((write) => write.entry.taskId),
      async () => {
        const newest = new Map<string, RecordWrite>();
        for (const write of writes) {
          const current = newest.get(write.entry.taskId)?.entry ?? this.#index.get(write.entry.taskId);
          if (current !== undefined && write.entry.version > current.version) newest.set(write.entry.taskId, write);
        }
        if (newest.size > 0) await this.#journal.write([...newest.values()]);
      },
    );
  }

  /**
   * Writes every journaled record to its task file now and removes the batch
   * files (a clean `close()` does it too). For tools and tests that look at
   * the files; the store's own reads never need it.
   */
  async checkpoint(): Promise<void> {
    this.assertOpen();
    if (this.#locking) await this.#journal.checkpoint();
  }

  /** The index knows every record's owner: another owner's file is never read. */
  protected async readStored(taskId: string, owner: string | undefined): Promise<StoredRecord | undefined> {
    if (owner !== undefined && this.#index.get(taskId)?.owner !== owner) return undefined;
    const text = this.#journal.textOf(taskId) ?? (await readTextIfAny(locateTask(this.#tasksDir, taskId)!.file));
    return text === undefined ? undefined : { taskId, text };
  }

  protected findSetAside(taskId: string): Promise<SetAsideNote | undefined> {
    return Promise.resolve(this.#quarantine.note(taskId));
  }

  /** The file is moved to `<dir>/quarantine/` with a `.reason.json` beside it: kept byte for byte, never served again. */
  protected quarantineStored(taskId: string, reason: string): Promise<boolean> {
    const location = locateTask(this.#tasksDir, taskId)!;
    return this.#chains.run([taskId], async () => {
      await this.#journal.unjournal(taskId);
      return this.#setAside(location.file, location.shard, taskId, reason);
    });
  }

  protected listSetAside(): Promise<QuarantinedRecord[]> {
    return this.#quarantine.list();
  }

  async #setAside(file: string, shard: string, taskId: string, reason: string): Promise<boolean> {
    // The index knows the owner of a record it loaded; a file that never loaded is read for what its bytes still tell.
    const moved = await this.#quarantine.move(file, shard, taskId, reason, this.#index.get(taskId)?.owner);
    if (moved) this.#index.delete(taskId);
    return moved;
  }

  /** Unlinks the task's file and fsyncs its folder; `true` when it existed. */
  protected deleteStored(taskId: string): Promise<boolean> {
    const location = locateTask(this.#tasksDir, taskId)!;
    return this.#chains.run([taskId], async () => {
      await this.#journal.unjournal(taskId);
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

  protected readNonTerminal(): Promise<StoredRecord[]> {
    return this.#readMany(this.#nonTerminalIds());
  }

  /** Ids from the index when the scan starts, each page's files read as it is consumed. */
  protected async *scanStored(pageSize: number): AsyncIterable<StoredRecord[]> {
    const ids = this.#nonTerminalIds();
    for (let start = 0; start < ids.length; start += pageSize) yield await this.#readMany(ids.slice(start, start + pageSize));
  }

  /** Answered from the index. */
  protected expiredStored(now: number, limit: number): Promise<string[]> {
    return Promise.resolve(selectExpired(this.#index.values(), now, limit));
  }

  protected listStored({ owner, statuses, limit }: ListSelection): Promise<StoredRecord[]> {
    const query = { ...(owner !== undefined ? { owner } : {}), ...(statuses !== undefined ? { status: statuses } : {}), limit };
    return this.#readMany(selectListed(this.#index.values(), query).map((entry) => entry.taskId));
  }

  #nonTerminalIds(): string[] {
    const ids: string[] = [];
    for (const entry of this.#index.values()) if (isNonTerminal(entry.status)) ids.push(entry.taskId);
    return ids;
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

  /** The records as stored, in order, skipping ids deleted meanwhile; a file that cannot be read (EIO) is reported and skipped. */
  async #readMany(ids: readonly string[]): Promise<StoredRecord[]> {
    const stored = await mapLimit(ids, IO_CONCURRENCY, async (taskId) => {
      try {
        return await this.readStored(taskId, undefined);
      } catch (error) {
        this.reportCorrupt(taskId, error instanceof Error ? error : new Error(String(error)));
        return undefined;
      }
    });
    return stored.filter((item): item is StoredRecord => item !== undefined);
  }

  /** Builds the index from disk, deleting crash leftovers and setting damaged files aside. */
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
    await mapLimit(files, IO_CONCURRENCY, (path) => this.#load(path));
  }

  /** Indexes one record file, or sets it aside (by its path: its bytes may name another task) when damaged. */
  async #load(path: string): Promise<void> {
    let text: string | undefined;
    try {
      text = await readTextIfAny(path);
    } catch (error) {
      // An I/O error says nothing about the bytes: reported, nothing moved, the id stays taken.
      this.reportCorrupt(taskIdOfFile(path), error instanceof Error ? error : new Error(String(error)));
      this.#unreadable.add(path);
      return;
    }
    if (text === undefined) return;
    const found = this.#recordIn(path, text);
    if ('record' in found) {
      this.#index.set(found.record.taskId, indexEntryOf(found.record));
      return;
    }
    const { taskId, problem } = found;
    const moved = await this.damaged(taskId, problem, () => this.#setAside(path, basename(dirname(path)), taskId, problem));
    if (!moved) this.#unreadable.add(path);
  }

  /**
   * The record a file holds, or what is wrong with it and the id to report it
   * under. A file under a name that is not its record's own (copied or
   * renamed by hand) would be unreachable by `get`: damaged too.
   */
  #recordIn(path: string, text: string): { record: TaskRecord } | { taskId: string; problem: string } {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { taskId: taskIdOfFile(path), problem: checkProblem(taskIdOfFile(path), text) };
    }
    const taskId = (value as { taskId?: unknown } | null)?.taskId;
    if (typeof taskId !== 'string' || locateTask(this.#tasksDir, taskId)?.file !== path)
      return { taskId: taskIdOfFile(path), problem: typeof taskId === 'string' ? 'the record holds another task id' : 'taskId is missing' };
    const checked = checkStoredRecord({ taskId, value });
    return 'record' in checked ? checked : { taskId, problem: checked.problem };
  }
}

/** Why `text` is not the record of `taskId` (it is known not to be). */
function checkProblem(taskId: string, text: string): string {
  const checked = checkStoredRecord({ taskId, text });
  return 'problem' in checked ? checked.problem : 'not a task record';
}
