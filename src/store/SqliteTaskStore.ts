/**
 * SQLite-backed {@link TaskStore} (better-sqlite3, WAL, `synchronous=FULL`).
 *
 * Durability (T-07, I-1): with `synchronous=FULL` in WAL mode every commit
 * fsyncs the write-ahead log, and a write's promise resolves only after the
 * transaction holding it committed.
 *
 * Group commit: better-sqlite3 is synchronous, so one commit per write would
 * cost one fsync per caller however many callers wait (≈0.5 ms each,
 * reference/xstate-notes.md §2). Instead every `create`, `put` and `delete`
 * issued in the same tick is queued and the whole queue is applied in ONE
 * transaction on the next `setImmediate`; every caller of that batch is
 * answered after the commit. Within a batch the writes apply in call order and
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
import { constants as fsConstants } from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
// Type-only: the native addon is loaded by open(), so using another store never loads (or needs) it.
import type Database from 'better-sqlite3';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { mayReportDamaged, ownerOfStored } from '../tasks/storedOwner.js';
import { errorCode, errorMessage, fsyncDir } from './DurableJsonFile.js';
import { compareNewestFirst, normalizeLimit } from './query.js';
import { invalidTaskIdReason } from './taskFiles.js';
import { TaskDamagedError, TaskExistsError, type QuarantinedRecord, type TaskListQuery, type TaskStore } from './TaskStore.js';
import { StoreInUseError, StoreLock } from './StoreLock.js';
import { ensurePrivateDir, warnOnStderr } from './privateDir.js';
import { loadSqliteDriver } from './sqliteDriver.js';

/** Default file of the `sqlite` store, relative to the working directory. */
export const DEFAULT_SQLITE_FILE = './.taskvisor/tasks.sqlite';

export interface SqliteTaskStoreOptions {
  /** Database file (created with mode 0600, parent folders too, if missing), or `:memory:` (tests). */
  file: string;
  /** How long a statement waits for a lock held by another connection before failing. Default 5000 ms. */
  busyTimeoutMs?: number;
  /**
   * Called for a stored row whose record cannot be parsed while listing (the
   * row is skipped, never fatal; `get` of that id throws instead). Default:
   * one line on stderr.
   */
  onCorrupt?: (taskId: string, error: Error) => void;
  /**
   * Take the store's exclusive lock in `open()` (default true): one process
   * owns a store (issue 13 item 2). `false` only for read-only views of a
   * store another process may be serving (`taskvisor tasks list|show`, WAL readers): such a
   * store must not be written.
   */
  lock?: boolean;
  /** Called when the existing folder of the database is open to other users (issue 12.5). Default: one line on stderr. */
  onWarning?: (message: string) => void;
}

/**
 * Schema migrations, in order: entry `i` brings the schema from version `i`
 * to `i + 1`. Never edit a released migration; append a new one.
 */
export const SQLITE_MIGRATIONS: readonly string[] = [
  // 1: the tasks table and its indexes.
  `
  CREATE TABLE tasks (
    task_id         TEXT PRIMARY KEY NOT NULL,
    owner           TEXT NOT NULL,
    tool            TEXT NOT NULL,
    status          TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    last_updated_at INTEGER NOT NULL,
    ttl_ms          INTEGER,
    -- NULL when ttl_ms is NULL: the task never expires (T-26).
    expires_at      INTEGER GENERATED ALWAYS AS (created_at + ttl_ms) STORED,
    version         INTEGER NOT NULL,
    machine_version INTEGER NOT NULL,
    -- The whole TaskRecord as JSON: the source of truth; the columns above are for queries.
    record          TEXT NOT NULL
  );
  CREATE INDEX tasks_status ON tasks (status);
  CREATE INDEX tasks_expires ON tasks (expires_at, task_id) WHERE expires_at IS NOT NULL;
  CREATE INDEX tasks_owner_created ON tasks (owner, created_at DESC, task_id);
  `,
  // 2: damaged records set aside, kept as stored (issue 13 item 3).
  `
  CREATE TABLE quarantine (
    task_id         TEXT PRIMARY KEY NOT NULL,
    record          TEXT NOT NULL,
    reason          TEXT NOT NULL,
    quarantined_at  INTEGER NOT NULL
  );
  `,
  // 3: a quarantined record keeps its owner, so only that principal learns it was set aside (issue 13 × 12.6, I-7);
  // NULL when it cannot be told. Rows set aside under schema 2 get it from their bytes (see migrate()).
  `
  ALTER TABLE quarantine ADD COLUMN owner TEXT;
  `,
];

