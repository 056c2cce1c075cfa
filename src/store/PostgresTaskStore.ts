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
 * Group commit: creates issued in the same tick are inserted with ONE
 * multi-row `INSERT … ON CONFLICT DO NOTHING RETURNING task_id` (one commit,
 * one WAL flush, one round trip); each caller is answered on its own (ids not
 * returned were taken: {@link TaskExistsError}).
 *
 * Fencing: `create` makes this instance the task's owner with token 1;
 * `claimExpired` moves a dead instance's tasks to this one with token + 1.
 * Every `put` of a task this store created or claimed is conditional on
 * (owner = this instance, token = the one it holds); a refused write rejects
 * with {@link TaskFencedError} and the caller stops running the task.
 *
 * Change feed: a trigger NOTIFYs `"<schema>.tasks"` with `taskId version
 * instance` on every update (small payload: the receiver reads the row);
 * commands for an instance are rows in `task_commands` plus a NOTIFY on
 * `"<schema>.commands"` carrying the target instance id.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { escapeIdentifier, loadPg } from './postgres/pgModule.js';
import { NON_TERMINAL_STATUSES } from '../core/statuses.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { mayReportDamaged } from '../tasks/storedOwner.js';
import { compareNewestFirst, normalizeLimit } from './query.js';
import { describePgError, redactUrl } from './postgres/errors.js';
import { FeedConnection } from './postgres/FeedConnection.js';
import { migrate, POSTGRES_SCHEMA_VERSION } from './postgres/migrations.js';
import { invalidTaskIdReason } from './taskFiles.js';
import {
  TaskExistsError,
  TaskFencedError,
  TaskDamagedError,
  type QuarantinedRecord,
  type QueuedTaskCommand,
  type TaskCommand,
  type TaskFeedHandlers,
  type TaskListQuery,
  type TaskOwnership,
  type TaskStore,
} from './TaskStore.js';

export const DEFAULT_POSTGRES_SCHEMA = 'taskvisor';
export const DEFAULT_POSTGRES_POOL_SIZE = 10;
export const DEFAULT_LEASE_MS = 5_000;
/** Schema names this store accepts: plain lower-case identifiers short enough for a NOTIFY channel (63 bytes). */
export const POSTGRES_SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,47}$/;

export interface PostgresTaskStoreOptions {
  /** `postgres://user@host:port/database` (anything node-postgres accepts). */
  url: string;
  /** Schema holding the tables (created if missing). Default `taskvisor`. */
  schema?: string;
  /** Connections in the pool (plus one for LISTEN). Default 10. */
  poolSize?: number;
  /** How long an instance's lease lasts without renewal. Default 5000 ms. */
  leaseMs?: number;
  /** This instance's id. Default: random. */
  instanceId?: string;
  /** Shown in `pg_stat_activity.application_name`. Default `taskvisor <instanceId>`. */
  applicationName?: string;
  /** Called for a stored row that cannot be parsed while listing (skipped). Default: a line on stderr. */
  onCorrupt?: (taskId: string, error: Error) => void;
  /** Called when the LISTEN connection fails (it reconnects). Default: a line on stderr. */
  onFeedError?: (error: Error) => void;
}

export { POSTGRES_SCHEMA_VERSION, redactUrl, describePgError };

/** How often `claimExpired` also looks for unfinished tasks whose owner has no instance row. */
const ORPHAN_SCAN_INTERVAL_MS = 60_000;

const NON_TERMINAL = `(${NON_TERMINAL_STATUSES.map((status) => `'${status}'`).join(', ')})`;

type State = 'new' | 'opening' | 'open' | 'closed';

interface QueuedWrite {
  record: TaskRecord;
  json: string;
  resolve: () => void;
  reject: (error: Error) => void;
}

