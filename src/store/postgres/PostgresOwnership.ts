/**
 * The Postgres store's {@link TaskOwnership}: instance leases, adoption of a
 * dead instance's tasks with a new fencing token, command routing and the
 * change feed over LISTEN/NOTIFY.
 *
 * Change feed: a trigger NOTIFYs `"<schema>.tasks"` with `taskId version
 * instance` on every update (small payload: the receiver reads the row);
 * commands for an instance are rows in `task_commands` plus a NOTIFY on
 * `"<schema>.commands"` carrying the target instance id.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { NON_TERMINAL_STATUSES } from '../../core/statuses.js';
import type { TaskRecord } from '../../tasks/TaskRecord.js';
import type { QueuedTaskCommand, TaskCommand, TaskFeedHandlers, TaskOwnership } from '../TaskStore.js';
import { FeedConnection } from './FeedConnection.js';

/** How often `claimExpired` also looks for unfinished tasks whose owner has no instance row. */
const ORPHAN_SCAN_INTERVAL_MS = 60_000;

export const NON_TERMINAL = `(${NON_TERMINAL_STATUSES.map((status) => `'${status}'`).join(', ')})`;

/** What the ownership shares with its store. */
export interface OwnershipHost {
  readonly schema: string;
  /** The schema, quoted for SQL. */
  readonly q: string;
  readonly leaseMs: number;
  readonly url: string;
  readonly applicationName: string | undefined;
  readonly onFeedError: (error: Error) => void;
  /** Fencing tokens of the tasks this instance created or claimed (`null`: taken over, writes refused). */
  readonly tokens: Map<string, string | null>;
  /** The pool, once the store is open (throws otherwise). */
  pool(): pg.Pool;
  /** Keeps `close()` waiting for a write in flight. */
  track<T>(promise: Promise<T>): Promise<T>;
  /** The rows' records as the store checks every record: damaged ones are set aside, not returned. */
  records(rows: readonly { task_id: string; record: string }[]): Promise<TaskRecord[]>;
}

export class PostgresOwnership implements TaskOwnership {
  #instanceId: string;
  #lastOrphanScan = Number.NEGATIVE_INFINITY;
  #feed: FeedConnection | undefined;

  constructor(
    private readonly host: OwnershipHost,
    instanceId: string,
  ) {
    this.#instanceId = instanceId;
  }

  get instanceId(): string {
    return this.#instanceId;
  }

  get leaseMs(): number {
    return this.host.leaseMs;
  }