/** Fills in what a migration's SQL cannot: run right after the migration to the keyed version, in the same transaction. */
const AFTER_MIGRATION: Readonly<Record<number, (db: Database.Database) => void>> = {
  3: (db) => {
    const rows = db.prepare<[], { task_id: string; record: string }>('SELECT task_id, record FROM quarantine WHERE owner IS NULL').all();
    const set = db.prepare<[string, string]>('UPDATE quarantine SET owner = ? WHERE task_id = ?');
    for (const row of rows) {
      const owner = ownerOfStored(row.record, row.task_id);
      if (owner !== undefined) set.run(owner, row.task_id);
    }
  },
};

/** The schema version this code writes and reads. */
export const SQLITE_SCHEMA_VERSION = SQLITE_MIGRATIONS.length;

const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

type State = 'new' | 'opening' | 'open' | 'closed';

/** Named parameters of the write statements. */
interface Row {
  task_id: string;
  owner: string;
  tool: string;
  status: string;
  created_at: number;
  last_updated_at: number;
  ttl_ms: number | null;
  version: number;
  machine_version: number;
  record: string;
}

/** A queued write: `apply` runs inside the batch transaction and returns how to answer the caller once it committed. */
interface QueuedWrite {
  apply(): () => void;
  fail(error: Error): void;
}

interface Statements {
  insert: Database.Statement<[Row]>;
  update: Database.Statement<[Row]>;
  delete: Database.Statement<[string]>;
  get: Database.Statement<[string], string>;
  getOwned: Database.Statement<[string, string], string>;
  nonTerminal: Database.Statement<[], { task_id: string; record: string }>;
  /** One page of one unfinished status after a rowid (params: status, after, limit): a range of the status index. */
  nonTerminalPage: Database.Statement<[string, number, number], { rowid: number; task_id: string; record: string }>;
  expired: Database.Statement<[number, number], string>;
  /** Copies a tasks row into quarantine (params: reason, at, id). */
  quarantine: Database.Statement<[string, number, string]>;
  quarantined: Database.Statement<[string], { reason: string; owner: string | null }>;
  listQuarantined: Database.Statement<
    [],
    { task_id: string; record: string; reason: string; quarantined_at: number; owner: string | null }
  >;
}

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
export class SqliteTaskStore implements TaskStore {
  /** Absolute path of the database file (or `:memory:`). */
  readonly file: string;
  readonly #busyTimeoutMs: number;
  readonly #onCorrupt: (taskId: string, error: Error) => void;
  readonly #locking: boolean;
  #lock: StoreLock | undefined;
  /** Unreadable rows met and being moved aside: reported once, skipped until the move commits. */
  readonly #settingAside = new Set<string>();
  #db: Database.Database | undefined;
  #statements: Statements | undefined;
  readonly #listStatements = new Map<string, Database.Statement<unknown[], { task_id: string; record: string }>>();
  #queue: QueuedWrite[] = [];
  #flushTimer: NodeJS.Immediate | undefined;
  #commits = 0;
  #state: State = 'new';
  readonly #onWarning: (message: string) => void;

  constructor(options: SqliteTaskStoreOptions) {
    this.#onWarning = options.onWarning ?? warnOnStderr;
    this.file = options.file === ':memory:' ? ':memory:' : resolve(options.file);
    this.#locking = (options.lock ?? true) && this.file !== ':memory:';
    this.#busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    this.#onCorrupt =
      options.onCorrupt ??
      ((taskId, error) =>
        console.error(`taskvisor: task ${taskId}: unreadable record in ${this.file} set aside (quarantined): ${error.message}`));
  }