export class PostgresTaskStore implements TaskStore, TaskOwnership {
  readonly schema: string;
  readonly leaseMs: number;
  readonly poolSize: number;
  #instanceId: string;
  readonly #url: string;
  readonly #applicationName: string | undefined;
  readonly #q: string;
  /** Unreadable rows met and being moved aside: reported once, skipped until the move commits. */
  readonly #settingAside = new Set<string>();
  readonly #onCorrupt: (taskId: string, error: Error) => void;
  readonly #onFeedError: (error: Error) => void;
  #pool: pg.Pool | undefined;
  #state: State = 'new';
  /** Fencing tokens of the tasks this instance created or claimed (`null`: taken over, writes refused). */
  readonly #tokens = new Map<string, string | null>();
  #createQueue: QueuedWrite[] = [];
  #createTimer: NodeJS.Immediate | undefined;
  #putQueue: QueuedWrite[] = [];
  #putTimer: NodeJS.Immediate | undefined;
  readonly #inflight = new Set<Promise<unknown>>();
  #commits = 0;
  #lastOrphanScan = Number.NEGATIVE_INFINITY;
  #feed: FeedConnection | undefined;

  constructor(options: PostgresTaskStoreOptions) {
    this.#url = options.url;
    this.schema = options.schema ?? DEFAULT_POSTGRES_SCHEMA;
    if (!POSTGRES_SCHEMA_PATTERN.test(this.schema)) {
      throw new Error(`postgres task store: schema ${JSON.stringify(this.schema)} must match ${POSTGRES_SCHEMA_PATTERN}`);
    }
    this.poolSize = options.poolSize ?? DEFAULT_POSTGRES_POOL_SIZE;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#instanceId = options.instanceId ?? randomUUID();
    this.#applicationName = options.applicationName;
    this.#q = escapeIdentifier(this.schema);
    this.#onCorrupt =
      options.onCorrupt ??
      ((taskId, error) =>
        console.error(`taskvisor: skipping unreadable task record ${taskId} in postgres schema ${this.schema}: ${error.message}`));
    this.#onFeedError =
      options.onFeedError ?? ((error) => console.error(`taskvisor: postgres change feed: ${error.message}; reconnecting`));
  }

  get instanceId(): string {
    return this.#instanceId;
  }

  /** The store as an ownership capability (it is one). */
  get ownership(): TaskOwnership {
    return this;
  }

  /** Write transactions committed so far (a batch of creates is one). */
  get commits(): number {
    return this.#commits;
  }

  /** Where the store lives, for messages (no password). */
  get description(): string {
    return `postgres ${redactUrl(this.#url)} schema ${this.schema}`;
  }

