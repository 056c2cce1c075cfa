/**
 * Seeding stores quickly with realistic records.
 *
 * Templates come from real tasks run through a real runtime (HTTP entry,
 * in-process, memory store): a `completed` record (no snapshot) and a
 * `working` record with a real persisted actor snapshot. Clones get a fresh
 * id everywhere the template's id appeared (record, context, invoke inputs).
 *
 * - lowdb: record files written directly, in the store's own layout
 *   (`locateTask` from `src/store/taskFiles.ts`), compact JSON as
 *   `DurableJsonFile` writes it, without fsync.
 * - sqlite: through the store's own API, all `create` calls of a chunk issued
 *   in one tick: its group commit turns each chunk into one transaction.
 * - postgres: the same, its group commit making each chunk one multi-row insert.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createHttpEntry } from '../src/transports/index.js';
import { createRuntime, silentLogger, type TaskRecord, type TaskStore, type TaskStoreConfig } from '../src/index.js';
import { createTaskStore, MemoryTaskStore } from '../src/store/index.js';
import { locateTask } from '../src/store/taskFiles.js';
import { encodeRequest, parseReply, type Json } from './protocol.js';
import { registerBenchTools } from './tools.js';

/** Far ttl for seeded tasks (30 days): nothing expires during a run. */
export const FAR_TTL_MS = 30 * 24 * 3_600_000;

export interface Templates {
  completed: TaskRecord;
  working: TaskRecord;
}

/** Runs two real tasks (`bench_work` to completion, `bench_wait` left working) and returns their stored records. */
export async function captureTemplates(): Promise<Templates> {
  const runtime = createRuntime({ store: new MemoryTaskStore(), ttlMs: FAR_TTL_MS, reapIntervalMs: 0, logger: silentLogger });
  registerBenchTools(runtime);
  await runtime.start();
  const entry = createHttpEntry(runtime, { allowedHosts: false });
  const call = async (name: string, args: Json): Promise<string> => {
    const { headers, body } = encodeRequest(1, { method: 'tools/call', params: { name, arguments: args } });
    const response = await entry.fetch(new Request('http://127.0.0.1/mcp', { method: 'POST', headers, body: body.toString('utf8') }));
    const reply = parseReply(response.headers.get('content-type') ?? '', await response.text());
    const taskId = reply?.result?.taskId;
    if (typeof taskId !== 'string') throw new Error(`capture: ${name} did not create a task: ${JSON.stringify(reply)}`);
    return taskId;
  };
  try {
    const doneId = await call('bench_work', { ms: 0 });
    const waitId = await call('bench_wait', {});
    let completed: TaskRecord | undefined;
    for (let i = 0; i < 200 && completed?.status !== 'completed'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      await runtime.flushed();
      completed = await runtime.store.get(doneId);
    }
    await runtime.flushed();
    const working = await runtime.store.get(waitId);
    if (completed?.status !== 'completed' || working?.status !== 'working' || working.snapshot === undefined) {
      throw new Error(`capture: unexpected records ${JSON.stringify({ completed, working })}`);
    }
    return { completed, working };
  } finally {
    await runtime.close();
  }
}

/** A clone factory: each call returns the template with a new 32-hex id. */
export function cloner(template: TaskRecord): () => { taskId: string; json: string } {
  const json = JSON.stringify(template);
  const parts = json.split(template.taskId);
  return () => {
    const taskId = randomBytes(16).toString('hex');
    return { taskId, json: parts.join(taskId) };
  };
}

async function mapLimit<I>(items: readonly I[], limit: number, fn: (item: I) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++] as I);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Writes `n` clones of `template` as record files of a lowdb store at `dir` (no fsync). Returns ms taken. */
export async function seedLowdb(dir: string, template: TaskRecord, n: number): Promise<number> {
  const started = performance.now();
  const tasksDir = join(dir, 'tasks');
  const clone = cloner(template);
  const files: Array<{ file: string; json: string }> = [];
  const shards = new Set<string>();
  for (let i = 0; i < n; i++) {
    const { taskId, json } = clone();
    const location = locateTask(tasksDir, taskId)!;
    shards.add(location.shardDir);
    files.push({ file: location.file, json });
  }
  for (const shard of shards) await mkdir(shard, { recursive: true, mode: 0o700 });
  await mapLimit(files, 64, ({ file, json }) => writeFile(file, json, { mode: 0o600 }));
  return performance.now() - started;
}

/** The `sqlite` store config, typed loosely so this compiles whether or not the store exists. */
export function sqliteConfig(file: string): TaskStoreConfig {
  return { kind: 'sqlite', file } as unknown as TaskStoreConfig;
}

/** Whether `createTaskStore({ kind: 'sqlite', file })` exists and its driver loads. */
export async function sqliteAvailable(): Promise<{ ok: true } | { ok: false; why: string }> {
  let store: TaskStore;
  try {
    store = createTaskStore(sqliteConfig(':memory:'));
  } catch (error) {
    return { ok: false, why: (error as Error).message };
  }
  try {
    await store.open();
    await store.close();
    return { ok: true };
  } catch (error) {
    return { ok: false, why: (error as Error).message };
  }
}

/** Inserts `n` clones of `template` into the sqlite store at `file` through its API (one transaction per chunk). Returns ms taken. */
export function seedSqlite(file: string, template: TaskRecord, n: number, chunk = 25_000): Promise<number> {
  return seedThroughApi(sqliteConfig(file), template, n, chunk);
}

/** Inserts `n` clones of `template` into a store through its API, all creates of a chunk in one tick (its group commit). Returns ms taken. */
export async function seedThroughApi(config: TaskStoreConfig, template: TaskRecord, n: number, chunk = 25_000): Promise<number> {
  const started = performance.now();
  const store = createTaskStore(config);
  await store.open();
  const clone = cloner(template);
  try {
    for (let done = 0; done < n; done += chunk) {
      const writes: Promise<void>[] = [];
      for (let i = done; i < Math.min(n, done + chunk); i++) writes.push(store.create(JSON.parse(clone().json) as TaskRecord));
      await Promise.all(writes);
    }
  } finally {
    await store.close();
  }
  return performance.now() - started;
}