  /** Write transactions committed so far (one per batch of writes). */
  get commits(): number {
    return this.#commits;
  }

  /** Creates the file if needed, opens it in WAL mode and brings its schema up to date. */
  /**
   * Whether this store holds its exclusive lock (readiness reports it, issue 16.1);
   * `undefined` when locking is off.
   */
  get locked(): boolean | undefined {
    return this.#locking ? this.#lock !== undefined : undefined;
  }

  async open(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`sqlite task store at ${this.file}: open() called on a store that is ${this.#state}`);
    this.#state = 'opening';
    let db: Database.Database | undefined;
    try {
      if (this.file !== ':memory:') await createFileIfMissing(this.file, this.#onWarning);
      // One owner (issue 13 item 2): locked before the database is opened (SQLite's own locks are per
      // transaction and let a second process in between them).
      if (this.#locking) this.#lock = await StoreLock.acquire(`${this.file}.lock`, `sqlite ${this.file}`);
      const Driver = await loadDriver();
      // close() may have been called meanwhile: open nothing then.
      if (this.#state !== 'opening') return;
      db = new Driver(this.file, { fileMustExist: this.file !== ':memory:', timeout: this.#busyTimeoutMs });
      db.pragma(`busy_timeout = ${Math.max(0, Math.floor(this.#busyTimeoutMs))}`);
      const mode = db.pragma('journal_mode = WAL', { simple: true });
      if (this.file !== ':memory:' && mode !== 'wal') throw new Error(`cannot switch to WAL mode (journal_mode is ${String(mode)})`);
      db.pragma('synchronous = FULL');
      migrate(db);
      this.#statements = prepareStatements(db);
      this.#db = db;
      this.#state = 'open';
    } catch (error) {
      db?.close();
      this.#state = 'closed';
      await this.#lock?.release();
      if (error instanceof StoreInUseError) throw error;
      throw new Error(`cannot open sqlite task store ${this.file}: ${errorMessage(error)}`, { cause: error });
    }
  }

  /** Commits the queued writes, then closes the database; later calls reject with "store is closed". */
  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    if (this.#flushTimer !== undefined) clearImmediate(this.#flushTimer);
    this.#flush();
    this.#listStatements.clear();
    this.#statements = undefined;
    const db = this.#db;
    this.#db = undefined;
    db?.close();
    await this.#lock?.release();
  }

  /**
   * Durably inserts a new task (in the next batch). Rejects with
   * {@link TaskExistsError} when the id is stored or created earlier in the
   * same batch, and with an Error for ids that cannot be stored (empty,
   * longer than 200 chars, malformed UTF-16).
   */
  async create(record: TaskRecord): Promise<void> {
    const statements = this.#assertOpen();
    const reason = invalidTaskIdReason(record.taskId);
    if (reason !== undefined) throw new Error(`cannot create task in ${this.file}: ${reason}`);
    // Serialized now: the caller may mutate its object before the batch runs.
    const row = rowOf(record, this.file);
    return new Promise<void>((resolve, reject) => {
      this.#enqueue({
        apply: () => (statements.insert.run(row).changes === 1 ? () => resolve() : () => reject(new TaskExistsError(row.task_id))),
        fail: reject,
      });
    });
  }

  /** Durably replaces the record when its version is higher than the stored one; ignores stale versions and unknown ids. */
  async put(record: TaskRecord): Promise<void> {
    const statements = this.#assertOpen();
    if (invalidTaskIdReason(record.taskId) !== undefined) return;
    const row = rowOf(record, this.file);
    return new Promise<void>((resolve, reject) => {
      this.#enqueue({
        apply: () => {
          // `WHERE version < ?` in SQL: compared with whatever an earlier write of this batch left.
          statements.update.run(row);
          return () => resolve();
        },
        fail: reject,
      });
    });
  }

