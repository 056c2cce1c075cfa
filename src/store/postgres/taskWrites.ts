/**
 * The Postgres store's task writes: a batch of creates as one multi-row
 * INSERT, a batch of puts as one fenced UPDATE, and which refused puts were
 * fenced (another instance owns the task now).
 */
import type pg from 'pg';
import type { TaskRecord } from '../../tasks/TaskRecord.js';
import type { GroupCommitOptions } from '../kit/GroupCommit.js';

/** A record to write, serialized when the caller handed it in (it may change its object afterwards). */
export interface TaskWrite {
  record: TaskRecord;
  json: string;
}

/**
 * The bounds of the create groups: at most 256 creates in one INSERT (a few
 * MB of records at most in one statement); creates do not depend on each
 * other, so several groups commit at once — (pool − 2) / 2, at least one (4
 * with the default pool of 10) — and a create handed in while a group
 * commits starts its own instead of waiting. The other connections stay free
 * for the puts, reads and the lease renewal (a starved renewal loses the lease).
 */
export const createGroupBounds = (poolSize: number): GroupCommitOptions => ({
  maxBatch: 256,
  maxInFlight: Math.max(1, Math.floor((poolSize - 2) / 2)),
});

/** The columns a create fills, in the order of both INSERT forms below. */
const INSERT_COLUMNS =
  'task_id, owner, tool, status, created_at, last_updated_at, ttl_ms, version, machine_version, record, owner_instance, fencing_token';

/**
 * Inserts `items` in one statement (one commit); resolves to the ids inserted
 * (the others were taken). A lone create (c=1) goes as a plain one-row
 * VALUES: PostgreSQL plans it faster than the `unnest` of ten arrays a batch
 * needs, and nothing is encoded as an array.
 */
export async function insertTasks(pool: pg.Pool, q: string, items: readonly TaskWrite[], instanceId: string): Promise<Set<string>> {
  if (items.length === 1) {
    const { record, json } = items[0]!;
    const result = await pool.query<{ task_id: string }>(
      `INSERT INTO ${q}.tasks (${INSERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 1)
       ON CONFLICT (task_id) DO NOTHING RETURNING task_id`,
      [
        record.taskId,
        record.owner,
        record.tool,
        record.status,
        record.createdAt,
        record.lastUpdatedAt,
        record.ttlMs,
        record.version,
        record.machineVersion,
        json,
        instanceId,
      ],
    );
    return new Set(result.rows.map((row) => row.task_id));
  }
  const column = <T>(pick: (record: TaskRecord) => T) => items.map((item) => pick(item.record));
  const result = await pool.query<{ task_id: string }>(
    `INSERT INTO ${q}.tasks (${INSERT_COLUMNS})
     SELECT u.*, $11, 1 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::int[], $9::int[], $10::text[]) AS u
     ON CONFLICT (task_id) DO NOTHING RETURNING task_id`,
    [
      column((record) => record.taskId),
      column((record) => record.owner),
      column((record) => record.tool),
      column((record) => record.status),
      column((record) => record.createdAt),
      column((record) => record.lastUpdatedAt),
      column((record) => record.ttlMs),
      column((record) => record.version),
      column((record) => record.machineVersion),
      items.map((item) => item.json),
      instanceId,
    ],
  );
  return new Set(result.rows.map((row) => row.task_id));
}

/**
 * One UPDATE for `items` (the newer versions land, fenced when this
 * instance holds a token for the task: I-9 across instances; an admin write
 * of a task it never ran is not). `refused`: the ids of items with a token
 * that were not written (purged, stale, or fenced).
 */
export async function updateTasks(
  queryable: pg.Pool | pg.PoolClient,
  q: string,
  items: readonly TaskWrite[],
  tokens: ReadonlyMap<string, string | null>,
  instanceId: string,
): Promise<{ written: Set<string>; refused: string[] }> {
  const held = items.map((item) => tokens.get(item.record.taskId) ?? null);
  const result = await queryable.query<{ task_id: string }>(
    `UPDATE ${q}.tasks AS t
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
      held,
      instanceId,
    ],
  );
  const written = new Set(result.rows.map((row) => row.task_id));
  const refused = items.filter((item, i) => !written.has(item.record.taskId) && held[i] !== null).map((item) => item.record.taskId);
  return { written, refused };
}

/** Of the refused ids, those another instance owns now (fenced); the rest were purged or stale (ignored: latest wins). */
export async function fencedAmong(
  queryable: pg.Pool | pg.PoolClient,
  q: string,
  refused: readonly string[],
  tokens: ReadonlyMap<string, string | null>,
  instanceId: string,
): Promise<string[]> {
  const current = await queryable.query<{ task_id: string; owner_instance: string | null; fencing_token: string }>(
    `SELECT task_id, owner_instance, fencing_token FROM ${q}.tasks WHERE task_id = ANY($1)`,
    [refused],
  );
  return current.rows
    .filter((row) => row.owner_instance !== instanceId || row.fencing_token !== tokens.get(row.task_id))
    .map((row) => row.task_id);
}

/**
 * Of each task's creates, the first (the later ones are duplicates), in id
 * order: groups committing together take their rows' locks in one order, so
 * two of them holding the same ids never deadlock.
 */
export function firstPerTask<W extends TaskWrite>(writes: readonly W[]): Map<string, W> {
  const first = new Map<string, W>();
  for (const write of writes) if (!first.has(write.record.taskId)) first.set(write.record.taskId, write);
  return new Map([...first].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Of each task's writes, the one with the highest version (a lower one would be ignored anyway: latest wins). */
export function latestPerTask<W extends TaskWrite>(writes: readonly W[]): W[] {
  const latest = new Map<string, W>();
  for (const write of writes) {
    const held = latest.get(write.record.taskId);
    if (!held || write.record.version > held.record.version) latest.set(write.record.taskId, write);
  }
  return [...latest.values()];
}
