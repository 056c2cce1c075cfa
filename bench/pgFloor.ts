/**
 * PostgreSQL's own floor for what a durable create must do: one single-row
 * INSERT of the row a create writes (the store's own table, migrated the same
 * way, the same columns and a record of the same bytes), committed on its own
 * with `synchronous_commit = on` (the statement is its transaction; the
 * commit waits for the WAL flush, as the store's does: I-1). Closed loop:
 * `concurrency` workers over a node-postgres pool of the size the store's
 * bench server uses, each sending its next INSERT as soon as the previous one
 * committed. No HTTP, no MCP, no batching of its own: PostgreSQL's group
 * flush of concurrent commits (one fsync for the commits waiting together)
 * is the only sharing, so the figure is what the server gives a plain client.
 *
 * Runs in the benchmark's own process, like the HTTP load generator.
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { migrate } from '../src/store/postgres/migrations.js';
import type { LoadResult } from './loadgen.js';
import { median, summarize } from './stats.js';

/** The row of a create: the columns the store fills, and its record bytes (a real record read back from the store). */
export interface FloorRow {
  owner: string;
  tool: string;
  status: string;
  ttlMs: number | null;
  record: string;
}

export interface PgFloor {
  /** One closed-loop window at `concurrency`; throughput over the window, latencies of the commits ending inside it. */
  run(this: void, concurrency: number, warmupMs: number, durationMs: number): Promise<LoadResult>;
  close(): Promise<void>;
}

/** Connects a pool of `poolSize` to `url`, migrates `schema` as the store does, and keeps it for {@link PgFloor.run}. */
export async function openPgFloor(options: { url: string; schema: string; poolSize: number; row: FloorRow }): Promise<PgFloor> {
  const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize, application_name: 'taskvisor bench floor' });
  pool.on('error', () => undefined);
  await migrate(pool, options.schema);
  // The store relies on the server's default; the floor says it outright.
  pool.on('connect', (client) => void client.query('SET synchronous_commit = on').catch(() => undefined));
  const q = pg.escapeIdentifier(options.schema);
  const sql = `INSERT INTO ${q}.tasks (task_id, owner, tool, status, created_at, last_updated_at, ttl_ms, version, machine_version, record, owner_instance, fencing_token)
     VALUES ($1, $2, $3, $4, $5, $5, $6, 1, 1, $7, 'floor', 1)`;
  const { owner, tool, status, ttlMs } = options.row;
  // The record's own id replaced per row, so every row carries the same number of bytes a create stores.
  const [head, tail] = splitRecord(options.row.record);
  let counter = 0;
  const insert = (): Promise<unknown> => {
    const taskId = `floor-${process.pid}-${(counter++).toString(36).padStart(10, '0')}`;
    return pool.query({ text: sql, values: [taskId, owner, tool, status, Date.now(), ttlMs, `${head}${taskId}${tail}`] });
  };
  await Promise.all(Array.from({ length: options.poolSize }, () => insert()));

  return {
    async run(concurrency, warmupMs, durationMs) {
      const latencies: number[] = [];
      let errors = 0;
      let firstError: string | undefined;
      const windowStart = performance.now() + warmupMs;
      const windowEnd = windowStart + durationMs;
      const worker = async () => {
        while (performance.now() < windowEnd) {
          const start = performance.now();
          try {
            await insert();
          } catch (error) {
            errors++;
            firstError ??= (error as Error).message;
            continue;
          }
          const end = performance.now();
          if (end >= windowStart && end < windowEnd) latencies.push(end - start);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, () => worker()));
      const summary = summarize(latencies);
      const rate = latencies.length / (durationMs / 1000);
      return {
        concurrency,
        requests: latencies.length,
        errors,
        ...(firstError !== undefined ? { firstError } : {}),
        throughput: median([rate]),
        throughputAll: rate,
        sliceThroughputs: [rate],
        latency: { mean: summary.mean, p50: summary.p50, p90: summary.p90, p99: summary.p99, max: summary.max },
        windowMs: durationMs,
        samples: latencies,
      };
    },
    async close() {
      await pool.end().catch(() => undefined);
    },
  };
}

/** The record text around its task id (`"taskId":"…"`), or the whole text and nothing when it has none. */
function splitRecord(record: string): [string, string] {
  const match = /"taskId":"[^"]*"/.exec(record);
  if (!match) return [record, ''];
  return [`${record.slice(0, match.index)}"taskId":"`, `"${record.slice(match.index + match[0].length)}`];
}