  /** Connects, creates the schema if missing and runs pending migrations (under an advisory lock). */
  async open(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`${this.description}: open() called on a store that is ${this.#state}`);
    this.#state = 'opening';
    const pool = new (await loadPg()).Pool({
      connectionString: this.#url,
      max: this.poolSize,
      application_name: this.#applicationName ?? `taskvisor ${this.#instanceId}`,
      connectionTimeoutMillis: 10_000,
    });
    // An idle client that loses its connection (server restart, pg_terminate_backend) is dropped and replaced.
    pool.on('error', () => undefined);
    try {
      await migrate(pool, this.schema);
      this.#pool = pool;
      this.#state = 'open';
    } catch (error) {
      await pool.end().catch(() => undefined);
      this.#state = 'closed';
      throw new Error(`cannot open ${this.description}: ${describePgError(error)}`, { cause: error });
    }
  }

  /** Commits the queued creates, stops the feed, closes the pool. */
  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    if (this.#createTimer !== undefined) clearImmediate(this.#createTimer);
    if (this.#putTimer !== undefined) clearImmediate(this.#putTimer);
    if (this.#createQueue.length > 0) void this.#track(this.#flushCreates());
    if (this.#putQueue.length > 0) void this.#track(this.#flushPuts());
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
    await this.#feed?.close();
    this.#feed = undefined;
    await this.#pool?.end().catch(() => undefined);
    this.#pool = undefined;
  }

  async create(record: TaskRecord): Promise<void> {
    this.#assertOpen();
    const reason = invalidIdReason(record.taskId);
    if (reason !== undefined) throw new Error(`cannot create task in ${this.description}: ${reason}`);
    const json = JSON.stringify(record);
    return new Promise<void>((resolve, reject) => {
      this.#createQueue.push({ record, json, resolve, reject });
      this.#createTimer ??= setImmediate(() => {
        this.#createTimer = undefined;
        // Tracked for close(); each batch settles its own entries, so nothing waits on this promise.
        void this.#track(this.#flushCreates());
      });
    });
  }

  /**
   * Durably replaces a task's record (group-committed with the other puts of
   * the same tick: one UPDATE for the batch). Rejects with
   * {@link TaskFencedError} when another instance claimed the task since this
   * one created or claimed it.
   */
  async put(record: TaskRecord): Promise<void> {
    this.#assertOpen();
    if (invalidIdReason(record.taskId) !== undefined) return;
    if (this.#tokens.get(record.taskId) === null) throw new TaskFencedError(record.taskId);
    const json = JSON.stringify(record);
    return new Promise<void>((resolve, reject) => {
      this.#putQueue.push({ record, json, resolve, reject });
      this.#putTimer ??= setImmediate(() => {
        this.#putTimer = undefined;
        void this.#track(this.#flushPuts());
      });
    });
  }

  /**
   * Durably replaces many records with one UPDATE in one transaction, all or
   * none. Rejects with {@link TaskFencedError} (nothing stored) when another
   * instance claimed one of the tasks since this one created or claimed it.
   */
  async putMany(records: readonly TaskRecord[]): Promise<void> {
    const pool = this.#assertOpen();
    // One row per task: its highest version (a lower one would be ignored anyway: latest wins).
    const latest = new Map<string, { record: TaskRecord; json: string }>();
    for (const record of records) {
      if (invalidIdReason(record.taskId) !== undefined) continue;
      if (this.#tokens.get(record.taskId) === null) throw new TaskFencedError(record.taskId);
      const held = latest.get(record.taskId);
      if (!held || record.version > held.record.version) latest.set(record.taskId, { record, json: JSON.stringify(record) });
    }
    if (latest.size === 0) return;
    return this.#track(this.#putManyNow(pool, [...latest.values()]));
  }

  async #putManyNow(pool: pg.Pool, items: readonly { record: TaskRecord; json: string }[]): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw new Error(`cannot store tasks in ${this.description}: ${describePgError(error)}`, { cause: error });
    }
    let fenced: string[] = [];
    try {
      await client.query('BEGIN');
      const { refused } = await this.#updateRows(client, items);
      fenced = refused.length === 0 ? [] : await this.#fencedAmong(client, refused);
      await client.query(fenced.length === 0 ? 'COMMIT' : 'ROLLBACK');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw new Error(`cannot store tasks in ${this.description}: ${describePgError(error)}`, { cause: error });
    } finally {
      client.release();
    }
    if (fenced.length > 0) {
      // Rolled back: all or none. The fenced tasks are another instance's now (I-9): never written from here again.
      for (const taskId of fenced) this.#tokens.set(taskId, null);
      throw new TaskFencedError(fenced[0]!);
    }
    this.#commits++;
  }

  /**
   * One UPDATE for `items` (the newer versions land, fenced when this
   * instance holds a token for the task: I-9 across instances; an admin
   * write of a task it never ran is not). `refused`: the ids of items with a
   * token that were not written (purged, stale, or fenced).
   */
  async #updateRows(
    queryable: pg.Pool | pg.PoolClient,
    items: readonly { record: TaskRecord; json: string }[],
  ): Promise<{ written: Set<string>; refused: string[] }> {
    const tokens = items.map((item) => this.#tokens.get(item.record.taskId) ?? null);
    const result = await queryable.query<{ task_id: string }>(
      `UPDATE ${this.#q}.tasks AS t
       SET status = u.status, last_updated_at = u.updated, version = u.version, machine_version = u.machine, record = u.record
       FROM unnest($1::text[], $2::text[], $3::bigint[], $4::int[], $5::int[], $6::text[], $7::bigint[]) AS u(id, status, updated, version, machine, record, token)
       WHERE t.task_id = u.id AND t.version < u.version
         AND (u.token IS NULL OR (t.owner_instance = $8 AND t.fencing_token = u.token))
       RETURNING t.task_id`,
      [
        items.map((item) => item.record.taskId),
        items.map((item) => item.record.status),
        items.map((item) => item.record.lastUpdatedAt),
        items.map((item) => item.record.version),
        items.map((item) => item.record.machineVersion),
        items.map((item) => item.json),
        tokens,
        this.#instanceId,
      ],
    );
    const written = new Set(result.rows.map((row) => row.task_id));
    const refused = items.filter((item, i) => !written.has(item.record.taskId) && tokens[i] !== null).map((item) => item.record.taskId);
    return { written, refused };
  }

  /** Of the refused ids, those another instance owns now (fenced); the rest were purged or stale (ignored: latest wins). */
  async #fencedAmong(queryable: pg.Pool | pg.PoolClient, refused: readonly string[]): Promise<string[]> {
    const current = await queryable.query<{ task_id: string; owner_instance: string | null; fencing_token: string }>(
      `SELECT task_id, owner_instance, fencing_token FROM ${this.#q}.tasks WHERE task_id = ANY($1)`,
      [refused],
    );
    return current.rows
      .filter((row) => row.owner_instance !== this.#instanceId || row.fencing_token !== this.#tokens.get(row.task_id))
      .map((row) => row.task_id);
  }

  async get(taskId: string, owner?: string): Promise<TaskRecord | undefined> {
    const pool = this.#assertOpen();
    if (invalidIdReason(taskId) !== undefined) return undefined;
    // Issue 12.6: with an owner, another owner's record never leaves the database nor gets parsed.
    const result =
      owner === undefined
        ? await pool.query<{ record: string }>(`SELECT record FROM ${this.#q}.tasks WHERE task_id = $1`, [taskId])
        : await pool.query<{ record: string }>(`SELECT record FROM ${this.#q}.tasks WHERE task_id = $1 AND owner = $2`, [taskId, owner]);
    const row = result.rows[0];
    if (!row) {
      const set = await pool.query<{ reason: string; owner: string | null }>(
        `SELECT reason, owner FROM ${this.#q}.quarantine WHERE task_id = $1`,
        [taskId],
      );
      // Damaged only to its owner; any other principal gets what an unknown id gets (I-7).
      if (set.rows[0] && mayReportDamaged(set.rows[0].owner, owner)) throw new TaskDamagedError(taskId, set.rows[0].reason);
      return undefined;
    }
    try {
      return JSON.parse(row.record) as TaskRecord;
    } catch (error) {
      this.#damaged(taskId, error);
      throw new TaskDamagedError(taskId, (error as Error).message);
    }
  }

  /** Moves the row into `quarantine` in one statement: kept as stored, gone from `tasks`. */
  async quarantine(taskId: string, reason: string): Promise<boolean> {
    const pool = this.#assertOpen();
    if (invalidIdReason(taskId) !== undefined) return false;
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

  async listQuarantined(): Promise<QuarantinedRecord[]> {
    const pool = this.#assertOpen();
    const result = await pool.query<{ task_id: string; record: string; reason: string; quarantined_at: string; owner: string | null }>(
      `SELECT task_id, record, reason, quarantined_at, owner FROM ${this.#q}.quarantine ORDER BY quarantined_at, task_id`,
    );
    return result.rows.map((row) => ({
      taskId: row.task_id,
      reason: row.reason,
      quarantinedAt: Number(row.quarantined_at),
      stored: row.record,
      ...(row.owner === null ? {} : { owner: row.owner }),
    }));
  }

  /** A row that cannot be parsed: reported, and set aside (issue 13 item 3). */
  #damaged(taskId: string, error: unknown): void {
    if (this.#settingAside.has(taskId)) return;
    this.#onCorrupt(taskId, error instanceof Error ? error : new Error(String(error)));
    this.#settingAside.add(taskId);
    this.quarantine(taskId, error instanceof Error ? error.message : String(error))
      .catch((failure: unknown) => this.#onCorrupt(taskId, new Error(`could not quarantine it: ${(failure as Error).message}`)))
      .finally(() => this.#settingAside.delete(taskId));
  }

  async delete(taskId: string): Promise<boolean> {
    const pool = this.#assertOpen();
    if (invalidIdReason(taskId) !== undefined) return false;
    this.#tokens.delete(taskId);
    const result = await this.#track(pool.query(`DELETE FROM ${this.#q}.tasks WHERE task_id = $1`, [taskId]));
    return result.rowCount === 1;
  }

  async listNonTerminal(): Promise<TaskRecord[]> {
    const pool = this.#assertOpen();
    const result = await pool.query<{ task_id: string; record: string }>(
      `SELECT task_id, record FROM ${this.#q}.tasks WHERE status IN ${NON_TERMINAL}`,
    );
    return this.#parseRows(result.rows);
  }

  /**
   * Unfinished records page by page (start-up recovery, issue 13 item 6):
   * keyset pages by `task_id` over the partial index of unfinished rows
   * (migration 4) — one index range read per page, never an OFFSET, and
   * nothing read before it is consumed. Ids compare bytewise (`COLLATE "C"`),
   * so `task_id > last` continues exactly where the page ended; a task that
   * finishes meanwhile simply drops out of the index.
   */
  async *scanNonTerminal(pageSize: number): AsyncIterable<TaskRecord[]> {
    const size = Math.max(1, Math.floor(pageSize));
    let after = '';
    for (;;) {
      const pool = this.#assertOpen();
      const result = await pool.query<{ task_id: string; record: string }>(
        `SELECT task_id, record FROM ${this.#q}.tasks WHERE status IN ${NON_TERMINAL} AND task_id > $1 ORDER BY task_id LIMIT $2`,
        [after, size],
      );
      const rows = result.rows;
      if (rows.length === 0) return;
      after = rows[rows.length - 1]!.task_id;
      yield this.#parseRows(rows);
      if (rows.length < size) return;
    }
  }

  async listExpired(now: number, limit: number): Promise<string[]> {
    const pool = this.#assertOpen();
    const max = normalizeLimit(limit);
    if (max === 0) return [];
    const result = await pool.query<{ task_id: string }>(
      `SELECT task_id FROM ${this.#q}.tasks WHERE expires_at IS NOT NULL AND expires_at <= $1 ORDER BY expires_at, task_id LIMIT $2`,
      [now, max === Number.POSITIVE_INFINITY ? null : max],
    );
    return result.rows.map((row) => row.task_id);
  }

  async list(query: TaskListQuery = {}): Promise<TaskRecord[]> {
    const pool = this.#assertOpen();
    const limit = normalizeLimit(query.limit);
    const statuses = query.status === undefined ? undefined : [...new Set(query.status)];
    if (limit === 0 || statuses?.length === 0) return [];
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.owner !== undefined) where.push(`owner = $${params.push(query.owner)}`);
    if (statuses !== undefined) where.push(`status = ANY($${params.push(statuses)})`);
    params.push(limit === Number.POSITIVE_INFINITY ? null : limit);
    const result = await pool.query<{ task_id: string; record: string }>(
      `SELECT task_id, record FROM ${this.#q}.tasks ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, task_id LIMIT $${params.length}`,
      params,
    );
    // Ids ordered by UTF-8 bytes here, by UTF-16 units elsewhere: re-sort so every store answers alike.
    return this.#parseRows(result.rows).sort(compareNewestFirst);
  }

  // -------------------------------------------------------------------------------------------
  // TaskOwnership

  async join(): Promise<void> {
    const pool = this.#assertOpen();
    if (this.#tokens.size > 0 || (await this.#hasInstanceRow(pool))) {
      // Joining again after a lost lease: a new identity, so the old one's tasks are adopted (by anyone).
      this.#instanceId = randomUUID();
      this.#tokens.clear();
    }
    await pool.query(
      `INSERT INTO ${this.#q}.instances (instance_id, lease_expires_at) VALUES ($1, now() + $2 * interval '1 millisecond')`,
      [this.#instanceId, this.leaseMs],
    );
  }

  async renewLease(): Promise<boolean> {
    const pool = this.#assertOpen();
    // Only a lease that has not expired is extended: once expired, survivors may have claimed its tasks.
    const result = await pool.query(
      `UPDATE ${this.#q}.instances SET lease_expires_at = now() + $2 * interval '1 millisecond' WHERE instance_id = $1 AND lease_expires_at >= now()`,
      [this.#instanceId, this.leaseMs],
    );
    return result.rowCount === 1;
  }

  async leave(): Promise<void> {
    const pool = this.#assertOpen();
    await pool.query(`UPDATE ${this.#q}.instances SET lease_expires_at = '-infinity' WHERE instance_id = $1`, [this.#instanceId]);
    await pool.query(`SELECT pg_notify($1, '*')`, [`${this.schema}.commands`]);
  }

  async claimExpired(): Promise<TaskRecord[]> {
    const pool = this.#assertOpen();
    // Every call: instances whose lease expired (a small table). Now and then also owners with no
    // instance row at all (a row deleted by hand, tasks inserted unowned): that query reads every
    // unfinished task, too much for each heartbeat.
    const scanOrphans = Date.now() - this.#lastOrphanScan >= ORPHAN_SCAN_INTERVAL_MS;
    if (scanOrphans) this.#lastOrphanScan = Date.now();
    const dead = await pool.query<{ owner_instance: string | null }>(
      scanOrphans
        ? `SELECT DISTINCT t.owner_instance FROM ${this.#q}.tasks t
           LEFT JOIN ${this.#q}.instances i ON i.instance_id = t.owner_instance
           WHERE t.status IN ${NON_TERMINAL} AND t.owner_instance IS DISTINCT FROM $1
             AND (i.instance_id IS NULL OR i.lease_expires_at < now())`
        : `SELECT instance_id AS owner_instance FROM ${this.#q}.instances WHERE lease_expires_at < now() AND instance_id <> $1`,
      [this.#instanceId],
    );
    const claimed: TaskRecord[] = [];
    for (const { owner_instance: deadId } of dead.rows) {
      // One UPDATE per dead owner: a row another survivor claimed first fails the re-checked
      // `owner_instance = dead` condition after the row lock, so each task goes to exactly one claimer.
      const result = await this.#track(
        pool.query<{ task_id: string; record: string; fencing_token: string }>(
          `UPDATE ${this.#q}.tasks SET owner_instance = $1, fencing_token = fencing_token + 1
           WHERE status IN ${NON_TERMINAL} AND ${deadId === null ? 'owner_instance IS NULL' : 'owner_instance = $2'}
           RETURNING task_id, record, fencing_token`,
          deadId === null ? [this.#instanceId] : [this.#instanceId, deadId],
        ),
      );
      for (const row of result.rows) {
        this.#tokens.set(row.task_id, row.fencing_token);
        claimed.push(...this.#parseRows([row]));
      }
    }
    // A dead instance with nothing left to adopt is forgotten.
    await pool.query(
      `DELETE FROM ${this.#q}.instances i WHERE i.lease_expires_at < now()
       AND NOT EXISTS (SELECT 1 FROM ${this.#q}.tasks t WHERE t.owner_instance = i.instance_id AND t.status IN ${NON_TERMINAL})`,
    );
    return claimed;
  }

  async sendCommand(taskId: string, command: TaskCommand): Promise<boolean> {
    const pool = this.#assertOpen();
    if (invalidIdReason(taskId) !== undefined) return false;
    const result = await this.#track(
      pool.query(
        `WITH queued AS (
           INSERT INTO ${this.#q}.task_commands (task_id, target_instance, command)
           SELECT task_id, owner_instance, $2 FROM ${this.#q}.tasks WHERE task_id = $1 AND status IN ${NON_TERMINAL} AND owner_instance IS NOT NULL
           RETURNING target_instance)
         SELECT pg_notify($3, target_instance) FROM queued`,
        [taskId, JSON.stringify(command), `${this.schema}.commands`],
      ),
    );
    return result.rowCount === 1;
  }

  async takeCommands(): Promise<QueuedTaskCommand[]> {
    const pool = this.#assertOpen();
    // Commands whose task moved (adopted) follow it; commands of finished or purged tasks are dropped.
    await pool.query(
      `DELETE FROM ${this.#q}.task_commands c WHERE NOT EXISTS (
         SELECT 1 FROM ${this.#q}.tasks t WHERE t.task_id = c.task_id AND t.status IN ${NON_TERMINAL})`,
    );
    const moved = await pool.query<{ target_instance: string }>(
      `UPDATE ${this.#q}.task_commands c SET target_instance = t.owner_instance FROM ${this.#q}.tasks t
       WHERE t.task_id = c.task_id AND t.owner_instance IS NOT NULL AND c.target_instance <> t.owner_instance
       RETURNING c.target_instance`,
    );
    for (const target of new Set(moved.rows.map((row) => row.target_instance))) {
      if (target !== this.#instanceId) await pool.query(`SELECT pg_notify($1, $2)`, [`${this.schema}.commands`, target]);
    }
    const taken = await pool.query<{ id: string; task_id: string; command: string }>(
      `DELETE FROM ${this.#q}.task_commands WHERE target_instance = $1 RETURNING id, task_id, command`,
      [this.#instanceId],
    );
    return taken.rows
      .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1))
      .map((row) => ({ taskId: row.task_id, command: JSON.parse(row.command) as TaskCommand }));
  }

  subscribe(handlers: TaskFeedHandlers): () => void {
    this.#assertOpen();
    if (this.#feed) throw new Error(`${this.description}: the change feed has a subscriber already`);
    const feed = new FeedConnection({
      url: this.#url,
      applicationName: `${this.#applicationName ?? `taskvisor ${this.#instanceId}`} (listen)`,
      channels: [`${this.schema}.tasks`, `${this.schema}.commands`],
      onNotification: (channel, payload) => {
        if (channel === `${this.schema}.commands`) {
          if (payload === this.#instanceId || payload === '*') handlers.onCommand();
          return;
        }
        const [taskId, version, instanceId] = payload.split(' ');
        if (!taskId || !version) return;
        handlers.onChange({ taskId, version: Number(version), instanceId: instanceId || undefined });
      },
      onResync: () => handlers.onResync(),
      onError: this.#onFeedError,
    });
    this.#feed = feed;
    feed.start();
    return () => {
      if (this.#feed === feed) this.#feed = undefined;
      void feed.close();
    };
  }

  // -------------------------------------------------------------------------------------------

  async #flushCreates(): Promise<void> {
    const batch = this.#createQueue;
    this.#createQueue = [];
    const pool = this.#pool;
    if (batch.length === 0) return;
    if (!pool) {
      for (const item of batch) item.reject(new Error(`${this.description}: store is closed`));
      return;
    }
    // The first create of an id in the batch goes to the database; later ones of the same id are duplicates.
    const first = new Map<string, QueuedWrite>();
    const duplicates: QueuedWrite[] = [];
    for (const item of batch) {
      if (first.has(item.record.taskId)) duplicates.push(item);
      else first.set(item.record.taskId, item);
    }
    const items = [...first.values()];
    try {
      const cols = {
        id: [] as string[],
        owner: [] as string[],
        tool: [] as string[],
        status: [] as string[],
        created: [] as number[],
        updated: [] as number[],
        ttl: [] as (number | null)[],
        version: [] as number[],
        machine: [] as number[],
        record: [] as string[],
      };
      for (const { record, json } of items) {
        cols.id.push(record.taskId);
        cols.owner.push(record.owner);
        cols.tool.push(record.tool);
        cols.status.push(record.status);
        cols.created.push(record.createdAt);
        cols.updated.push(record.lastUpdatedAt);
        cols.ttl.push(record.ttlMs);
        cols.version.push(record.version);
        cols.machine.push(record.machineVersion);
        cols.record.push(json);
      }
      const result = await pool.query<{ task_id: string }>(
        `INSERT INTO ${this.#q}.tasks (task_id, owner, tool, status, created_at, last_updated_at, ttl_ms, version, machine_version, record, owner_instance, fencing_token)
         SELECT u.*, $11, 1 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::int[], $9::int[], $10::text[]) AS u
         ON CONFLICT (task_id) DO NOTHING RETURNING task_id`,
        [
          cols.id,
          cols.owner,
          cols.tool,
          cols.status,
          cols.created,
          cols.updated,
          cols.ttl,
          cols.version,
          cols.machine,
          cols.record,
          this.#instanceId,
        ],
      );
      this.#commits++;
      const inserted = new Set(result.rows.map((row) => row.task_id));
      for (const item of items) {
        if (inserted.has(item.record.taskId)) {
          this.#tokens.set(item.record.taskId, '1');
          item.resolve();
        } else item.reject(new TaskExistsError(item.record.taskId));
      }
      for (const item of duplicates) item.reject(new TaskExistsError(item.record.taskId));
    } catch (error) {
      const failure = new Error(`cannot store tasks in ${this.description}: ${describePgError(error)}`, { cause: error });
      for (const item of batch) item.reject(failure);
    }
  }

  async #flushPuts(): Promise<void> {
    const batch = this.#putQueue;
    this.#putQueue = [];
    const pool = this.#pool;
    if (batch.length === 0) return;
    if (!pool) {
      for (const item of batch) item.reject(new Error(`${this.description}: store is closed`));
      return;
    }
    // One row per task: the highest version (a lower one would be ignored anyway: latest wins);
    // every caller of that task gets the outcome of that write.
    const latest = new Map<string, QueuedWrite>();
    for (const item of batch) {
      const held = latest.get(item.record.taskId);
      if (!held || item.record.version > held.record.version) latest.set(item.record.taskId, item);
    }
    const items = [...latest.values()];
    const settle = (taskId: string, outcome: Error | undefined) => {
      for (const item of batch) if (item.record.taskId === taskId) outcome ? item.reject(outcome) : item.resolve();
    };
    try {
      const { written, refused } = await this.#updateRows(pool, items);
      this.#commits++;
      for (const item of items)
        if (written.has(item.record.taskId) || !refused.includes(item.record.taskId)) settle(item.record.taskId, undefined);
      if (refused.length === 0) return;
      // Refused: purged or stale (ignored, latest wins), or claimed by another instance (fenced).
      const fenced = new Set(await this.#fencedAmong(pool, refused));
      for (const taskId of refused) {
        if (fenced.has(taskId)) {
          this.#tokens.set(taskId, null);
          settle(taskId, new TaskFencedError(taskId));
        } else settle(taskId, undefined);
      }
    } catch (error) {
      const failure = new Error(`cannot store tasks in ${this.description}: ${describePgError(error)}`, { cause: error });
      for (const item of batch) item.reject(failure);
    }
  }

  #track<T>(promise: Promise<T>): Promise<T> {
    this.#inflight.add(promise);
    const done = () => this.#inflight.delete(promise);
    promise.then(done, done);
    return promise;
  }

  async #hasInstanceRow(pool: pg.Pool): Promise<boolean> {
    const result = await pool.query(`SELECT 1 FROM ${this.#q}.instances WHERE instance_id = $1`, [this.#instanceId]);
    return (result.rowCount ?? 0) > 0;
  }

  #assertOpen(): pg.Pool {
    if (this.#state !== 'open' || !this.#pool)
      throw new Error(`${this.description}: store is ${this.#state === 'closed' ? 'closed' : 'not open'}`);
    return this.#pool;
  }

  #parseRows(rows: readonly { task_id: string; record: string }[]): TaskRecord[] {
    const out: TaskRecord[] = [];
    for (const row of rows) {
      try {
        out.push(JSON.parse(row.record) as TaskRecord);
      } catch (error) {
        this.#damaged(row.task_id, error);
      }
    }
    return out;
  }
}

function invalidIdReason(taskId: unknown): string | undefined {
  const reason = invalidTaskIdReason(taskId);
  if (reason !== undefined) return reason;
  // PostgreSQL text cannot hold NUL.
  return (taskId as string).includes('\u0000') ? 'task ids containing NUL cannot be stored in PostgreSQL' : undefined;
}