  async join(): Promise<void> {
    const pool = this.host.pool();
    if (this.host.tokens.size > 0 || (await this.#hasInstanceRow(pool))) {
      // Joining again after a lost lease: a new identity, so the old one's tasks are adopted (by anyone).
      this.#instanceId = randomUUID();
      this.host.tokens.clear();
    }
    await pool.query(
      `INSERT INTO ${this.host.q}.instances (instance_id, lease_expires_at) VALUES ($1, now() + $2 * interval '1 millisecond')`,
      [this.#instanceId, this.host.leaseMs],
    );
  }

  async renewLease(): Promise<boolean> {
    // Only a lease that has not expired is extended: once expired, survivors may have claimed its tasks.
    const result = await this.host
      .pool()
      .query(
        `UPDATE ${this.host.q}.instances SET lease_expires_at = now() + $2 * interval '1 millisecond' WHERE instance_id = $1 AND lease_expires_at >= now()`,
        [this.#instanceId, this.host.leaseMs],
      );
    return result.rowCount === 1;
  }

  async liveInstances(): Promise<number> {
    const result = await this.host
      .pool()
      .query<{ count: string }>(`SELECT count(*) AS count FROM ${this.host.q}.instances WHERE lease_expires_at >= now()`);
    return Math.max(1, Number(result.rows[0]?.count ?? 1));
  }

  async leave(): Promise<void> {
    const pool = this.host.pool();
    await pool.query(`UPDATE ${this.host.q}.instances SET lease_expires_at = '-infinity' WHERE instance_id = $1`, [this.#instanceId]);
    await pool.query(`SELECT pg_notify($1, '*')`, [`${this.host.schema}.commands`]);
  }

  async claimExpired(): Promise<TaskRecord[]> {
    const { q } = this.host;
    const pool = this.host.pool();
    // Every call: instances whose lease expired (a small table). Now and then also owners with no
    // instance row at all (a row deleted by hand, tasks inserted unowned): that query reads every
    // unfinished task, too much for each heartbeat.
    const scanOrphans = Date.now() - this.#lastOrphanScan >= ORPHAN_SCAN_INTERVAL_MS;
    if (scanOrphans) this.#lastOrphanScan = Date.now();
    const dead = await pool.query<{ owner_instance: string | null }>(
      scanOrphans
        ? `SELECT DISTINCT t.owner_instance FROM ${q}.tasks t
           LEFT JOIN ${q}.instances i ON i.instance_id = t.owner_instance
           WHERE t.status IN ${NON_TERMINAL} AND t.owner_instance IS DISTINCT FROM $1
             AND (i.instance_id IS NULL OR i.lease_expires_at < now())`
        : `SELECT instance_id AS owner_instance FROM ${q}.instances WHERE lease_expires_at < now() AND instance_id <> $1`,
      [this.#instanceId],
    );
    const claimed: TaskRecord[] = [];
    for (const { owner_instance: deadId } of dead.rows) {
      // One UPDATE per dead owner: a row another survivor claimed first fails the re-checked
      // `owner_instance = dead` condition after the row lock, so each task goes to exactly one claimer.
      const result = await this.host.track(
        pool.query<{ task_id: string; record: string; fencing_token: string }>(
          `UPDATE ${q}.tasks SET owner_instance = $1, fencing_token = fencing_token + 1
           WHERE status IN ${NON_TERMINAL} AND ${deadId === null ? 'owner_instance IS NULL' : 'owner_instance = $2'}
           RETURNING task_id, record, fencing_token`,
          deadId === null ? [this.#instanceId] : [this.#instanceId, deadId],
        ),
      );
      for (const row of result.rows) this.host.tokens.set(row.task_id, row.fencing_token);
      claimed.push(...(await this.host.records(result.rows)));
    }
    // A dead instance with nothing left to adopt is forgotten.
    await pool.query(
      `DELETE FROM ${q}.instances i WHERE i.lease_expires_at < now()
       AND NOT EXISTS (SELECT 1 FROM ${q}.tasks t WHERE t.owner_instance = i.instance_id AND t.status IN ${NON_TERMINAL})`,
    );
    return claimed;
  }

  /** `taskId` must be one the store can hold (the store checks it first). */
  async sendCommand(taskId: string, command: TaskCommand): Promise<boolean> {
    const { q, schema } = this.host;
    const result = await this.host.track(
      this.host.pool().query(
        `WITH queued AS (
           INSERT INTO ${q}.task_commands (task_id, target_instance, command)
           SELECT task_id, owner_instance, $2 FROM ${q}.tasks WHERE task_id = $1 AND status IN ${NON_TERMINAL} AND owner_instance IS NOT NULL
           RETURNING target_instance)
         SELECT pg_notify($3, target_instance) FROM queued`,
        [taskId, JSON.stringify(command), `${schema}.commands`],
      ),
    );
    return result.rowCount === 1;
  }

  async takeCommands(): Promise<QueuedTaskCommand[]> {
    const { q, schema } = this.host;
    const pool = this.host.pool();
    // Commands whose task moved (adopted) follow it; commands of finished or purged tasks are dropped.
    await pool.query(
      `DELETE FROM ${q}.task_commands c WHERE NOT EXISTS (
         SELECT 1 FROM ${q}.tasks t WHERE t.task_id = c.task_id AND t.status IN ${NON_TERMINAL})`,
    );
    const moved = await pool.query<{ target_instance: string }>(
      `UPDATE ${q}.task_commands c SET target_instance = t.owner_instance FROM ${q}.tasks t
       WHERE t.task_id = c.task_id AND t.owner_instance IS NOT NULL AND c.target_instance <> t.owner_instance
       RETURNING c.target_instance`,
    );
    for (const target of new Set(moved.rows.map((row) => row.target_instance))) {
      if (target !== this.#instanceId) await pool.query(`SELECT pg_notify($1, $2)`, [`${schema}.commands`, target]);
    }
    const taken = await pool.query<{ id: string; task_id: string; command: string }>(
      `DELETE FROM ${q}.task_commands WHERE target_instance = $1 RETURNING id, task_id, command`,
      [this.#instanceId],
    );
    return taken.rows
      .sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1))
      .map((row) => ({ taskId: row.task_id, command: JSON.parse(row.command) as TaskCommand }));
  }

  subscribe(handlers: TaskFeedHandlers): () => void {
    const { schema } = this.host;
    this.host.pool();
    if (this.#feed) throw new Error(`postgres schema ${schema}: the change feed has a subscriber already`);
    const feed = new FeedConnection({
      url: this.host.url,
      applicationName: `${this.host.applicationName ?? `taskvisor ${this.#instanceId}`} (listen)`,
      channels: [`${schema}.tasks`, `${schema}.commands`],
      onNotification: (channel, payload) => {
        if (channel === `${schema}.commands`) {
          if (payload === this.#instanceId || payload === '*') handlers.onCommand();
          return;
        }
        const [taskId, version, instanceId] = payload.split(' ');
        if (!taskId || !version) return;
        handlers.onChange({ taskId, version: Number(version), instanceId: instanceId || undefined });
      },
      onResync: () => handlers.onResync(),
      onError: this.host.onFeedError,
    });
    this.#feed = feed;
    feed.start();
    return () => {
      if (this.#feed === feed) this.#feed = undefined;
      void feed.close();
    };
  }

  /** Stops the change feed (the store is closing). */
  async close(): Promise<void> {
    await this.#feed?.close();
    this.#feed = undefined;
  }

  async #hasInstanceRow(pool: pg.Pool): Promise<boolean> {
    const result = await pool.query(`SELECT 1 FROM ${this.host.q}.instances WHERE instance_id = $1`, [this.#instanceId]);
    return (result.rowCount ?? 0) > 0;
  }
}