  /**
   * Durably replaces many records in the next batch transaction: all of them
   * or none (the batch commits or fails whole). Every row is built before
   * anything is queued, so a record SQLite cannot hold fails the call alone.
   */
  async putMany(records: readonly TaskRecord[]): Promise<void> {
    const statements = this.#assertOpen();
    const rows = records.filter((record) => invalidTaskIdReason(record.taskId) === undefined).map((record) => rowOf(record, this.file));
    if (rows.length === 0) return;
    return new Promise<void>((resolve, reject) => {
      this.#enqueue({
        apply: () => {
          for (const row of rows) statements.update.run(row);
          return () => resolve();
        },
        fail: reject,
      });
    });
  }

  /** The stored record, or `undefined` (also for ids that cannot be stored). */
  // eslint-disable-next-line @typescript-eslint/require-await -- TaskStore port: a closed store's throw must reject, not throw synchronously
  async get(taskId: string, owner?: string): Promise<TaskRecord | undefined> {
    const statements = this.#assertOpen();
    if (invalidTaskIdReason(taskId) !== undefined) return undefined;
    // Issue 12.6: with an owner the row is matched on it too; another owner's record is never fetched or parsed.
    const json = owner === undefined ? statements.get.get(taskId) : statements.getOwned.get(taskId, owner);
    if (json === undefined) {
      const setAside = statements.quarantined.get(taskId);
      // Damaged only to its owner; any other principal gets what an unknown id gets (I-7).
      if (setAside !== undefined && mayReportDamaged(setAside.owner, owner)) throw new TaskDamagedError(taskId, setAside.reason);
      return undefined;
    }
    try {
      return parseRecord(json, taskId);
    } catch (error) {
      // Set aside as found (issue 13 item 3): reported once, then answered from the quarantine.
      this.#damaged(taskId, error);
      throw new TaskDamagedError(taskId, errorMessage(error));
    }
  }

  /** Moves a row aside in the next batch: kept as stored in `quarantine`, gone from `tasks`. */
  async quarantine(taskId: string, reason: string): Promise<boolean> {
    const statements = this.#assertOpen();
    if (invalidTaskIdReason(taskId) !== undefined) return false;
    return new Promise<boolean>((resolve, reject) => {
      this.#enqueue({
        apply: () => {
          const moved = statements.quarantine.run(reason, Date.now(), taskId).changes > 0;
          if (moved) statements.delete.run(taskId);
          return () => resolve(moved);
        },
        fail: reject,
      });
    });
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- TaskStore port: a closed store's throw must reject, not throw synchronously
  async listQuarantined(): Promise<QuarantinedRecord[]> {
    const statements = this.#assertOpen();
    return statements.listQuarantined.all().map((row) => ({
      taskId: row.task_id,
      reason: row.reason,
      quarantinedAt: row.quarantined_at,
      stored: row.record,
      ...(row.owner === null ? {} : { owner: row.owner }),
    }));
  }

  /** A row that cannot be parsed: reported, and quarantined when this store owns the file (a read-only view writes nothing). */
  #damaged(taskId: string, error: unknown): void {
    if (this.#settingAside.has(taskId)) return;
    this.#onCorrupt(taskId, error instanceof Error ? error : new Error(String(error)));
    if (!this.#locking) return;
    this.#settingAside.add(taskId);
    this.quarantine(taskId, errorMessage(error))
      .catch((failure: unknown) => this.#onCorrupt(taskId, new Error(`could not quarantine it: ${errorMessage(failure)}`)))
      .finally(() => this.#settingAside.delete(taskId));
  }

  /** Durably removes a task (in the next batch); `true` when it existed. */
  async delete(taskId: string): Promise<boolean> {
    const statements = this.#assertOpen();
    if (invalidTaskIdReason(taskId) !== undefined) return false;
    return new Promise<boolean>((resolve, reject) => {
      this.#enqueue({
        apply: () => {
          const removed = statements.delete.run(taskId).changes > 0;
          return () => resolve(removed);
        },
        fail: reject,
      });
    });
  }

  /** Every `working` / `input_required` record (index on `status`). */
  // eslint-disable-next-line @typescript-eslint/require-await -- TaskStore port: a closed store's throw must reject, not throw synchronously
  async listNonTerminal(): Promise<TaskRecord[]> {
    const statements = this.#assertOpen();
    return this.#parseRows(statements.nonTerminal.all());
  }

  /**
   * Unfinished records page by page: per status, keyset pages over the
   * `(status, rowid)` index — one indexed range read per page, never a sort
   * or an OFFSET, and nothing read before it is consumed.
   */
  // eslint-disable-next-line @typescript-eslint/require-await -- TaskStore port: a closed store's throw must reject, not throw synchronously
  async *scanNonTerminal(pageSize: number): AsyncIterable<TaskRecord[]> {
    const size = Math.max(1, Math.floor(pageSize));
    for (const status of ['working', 'input_required']) {
      let after = 0;
      for (;;) {
        const rows = this.#assertOpen().nonTerminalPage.all(status, after, size);
        if (rows.length === 0) break;
        after = rows[rows.length - 1]!.rowid;
        yield this.#parseRows(rows);
        if (rows.length < size) break;
      }
    }
  }

  /** Ids whose `createdAt + ttlMs <= now`, most overdue first, at most `limit` (index on `expires_at`). */
  // eslint-disable-next-line @typescript-eslint/require-await -- TaskStore port: a closed store's throw must reject, not throw synchronously
  async listExpired(now: number, limit: number): Promise<string[]> {
    const statements = this.#assertOpen();
    const max = normalizeLimit(limit);
    if (max === 0) return [];
    return statements.expired.all(now, max === Number.POSITIVE_INFINITY ? -1 : max);
  }

  /** Matching records, newest first (ties by id); index on `(owner, created_at)` when an owner is given. */
  // eslint-disable-next-line @typescript-eslint/require-await -- TaskStore port: a closed store's throw must reject, not throw synchronously
  async list(query: TaskListQuery = {}): Promise<TaskRecord[]> {
    this.#assertOpen();
    const limit = normalizeLimit(query.limit);
    const statuses = query.status === undefined ? undefined : [...new Set(query.status)];
    if (limit === 0 || statuses?.length === 0) return [];
    const params: unknown[] = [];
    if (query.owner !== undefined) params.push(query.owner);
    if (statuses !== undefined) params.push(...statuses);
    params.push(limit === Number.POSITIVE_INFINITY ? -1 : limit);
    const records = this.#parseRows(this.#listStatement(query.owner !== undefined, statuses?.length).all(...params));
    // SQLite orders ids by UTF-8 bytes, the other stores by UTF-16 units; they differ only for ids with
    // characters above U+FFFF, and re-sorting makes the returned order identical (stable for the rest).
    return records.sort(compareNewestFirst);
  }

  #listStatement(byOwner: boolean, statusCount: number | undefined): Database.Statement<unknown[], { task_id: string; record: string }> {
    const key = `${byOwner}:${statusCount ?? '-'}`;
    let statement = this.#listStatements.get(key);
    if (statement === undefined) {
      const where: string[] = [];
      if (byOwner) where.push('owner = ?');
      if (statusCount !== undefined) where.push(`status IN (${Array.from({ length: statusCount }, () => '?').join(', ')})`);
      statement = (this.#db as Database.Database).prepare<unknown[], { task_id: string; record: string }>(
        `SELECT task_id, record FROM tasks ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, task_id LIMIT ?`,
      );
      this.#listStatements.set(key, statement);
    }
    return statement;
  }

  #parseRows(rows: readonly { task_id: string; record: string }[]): TaskRecord[] {
    const out: TaskRecord[] = [];
    for (const row of rows) {
      try {
        out.push(parseRecord(row.record, row.task_id));
      } catch (error) {
        this.#damaged(row.task_id, error);
      }
    }
    return out;
  }

  #assertOpen(): Statements {
    if (this.#state === 'open' && this.#statements !== undefined) return this.#statements;
    if (this.#state === 'closed') throw new Error(`store is closed (sqlite task store ${this.file})`);
    throw new Error(`store is not open: call open() first (sqlite task store ${this.file})`);
  }

  #enqueue(write: QueuedWrite): void {
    this.#queue.push(write);
    this.#flushTimer ??= setImmediate(() => this.#flush());
  }

  /** Applies every queued write in one transaction, then answers their callers (all rejected if the commit fails). */
  #flush(): void {
    this.#flushTimer = undefined;
    const batch = this.#queue;
    if (batch.length === 0) return;
    this.#queue = [];
    const db = this.#db;
    let answers: (() => void)[];
    try {
      if (db === undefined) throw new Error('the database is not open');
      // IMMEDIATE takes the write lock up front, so busy_timeout applies instead of a deadlock-prone upgrade.
      answers = db.transaction(() => batch.map((write) => write.apply())).immediate();
      this.#commits++;
    } catch (error) {
      const failure = new Error(`sqlite task store ${this.file}: cannot commit ${batch.length} write(s): ${errorMessage(error)}`, {
        cause: error,
      });
      for (const write of batch) write.fail(failure);
      return;
    }
    for (const answer of answers) answer();
  }
}

