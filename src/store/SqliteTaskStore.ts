/**
 * SQLite-backed {@link TaskStore} (better-sqlite3, WAL, `synchronous=FULL`).
 *
 * Durability (T-07, I-1): with `synchronous=FULL` in WAL mode every commit
 * fsyncs the write-ahead log, and a write's promise resolves only after the
 * transaction holding it committed.
 *
 * Group commit (the kit's `GroupCommit`): better-sqlite3 is synchronous, so
 * one commit per write would cost one fsync per caller however many callers
 * wait (≈0.5 ms each, reference/xstate-notes.md §2). Instead every `create`,
 * `put`, `delete` and `quarantine` issued in the same tick is applied in ONE
 * transaction; every caller of that batch is answered after the commit. Within a batch the writes apply in call order and
 * each one succeeds or fails on its own (a duplicate `create` rejects only its
 * caller; a stale `put` is ignored).
 *
 * Reads (`get`, listings) go straight to the database and see only committed
 * data — which includes every write whose promise has resolved.
 *
 * One process uses a file at a time (like the other embedded stores): SQLite's
 * locking keeps a second writer from corrupting the file, but the runtime's
 * recovery assumes it is the only one running the tasks.
 */
import { resolve } from 'node:path';
// Type-only: the native addon is loaded by open(), so using another store never loads (or needs) it.
import type Database from 'better-sqlite3';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { errorMessage } from './DurableJsonFile.js';
import { failed, GroupCommit, succeeded, type WriteOutcome } from './kit/GroupCommit.js';
import { KitTaskStore, type ListSelection, type SetAsideNote } from './kit/KitTaskStore.js';
import type { StoredRecord } from './kit/storedRecord.js';
import { TaskExistsError, type QuarantinedRecord } from './TaskStore.js';
import { StoreInUseError, StoreLock } from './StoreLock.js';
import { warnOnStderr } from './privateDir.js';
import { createFileIfMissing, loadDriver } from './sqlite/databaseFile.js';
import { migrate, SQLITE_SCHEMA_VERSION } from './sqlite/migrations.js';
import { listStatementSql, prepareStatements, rowOf, type RecordRow, type Row, type Statements } from './sqlite/statements.js';

export { SQLITE_MIGRATIONS, SQLITE_SCHEMA_VERSION } from './sqlite/migrations.js';

// better-sqlite3 answers synchronously, and the kit's hooks return promises: `async` turns a throw (a statement
// failing, the store closing) into a rejection, so the reads need not await.
/* eslint-disable @typescript-eslint/require-await -- see above */

/** Default file of the `sqlite` store, relative to the working directory. */
export const DEFAULT_SQLITE_FILE = './.taskvisor/tasks.sqlite';

export interface SqliteTaskStoreOptions {
  /** Database file (created with mode 0600, parent folders too, if missing), or `:memory:` (tests). */
  file: string;
  /** How long a statement waits for a lock held by another connection before failing. Default 5000 ms. */
  busyTimeoutMs?: number;
  /**
   * Called once for each stored record found damaged (set aside when this
   * store holds the lock; skipped by lists either way). Default: one line on stderr.
   */
  onCorrupt?: (taskId: string, error: Error) => void;
  /**
   * Take the store's exclusive lock in `open()` (default true): one process
   * owns a store. `false` only for read-only views of a
   * store another process may be serving (`taskvisor tasks list|show`, WAL readers): such a
   * store must not be written.
   */
  lock?: boolean;
  /** Called when the existing folder of the database is open to other users. Default: one line on stderr. */
  onWarning?: (message: string) => void;
}

const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

/** A queued write: runs inside the batch transaction and says how its caller is answered once it committed. */
type QueuedWrite = (statements: Statements) => WriteOutcome<unknown>;

/**
 * {@link TaskStore} over one SQLite file.
 *
 * - `open()` creates the file (mode 0600) and its folders if needed, switches
 *   to WAL with `synchronous=FULL` and runs the schema migrations; a file that
 *   is not a SQLite database, or whose schema is newer than this code, is
 *   refused with an error naming the file.
 * - Writes are group-committed (see the module comment); {@link commits}
 *   counts the write transactions.
 */
