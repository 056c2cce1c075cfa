/**
 * PostgreSQL-backed {@link TaskStore} (node-postgres) for several taskvisor
 * instances sharing one database. Also implements {@link TaskOwnership}:
 * instance leases, per-task fencing tokens, command routing and a change feed
 * over LISTEN/NOTIFY.
 *
 * Durability (T-07, I-1): a write's promise resolves after its transaction
 * committed (`synchronous_commit` as the server sets it: `on` by default), so
 * a `get` on any instance sees it.
 *
 * Group commit (the kit's `GroupCommit`): the creates of one tick are ONE `INSERT … ON CONFLICT DO
 * NOTHING RETURNING task_id` (one commit, one WAL flush, one round trip; a lone create a one-row
 * VALUES), at most 256 a group, up to (pool − 2) / 2 groups committing at once; the puts of one tick
 * ONE UPDATE, one group at a time. Each caller is answered on its own, after the commit holding its
 * write (ids not returned were taken: {@link TaskExistsError}).
 *
 * Fencing: `create` makes this instance the task's owner with token 1;
 * `claimExpired` moves a dead instance's tasks to this one with token + 1.
 * Every `put` of a task this store created or claimed is conditional on
 * (owner = this instance, token = the one it holds); a refused write rejects
 * with {@link TaskFencedError} and the caller stops running the task.
 * Leases, adoption, commands and the change feed: `postgres/PostgresOwnership.ts`.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { escapeIdentifier, loadPg } from './postgres/pgModule.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { describePgError, redactUrl } from './postgres/errors.js';
import { migrate, POSTGRES_SCHEMA_VERSION } from './postgres/migrations.js';
import { NON_TERMINAL, PostgresOwnership } from './postgres/PostgresOwnership.js';
import {
  DEFAULT_LEASE_MS,
  DEFAULT_POSTGRES_POOL_SIZE,
  DEFAULT_POSTGRES_SCHEMA,
  POSTGRES_SCHEMA_PATTERN,
  type PostgresTaskStoreOptions,
} from './postgres/options.js';
import { fencedAmong, insertTasks, latestPerTask, updateTasks, type TaskWrite } from './postgres/taskWrites.js';
import { createGroupBounds, firstPerTask } from './postgres/taskWrites.js';
import { failed, GroupCommit, succeeded, type WriteOutcome } from './kit/GroupCommit.js';
import { KitTaskStore, type ListSelection, type SetAsideNote } from './kit/KitTaskStore.js';
import type { StoredRecord } from './kit/storedRecord.js';
import { invalidPostgresTaskIdReason } from './kit/taskIds.js';
import {
  TaskExistsError,
  TaskFencedError,
  type QuarantinedRecord,
  type QueuedTaskCommand,
  type TaskCommand,
  type TaskFeedHandlers,
  type TaskOwnership,
} from './TaskStore.js';

export type { PostgresTaskStoreOptions };
export { POSTGRES_SCHEMA_VERSION, redactUrl, describePgError };

type RecordRow = { task_id: string; record: string };

export class PostgresTaskStore extends KitTaskStore implements TaskOwnership {
  readonly schema: string;
  readonly leaseMs: number;
  readonly poolSize: number;
  readonly #url: string;
  readonly #applicationName: string | undefined;
  readonly #readOnly: boolean;
  readonly #q: string;
  #pool: pg.Pool | undefined;
  /** Fencing tokens of the tasks this instance created or claimed (`null`: taken over, writes refused). */
  readonly #tokens = new Map<string, string | null>();
  readonly #inflight = new Set<Promise<unknown>>();
  #putManyCommits = 0;
  readonly #owner: PostgresOwnership;
  readonly #creates: GroupCommit<TaskWrite>;
  readonly #puts = new GroupCommit<TaskWrite>(this.#commitPuts.bind(this), this.#writeFailure.bind(this));

  constructor(options: PostgresTaskStoreOptions) {
    super(options.onCorrupt);
    this.#url = options.url;
    this.schema = options.schema ?? DEFAULT_POSTGRES_SCHEMA;
    if (!POSTGRES_SCHEMA_PATTERN.test(this.schema)) {
      throw new Error(`postgres task store: schema ${JSON.stringify(this.schema)} must match ${POSTGRES_SCHEMA_PATTERN}`);
    }
    this.poolSize = options.poolSize ?? DEFAULT_POSTGRES_POOL_SIZE;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#creates = new GroupCommit(this.#commitCreates.bind(this), this.#writeFailure.bind(this), createGroupBounds(this.poolSize));
    this.#applicationName = options.applicationName;
    this.#readOnly = options.readOnly ?? false;
    this.#q = escapeIdentifier(this.schema);
    const onFeedError =
      options.onFeedError ?? ((error: Error) => console.error(`taskvisor: postgres change feed: ${error.message}; reconnecting`));
    this.#owner = new PostgresOwnership(
      {
        schema: this.schema,
        q: this.#q,
        leaseMs: this.leaseMs,
        url: this.#url,
        applicationName: this.#applicationName,
        onFeedError,
        tokens: this.#tokens,
        pool: () => this.#open(),
        track: (promise) => this.#track(promise),
        records: (rows) => this.recordsOf(rows.map(storedOf)),
      },
      options.instanceId ?? randomUUID(),
    );
  }

  get instanceId(): string {
    return this.#owner.instanceId;
  }

  /** The store as an ownership capability (it is one). */
  get ownership(): TaskOwnership {
    return this;
  }

  /** Write transactions committed so far (a batch of creates is one). */
  get commits(): number {
    return this.#creates.commits + this.#puts.commits + this.#putManyCommits;
  }

  /** Where the store lives, for messages (no password). */
  get description(): string {
    return `postgres ${redactUrl(this.#url)} schema ${this.schema}`;
  }

  protected get storeName(): string {
    return this.description;
  }

  protected get ownsData(): boolean {
    return !this.#readOnly;
  }

  protected override idProblem(taskId: unknown): string | undefined {
    return invalidPostgresTaskIdReason(taskId);
  }

  /** Connects, creates the schema if missing and runs pending migrations (under an advisory lock). */
  protected async openStorage(): Promise<void> {
    const pool = new (await loadPg()).Pool({
      connectionString: this.#url,
      max: this.poolSize,
      application_name: this.#applicationName ?? `taskvisor ${this.instanceId}`,
      connectionTimeoutMillis: 10_000,
    });
    // An idle client that loses its connection (server restart, pg_terminate_backend) is dropped and replaced.
    pool.on('error', () => undefined);
    try {
      await migrate(pool, this.schema);
      this.#pool = pool;
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw new Error(`cannot open ${this.description}: ${describePgError(error)}`, { cause: error });
    }
  }

  /** Commits the queued writes, stops the feed, closes the pool. */
  protected async closeStorage(): Promise<void> {
    await Promise.all([this.#creates.idle(), this.#puts.idle()]);
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
    await this.#owner.close();
    await this.#pool?.end().catch(() => undefined);
    this.#pool = undefined;
  }

  protected createStored(record: TaskRecord): Promise<void> {
    return this.#creates.add({ record, json: JSON.stringify(record) });
  }

  /**
   * Group-committed with the other puts of the same tick: one UPDATE for the
   * batch. Rejects with {@link TaskFencedError} when another instance claimed
   * the task since this one created or claimed it.
   */
  protected async putStored(record: TaskRecord): Promise<void> {
    if (this.#tokens.get(record.taskId) === null) throw new TaskFencedError(record.taskId);
    return this.#puts.add({ record, json: JSON.stringify(record) });
  }

  /**
   * One UPDATE in one transaction, all or none. Rejects with
   * {@link TaskFencedError} (nothing stored) when another instance claimed
   * one of the tasks since this one created or claimed it.
   */
  protected async putManyStored(records: readonly TaskRecord[]): Promise<void> {
    const pool = this.#open();
    for (const record of records) if (this.#tokens.get(record.taskId) === null) throw new TaskFencedError(record.taskId);
    const items = latestPerTask(records.map((record) => ({ record, json: JSON.stringify(record) })));
    return this.#track(this.#putManyNow(pool, items));
  }

  async #putManyNow(pool: pg.Pool, items: readonly TaskWrite[]): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw this.#writeFailure(error);
    }
    let fenced: string[] = [];
    try {
      await client.query('BEGIN');
      const { refused } = await updateTasks(client, this.#q, items, this.#tokens, this.instanceId);
      fenced = refused.length === 0 ? [] : await fencedAmong(client, this.#q, refused, this.#tokens, this.instanceId);
      await client.query(fenced.length === 0 ? 'COMMIT' : 'ROLLBACK');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw this.#writeFailure(error);
    } finally {
      client.release();
    }
    if (fenced.length > 0) {
      // Rolled back: all or none. The fenced tasks are another instance's now (I-9): never written from here again.
      for (const taskId of fenced) this.#tokens.set(taskId, null);
      throw new TaskFencedError(fenced[0]!);
    }
    this.#putManyCommits++;
  }

  /** With an owner, another owner's record never leaves the database. */
  protected async readStored(taskId: string, owner: string | undefined): Promise<StoredRecord | undefined> {
    const pool = this.#open();
    const result =
      owner === undefined
        ? await pool.query<{ record: string }>(`SELECT record FROM ${this.#q}.tasks WHERE task_id = $1`, [taskId])
        : await pool.query<{ record: string }>(`SELECT record FROM ${this.#q}.tasks WHERE task_id = $1 AND owner = $2`, [taskId, owner]);
    const row = result.rows[0];
    return row === undefined ? undefined : { taskId, text: row.record };
  }

  protected async findSetAside(taskId: string): Promise<SetAsideNote | undefined> {
    const result = await this.#open().query<{ reason: string; owner: string | null }>(
      `SELECT reason, owner FROM ${this.#q}.quarantine WHERE task_id = $1`,
      [taskId],
    );
    return result.rows[0];
  }

  /** Moves the row into `quarantine` in one statement: kept as stored, gone from `tasks`. */
  protected async quarantineStored(taskId: string, reason: string): Promise<boolean> {
    const pool = this.#open();
    this.#tokens.delete(taskId);
    const result = await this.#track(
      pool.query(
        // The owner column was written with the record but is not part of its bytes: it survives their damage.
        `WITH moved AS (DELETE FROM ${this.#q}.tasks WHERE task_id = $1 RETURNING task_id, owner, record)
         INSERT INTO ${this.#q}.quarantine (task_id, owner, record, reason, quarantined_at) SELECT task_id, owner, record, $2, $3 FROM moved
         ON CONFLICT (task_id) DO UPDATE SET owner = excluded.owner, record = excluded.record, reason = excluded.reason,
           quarantined_at = excluded.quarantined_at`,
        [taskId, reason, Date.now()],
      ),
    );
    return (result.rowCount ?? 0) > 0;
  }

  protected async listSetAside(): Promise<QuarantinedRecord[]> {
    const result = await this.#open().query<{
      task_id: string;
      record: string;
      reason: string;
      quarantined_at: string;
      owner: string | null;
    }>(`SELECT task_id, record, reason, quarantined_at, owner FROM ${this.#q}.quarantine ORDER BY quarantined_at, task_id`);
    return result.rows.map((row) => ({
      taskId: row.task_id,
      reason: row.reason,
      quarantinedAt: Number(row.quarantined_at),
      stored: row.record,
      ...(row.owner === null ? {} : { owner: row.owner }),
    }));
  }

  protected async deleteStored(taskId: string): Promise<boolean> {
    const pool = this.#open();
    this.#tokens.delete(taskId);
    const result = await this.#track(pool.query(`DELETE FROM ${this.#q}.tasks WHERE task_id = $1`, [taskId]));
    return result.rowCount === 1;
  }

  protected async readNonTerminal(): Promise<StoredRecord[]> {
    const result = await this.#open().query<RecordRow>(`SELECT task_id, record FROM ${this.#q}.tasks WHERE status IN ${NON_TERMINAL}`);
    return result.rows.map(storedOf);
  }

  /**
   * Keyset pages by `task_id` over the partial index of unfinished rows
   * (migration 4): one index range read per page, never an OFFSET, and
   * nothing read before it is consumed. Ids compare bytewise (`COLLATE "C"`),
   * so `task_id > last` continues exactly where the page ended; a task that
   * finishes meanwhile simply drops out of the index.
   */
  protected async *scanStored(pageSize: number): AsyncIterable<StoredRecord[]> {
    let after = '';
    for (;;) {
      const result = await this.#open().query<RecordRow>(
        `SELECT task_id, record FROM ${this.#q}.tasks WHERE status IN ${NON_TERMINAL} AND task_id > $1 ORDER BY task_id LIMIT $2`,
        [after, pageSize],
      );
      const rows = result.rows;
      if (rows.length === 0) return;
      after = rows[rows.length - 1]!.task_id;
      yield rows.map(storedOf);
      if (rows.length < pageSize) return;
    }
  }

  protected async expiredStored(now: number, limit: number): Promise<string[]> {
    const result = await this.#open().query<{ task_id: string }>(
      `SELECT task_id FROM ${this.#q}.tasks WHERE expires_at IS NOT NULL AND expires_at <= $1 ORDER BY expires_at, task_id LIMIT $2`,
      [now, limit === Number.POSITIVE_INFINITY ? null : limit],
    );
    return result.rows.map((row) => row.task_id);
  }

  protected async listStored({ owner, statuses, limit }: ListSelection): Promise<StoredRecord[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (owner !== undefined) where.push(`owner = $${params.push(owner)}`);
    if (statuses !== undefined) where.push(`status = ANY($${params.push(statuses)})`);
    params.push(limit === Number.POSITIVE_INFINITY ? null : limit);
    const result = await this.#open().query<RecordRow>(
      `SELECT task_id, record FROM ${this.#q}.tasks ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, task_id LIMIT $${params.length}`,
      params,
    );
    return result.rows.map(storedOf);
  }

  // TaskOwnership: `postgres/PostgresOwnership.ts` (its calls need the pool: a closed store rejects them).

  join(): Promise<void> {
    return this.#owner.join();
  }

  renewLease(): Promise<boolean> {
    return this.#owner.renewLease();
  }

  leave(): Promise<void> {
    return this.#owner.leave();
  }
  liveInstances(): Promise<number> {
    return this.#owner.liveInstances();
  }

  claimExpired(): Promise<TaskRecord[]> {
    return this.#owner.claimExpired();
  }

  async sendCommand(taskId: string, command: TaskCommand): Promise<boolean> {
    return this.idProblem(taskId) === undefined && this.#owner.sendCommand(taskId, command);
  }

  takeCommands(): Promise<QueuedTaskCommand[]> {
    return this.#owner.takeCommands();
  }

  subscribe(handlers: TaskFeedHandlers): () => void {
    return this.#owner.subscribe(handlers);
  }

  async #commitCreates(batch: readonly TaskWrite[]): Promise<WriteOutcome<void>[]> {
    const first = firstPerTask(batch);
    const inserted = await insertTasks(this.#open(), this.#q, [...first.values()], this.instanceId);
    return batch.map((item) => {
      if (first.get(item.record.taskId) !== item || !inserted.has(item.record.taskId))
        return failed(new TaskExistsError(item.record.taskId));
      this.#tokens.set(item.record.taskId, '1');
      return succeeded(undefined);
    });
  }

  /** One row per task, its highest version; every caller of that task gets the outcome of that write. */
  async #commitPuts(batch: readonly TaskWrite[]): Promise<WriteOutcome<void>[]> {
    const pool = this.#open();
    const { refused } = await updateTasks(pool, this.#q, latestPerTask(batch), this.#tokens, this.instanceId);
    // Refused: purged or stale (ignored, latest wins), or claimed by another instance (fenced).
    const fenced = new Set(refused.length === 0 ? [] : await fencedAmong(pool, this.#q, refused, this.#tokens, this.instanceId));
    for (const taskId of fenced) this.#tokens.set(taskId, null);
    return batch.map((item) => (fenced.has(item.record.taskId) ? failed(new TaskFencedError(item.record.taskId)) : succeeded(undefined)));
  }

  #writeFailure(error: unknown): Error {
    return new Error(`cannot store tasks in ${this.description}: ${describePgError(error)}`, { cause: error });
  }

  #track<T>(promise: Promise<T>): Promise<T> {
    this.#inflight.add(promise);
    const done = () => this.#inflight.delete(promise);
    promise.then(done, done);
    return promise;
  }

  /** The pool, while open (the kit asserts the lifecycle; this also covers the close under way). */
  #open(): pg.Pool {
    if (this.#pool === undefined) throw new Error(`store is ${this.state === 'closed' ? 'closed' : 'not open'} (${this.description})`);
    return this.#pool;
  }
}

const storedOf = (row: RecordRow): StoredRecord => ({ taskId: row.task_id, text: row.record });