let driver: Promise<typeof Database> | undefined;

/** Loads better-sqlite3 once; a failure (addon not built for this Node) says what is missing. */
function loadDriver(): Promise<typeof Database> {
  driver ??= loadSqliteDriver().catch((error: unknown) => {
    driver = undefined;
    throw new Error(`the sqlite store needs the better-sqlite3 package, which did not load: ${errorMessage(error)}`, { cause: error });
  });
  return driver;
}

function prepareStatements(db: Database.Database): Statements {
  return {
    insert: db.prepare<[Row]>(
      `INSERT INTO tasks (task_id, owner, tool, status, created_at, last_updated_at, ttl_ms, version, machine_version, record)
       VALUES (@task_id, @owner, @tool, @status, @created_at, @last_updated_at, @ttl_ms, @version, @machine_version, @record)
       ON CONFLICT (task_id) DO NOTHING`,
    ),
    // A task's owner, tool, createdAt and ttlMs are set once at create (the machine never assigns them): their
    // columns, and the two indexes over them, are left alone, as in the PostgreSQL store. Rewriting them cost a
    // third of each update (issue 13 item 6: recovery writes 100k records).
    update: db.prepare<[Row]>(
      `UPDATE tasks SET status = @status, last_updated_at = @last_updated_at, version = @version, machine_version = @machine_version,
         record = @record
       WHERE task_id = @task_id AND version < @version`,
    ),
    delete: db.prepare<[string]>('DELETE FROM tasks WHERE task_id = ?'),
    get: db.prepare<[string], string>('SELECT record FROM tasks WHERE task_id = ?').pluck(),
    getOwned: db.prepare<[string, string], string>('SELECT record FROM tasks WHERE task_id = ? AND owner = ?').pluck(),
    nonTerminal: db.prepare<[], { task_id: string; record: string }>(
      `SELECT task_id, record FROM tasks WHERE status IN ('working', 'input_required')`,
    ),
    nonTerminalPage: db.prepare<[string, number, number], { rowid: number; task_id: string; record: string }>(
      'SELECT rowid, task_id, record FROM tasks WHERE status = ? AND rowid > ? ORDER BY rowid LIMIT ?',
    ),
    expired: db
      .prepare<[number, number], string>('SELECT task_id FROM tasks WHERE expires_at <= ? ORDER BY expires_at, task_id LIMIT ?')
      .pluck(),
    // The owner column was written with the record but is not part of its bytes: it survives their damage.
    quarantine: db.prepare<[string, number, string]>(
      `INSERT OR REPLACE INTO quarantine (task_id, owner, record, reason, quarantined_at) SELECT task_id, owner, record, ?, ? FROM tasks WHERE task_id = ?`,
    ),
    quarantined: db.prepare<[string], { reason: string; owner: string | null }>('SELECT reason, owner FROM quarantine WHERE task_id = ?'),
    listQuarantined: db.prepare<[], { task_id: string; record: string; reason: string; quarantined_at: number; owner: string | null }>(
      'SELECT task_id, record, reason, quarantined_at, owner FROM quarantine ORDER BY quarantined_at, task_id',
    ),
  };
}