export class SqliteTaskStore extends KitTaskStore {
  /** Absolute path of the database file (or `:memory:`). */
  readonly file: string;
  readonly #busyTimeoutMs: number;
  readonly #locking: boolean;
  readonly #onWarning: (message: string) => void;
  #lock: StoreLock | undefined;
  #db: Database.Database | undefined;
  #statements: Statements | undefined;
  readonly #listStatements = new Map<string, Database.Statement<unknown[], RecordRow>>();
  readonly #writes = new GroupCommit<QueuedWrite, unknown>(
    (batch) => this.#commit(batch),
    (error, count) =>
      new Error(`sqlite task store ${this.file}: cannot commit ${count} write(s): ${errorMessage(error)}`, { cause: error }),
  );

  constructor(options: SqliteTaskStoreOptions) {
    super(options.onCorrupt);
    this.#onWarning = options.onWarning ?? warnOnStderr;
    this.file = options.file === ':memory:' ? ':memory:' : resolve(options.file);
    this.#locking = (options.lock ?? true) && this.file !== ':memory:';
    this.#busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  }

  /** Write transactions committed so far (one per batch of writes). */
  get commits(): number {
    return this.#writes.commits;
  }

  /** Whether this store holds its exclusive lock (readiness reports it); `undefined` when locking is off. */
  get locked(): boolean | undefined {
    return this.#locking ? this.#lock !== undefined : undefined;
  }

  protected get storeName(): string {
    return `sqlite task store ${this.file}`;
  }

  /** Only the lock holder writes: a read-only view (no lock) never moves a damaged record. */
  protected get ownsData(): boolean {
    return this.#locking || this.file === ':memory:';
  }

  /** Creates the file if needed, opens it in WAL mode and brings its schema up to date. */
  protected async openStorage(): Promise<void> {
    let db: Database.Database | undefined;
    try {
      if (this.file !== ':memory:') await createFileIfMissing(this.file, this.#onWarning);
      // One owner: locked before the database is opened (SQLite's own locks are per transaction and let a second
      // process in between them).
      if (this.#locking) this.#lock = await StoreLock.acquire(`${this.file}.lock`, `sqlite ${this.file}`);
      const Driver = await loadDriver();
      db = new Driver(this.file, { fileMustExist: this.file !== ':memory:', timeout: this.#busyTimeoutMs });
      db.pragma(`busy_timeout = ${Math.max(0, Math.floor(this.#busyTimeoutMs))}`);
      const mode = db.pragma('journal_mode = WAL', { simple: true });
      if (this.file !== ':memory:' && mode !== 'wal') throw new Error(`cannot switch to WAL mode (journal_mode is ${String(mode)})`);
      db.pragma('synchronous = FULL');
      migrate(db);
      this.#statements = prepareStatements(db);
      this.#db = db;
    } catch (error) {
      db?.close();
      await this.#lock?.release();
      this.#lock = undefined;
      if (error instanceof StoreInUseError) throw error;
      throw new Error(`cannot open sqlite task store ${this.file}: ${errorMessage(error)}`, { cause: error });
    }
  }

  /** Commits the queued writes, then closes the database. */
  protected async closeStorage(): Promise<void> {
    await this.#writes.idle();
    this.#listStatements.clear();
    this.#statements = undefined;
    const db = this.#db;
    this.#db = undefined;
    db?.close();
    await this.#lock?.release();
    this.#lock = undefined;
  }

  /** Rejects with {@link TaskExistsError} when the id is stored or created earlier in the same batch. */
  protected createStored(record: TaskRecord): Promise<void> {
    // Serialized now: the caller may mutate its object before the batch runs.
    const row = rowOf(record, this.file);
    return this.#write((statements) =>
      statements.insert.run(row).changes === 1 ? succeeded(undefined) : failed(new TaskExistsError(row.task_id)),
    );
  }

  protected putStored(record: TaskRecord): Promise<void> {
    const row = rowOf(record, this.file);
    // `WHERE version < ?` in SQL: compared with whatever an earlier write of this batch left.
    return this.#write((statements) => {
      statements.update.run(row);
      return succeeded(undefined);
    });
  }

  /** All or none (the batch commits or fails whole); every row is built first, so a record SQLite cannot hold fails the call alone. */
  protected putManyStored(records: readonly TaskRecord[]): Promise<void> {
    const rows: Row[] = records.map((record) => rowOf(record, this.file));
    return this.#write((statements) => {
      for (const row of rows) statements.update.run(row);
      return succeeded(undefined);
    });
  }

  /** With an owner the row is matched on it too: another owner's record is never fetched. */
  protected async readStored(taskId: string, owner: string | undefined): Promise<StoredRecord | undefined> {
    const statements = this.#open();
    const text = owner === undefined ? statements.get.get(taskId) : statements.getOwned.get(taskId, owner);
    return text === undefined ? undefined : { taskId, text };
  }

  protected async findSetAside(taskId: string): Promise<SetAsideNote | undefined> {
    return this.#open().quarantined.get(taskId);
  }

  protected deleteStored(taskId: string): Promise<boolean> {
    return this.#write((statements) => succeeded(statements.delete.run(taskId).changes > 0));
  }

  /** Moves a row aside in the next batch: kept as stored in `quarantine`, gone from `tasks`. */
  protected quarantineStored(taskId: string, reason: string): Promise<boolean> {
    return this.#write((statements) => {
      const moved = statements.quarantine.run(reason, Date.now(), taskId).changes > 0;
      if (moved) statements.delete.run(taskId);
      return succeeded(moved);
    });
  }

  protected async listSetAside(): Promise<QuarantinedRecord[]> {
    return this.#open()
      .listQuarantined.all()
      .map((row) => ({
        taskId: row.task_id,
        reason: row.reason,
        quarantinedAt: row.quarantined_at,
        stored: row.record,
        ...(row.owner === null ? {} : { owner: row.owner }),
      }));
  }

  /** Index on `status`. */
  protected async readNonTerminal(): Promise<StoredRecord[]> {
    return this.#open().nonTerminal.all().map(storedOf);
  }

  /**
   * Per status, keyset pages over the `(status, rowid)` index: one indexed
   * range read per page, never a sort or an OFFSET, and nothing read before
   * it is consumed.
   */
  protected async *scanStored(pageSize: number): AsyncIterable<StoredRecord[]> {
    for (const status of ['working', 'input_required']) {
      let after = 0;
      for (;;) {
        const rows = this.#open().nonTerminalPage.all(status, after, pageSize);
        if (rows.length === 0) break;
        after = rows[rows.length - 1]!.rowid;
        yield rows.map(storedOf);
        if (rows.length < pageSize) break;
      }
    }
  }

  /** Index on `expires_at`. */
  protected async expiredStored(now: number, limit: number): Promise<string[]> {
    return this.#open().expired.all(now, limit === Number.POSITIVE_INFINITY ? -1 : limit);
  }

  /** Index on `(owner, created_at)` when an owner is given. */
  protected async listStored({ owner, statuses, limit }: ListSelection): Promise<StoredRecord[]> {
    this.#open();
    const params: unknown[] = [];
    if (owner !== undefined) params.push(owner);
    if (statuses !== undefined) params.push(...statuses);
    params.push(limit === Number.POSITIVE_INFINITY ? -1 : limit);
    return this.#listStatement(owner !== undefined, statuses?.length)
      .all(...params)
      .map(storedOf);
  }

  #listStatement(byOwner: boolean, statusCount: number | undefined): Database.Statement<unknown[], RecordRow> {
    const key = `${byOwner}:${statusCount ?? '-'}`;
    let statement = this.#listStatements.get(key);
    if (statement === undefined) {
      statement = (this.#db as Database.Database).prepare<unknown[], RecordRow>(listStatementSql(byOwner, statusCount));
      this.#listStatements.set(key, statement);
    }
    return statement;
  }

  /** The statements, once open (the kit asserts the lifecycle; this is for the type). */
  #open(): Statements {
    if (this.#statements === undefined) throw new Error(`store is closed (${this.storeName})`);
    return this.#statements;
  }

  #write<R>(write: (statements: Statements) => WriteOutcome<R>): Promise<R> {
    return this.#writes.add(write) as Promise<R>;
  }

  /** Applies a batch in one IMMEDIATE transaction (the write lock up front, so busy_timeout applies instead of a deadlock-prone upgrade). */
  #commit(batch: readonly QueuedWrite[]): WriteOutcome<unknown>[] {
    const db = this.#db;
    const statements = this.#statements;
    if (db === undefined || statements === undefined) throw new Error('the database is not open');
    return db.transaction(() => batch.map((write) => write(statements))).immediate();
  }
}

const storedOf = (row: RecordRow): StoredRecord => ({ taskId: row.task_id, text: row.record });