/**
 * Brings the schema to {@link SQLITE_SCHEMA_VERSION} in one IMMEDIATE
 * transaction (so two processes opening a new file cannot both migrate).
 * Refuses a file whose schema is newer than this code knows.
 */
function migrate(db: Database.Database): void {
  db.transaction(() => {
    db.exec('CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value)');
    const stored = db.prepare<[], unknown>(`SELECT value FROM meta WHERE key = 'schema_version'`).pluck().get();
    const current = stored === undefined ? 0 : Number(stored);
    if (!Number.isInteger(current) || current < 0)
      throw new Error(`meta.schema_version is ${JSON.stringify(stored)}, not a version number`);
    if (current > SQLITE_SCHEMA_VERSION) {
      throw new Error(
        `the file has schema version ${current}, but this taskvisor knows only up to schema version ${SQLITE_SCHEMA_VERSION}: it was written by a newer taskvisor (upgrade taskvisor, or use another file)`,
      );
    }
    for (let version = current; version < SQLITE_SCHEMA_VERSION; version++) {
      try {
        db.exec(SQLITE_MIGRATIONS[version] as string);
        AFTER_MIGRATION[version + 1]?.(db);
      } catch (error) {
        throw new Error(
          `migrating the schema from version ${version} to ${version + 1} failed (is this a taskvisor store?): ${errorMessage(error)}`,
          {
            cause: error,
          },
        );
      }
    }
    if (current !== SQLITE_SCHEMA_VERSION) {
      db.prepare(`INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(
        SQLITE_SCHEMA_VERSION,
      );
    }
  }).immediate();
}

/**
 * Creates `file` empty with mode 0600 (SQLite gives its -wal and -shm files
 * the same mode) and its missing parent folders, and makes the new entries
 * durable before any record in them is acknowledged (I-1).
 */
async function createFileIfMissing(file: string, warn: (message: string) => void): Promise<void> {
  const folder = dirname(file);
  // 0700 when created; an existing folder open to others is reported (issue 12.5).
  const firstCreated = await ensurePrivateDir(folder, warn);
  let handle;
  try {
    handle = await openFile(file, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o600);
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return;
    throw error;
  }
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  const existing = firstCreated === undefined ? folder : dirname(firstCreated);
  for (let dir = folder; ; dir = dirname(dir)) {
    await fsyncDir(dir);
    if (dir === existing || dir === dirname(dir)) break;
  }
}

/** The row for `record`; throws for fields SQLite could not store faithfully. */
function rowOf(record: TaskRecord, file: string): Row {
  const fail = (what: string): never => {
    throw new Error(`cannot store task ${JSON.stringify(record.taskId)} in ${file}: ${what}`);
  };
  const finite = (name: keyof TaskRecord): number => {
    const value = record[name];
    return typeof value === 'number' && Number.isFinite(value) ? value : fail(`${name} is not a finite number`);
  };
  const text = (name: keyof TaskRecord): string => {
    const value = record[name];
    return typeof value === 'string' ? value : fail(`${name} is not a string`);
  };
  const ttl = record.ttlMs;
  if (ttl !== null && (typeof ttl !== 'number' || !Number.isFinite(ttl))) fail('ttlMs is neither a finite number nor null');
  return {
    task_id: record.taskId,
    owner: text('owner'),
    tool: text('tool'),
    status: text('status'),
    created_at: finite('createdAt'),
    last_updated_at: finite('lastUpdatedAt'),
    ttl_ms: ttl,
    version: finite('version'),
    machine_version: finite('machineVersion'),
    record: JSON.stringify(record),
  };
}

function parseRecord(json: string, taskId: string): TaskRecord {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new Error(`task ${JSON.stringify(taskId)}: invalid JSON in the record column: ${errorMessage(error)}`, { cause: error });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(`task ${JSON.stringify(taskId)}: the record is not a JSON object`);
  if ((value as { taskId?: unknown }).taskId !== taskId) {
    throw new Error(`task ${JSON.stringify(taskId)}: the record holds task ${JSON.stringify((value as { taskId?: unknown }).taskId)}`);
  }
  return value as TaskRecord;
}
