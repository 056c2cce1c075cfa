/**
 * taskvisor benchmarks: `npm run bench` (full, ~10 min on 2 cores),
 * `npm run bench -- --quick` (tiny sizes, one concurrency: a smoke run),
 * `npm run bench -- --only create` (one benchmark; baselines still run).
 * Servers and measuring scripts run the library compiled as the package ships it
 * (bench/compiledLibrary.ts); `--source` runs the TypeScript sources through tsx.
 *
 * Prints one markdown table on stdout — every figure next to a baseline
 * measured in the same run, and the ratio — and writes everything measured
 * to `bench/results/<ISO timestamp>.json` (or `--results-dir <dir>`).
 * Progress goes to stderr.
 *
 * Benchmarks (names for `--only`): create, get, lane, heap, passivation, recovery, fanout, postgres, cluster, slowreader, foreign, coldstart, promoted.
 * `cluster`: two instances on one PostgreSQL schema (bench/cluster.ts), each figure against
 * PostgreSQL's own floor for it (LISTEN/NOTIFY round trip, a row read, the lease); like
 * `postgres` it needs a server and is left out of a plain `--quick`.
 * `promoted`: an upstream call held as a task vs the same call forwarded as is, and heap per held request (bench/promotedRows.ts).
 * `passivation`: heap per input-waiting task passivated vs
 * live vs a bare xstate actor (the slope between two sizes, bench/passivation.ts),
 * the same for timer-waiting (`ctx.sleep`) tasks,
 * a million passivated tasks in one process (SQLite store, 4 GiB heap cap),
 * and tasks/get + tasks/update on passivated vs live tasks over HTTP in
 * interleaved slices (bench/passivationHttp.ts).
 * `lane` (the HTTP fast lane for tasks/*) is driven by autocannon
 * against its own four servers, the raw node:http floor among them (bench/fastLane.ts).
 * `postgres` (durable create through the Postgres store, interleaved with the
 * sqlite store and with PostgreSQL's own create floor, bench/pgFloor.ts) needs TASKVISOR_BENCH_PG_URL or a server on
 * 127.0.0.1:5432 (database `test`); it uses a fresh schema and drops it. A
 * plain `--quick` leaves it out; `--quick --only postgres` runs it small.
 * Baselines: the bare v2 SDK `echo` server on the same transport and load
 * generator — every create/get cell runs in slices interleaved with it, so
 * each ratio compares figures taken side by side — and a 512 B
 * write+fdatasync loop (the disk floor; rounds at start, middle, end).
 *
 * The machine is shared and noisy: compare ratios, not absolute figures.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, fdatasyncSync, openSync, writeSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { BENCH_DIR, runScript, startServer, type ServerChild } from './child.js';
import { clusterRows, runCluster, type ClusterResult } from './cluster.js';
import { runColdStart, type ColdStartResult } from './coldStart.js';
import { compileLibrary } from './compiledLibrary.js';
import { runFanout, type FanoutResult, type FanoutTarget } from './fanout.js';
import { runSlowReader, type SlowReaderResult } from './slowReader.js';
import { runFastLaneCell, type FastLaneResult } from './fastLane.js';
import type { PassivationResult } from './passivation.js';
import { runPassivationHttp, type PassivationHttpResult } from './passivationHttp.js';
import { promotedRows, runPromoted, type PromotedResult } from './promotedRows.js';
import { rpc, runInterleaved, runLoad, type LoadResult, type Partner } from './loadgen.js';
import type { Json, RpcCall } from './protocol.js';
import { captureTemplates, seedLowdb, seedSqlite, seedThroughApi, sqliteAvailable, sqliteConfig, type Templates } from './seed.js';
import type { TaskStoreConfig } from '../src/index.js';
import { loadSqliteDriver } from '../src/store/sqliteDriver.js';
import { SQLITE_MIGRATIONS } from '../src/store/SqliteTaskStore.js';
import { fmt, median, ratio, summarize, type BenchRow, type Summary, type Verdict } from './stats.js';
import { openPgFloor, type FloorRow } from './pgFloor.js';
import type { ServerConfig } from './server.js';

// ---------------------------------------------------------------------------------------------
// Options

const BENCHMARKS = [
  'create',
  'get',
  'lane',
  'heap',
  'passivation',
  'recovery',
  'fanout',
  'postgres',
  'cluster',
  'slowreader',
  'foreign',
  'coldstart',
  'promoted',
] as const;
type BenchName = (typeof BENCHMARKS)[number];

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    'results-dir': { type: 'string' },
    source: { type: 'boolean', default: false },
  },
});
const quick = flags.quick ?? false;
const only = flags.only ? (flags.only.split(',').map((name) => name.trim()) as BenchName[]) : undefined;
for (const name of only ?? []) {
  if (!BENCHMARKS.includes(name)) {
    process.stderr.write(`unknown benchmark ${JSON.stringify(name)}; one of ${BENCHMARKS.join(', ')}\n`);
    process.exit(2);
  }
}
const enabled = (name: BenchName) => !only || only.includes(name);
const resultsDir = resolve(flags['results-dir'] ?? join(BENCH_DIR, 'results'));

const SIZES = quick
  ? {
      fsyncOps: 200,
      createConcurrency: [4],
      postgresConcurrency: [4],
      getConcurrency: [4],
      seeds: [
        { label: '20', n: 20 },
        { label: '200', n: 200 },
      ],
      // A slice must outlast one request even on a loaded machine (a durable create took 241 ms at load 22:
      // a 170 ms window then measured 0 req/s and no ratio).
      sliceMs: 600,
      sliceWarmupMs: 100,
      interleaveRounds: 1,
      prewarmMs: 200,
      heapN: 300,
      bigHeapN: 1_000,
      passivationSizes: [300, 900],
      passivationMillion: 3_000,
      passivationPool: 40,
      passivationConcurrency: 2,
      bytesN: 200,
      recoveryN: [
        { label: '50', n: 50 },
        { label: '200', n: 200 },
      ],
      recoveryBudgetMs: 3_000,
      replayN: 0,
      listeners: 40, // above the default listen limit of 32 per principal, like the full run's 1,000
      bigListeners: 100, // the 10,000-listener cell, small (above 32 too)
      pokes: 3,
      pollTasks: 16,
      cluster: { pokes: 10, gets: 50, adoptions: 1, concurrency: 8, sliceMs: 600, rounds: 1 },
    }
  : {
      fsyncOps: 2_000,
      createConcurrency: [1, 16, 64],
      postgresConcurrency: [1, 16, 64],
      getConcurrency: [16, 64],
      seeds: [
        { label: '1k', n: 1_000 },
        { label: '100k', n: 100_000 },
      ],
      sliceMs: 1_000,
      sliceWarmupMs: 250,
      interleaveRounds: 2,
      prewarmMs: 2_000,
      heapN: 20_000,
      bigHeapN: 100_000,
      passivationSizes: [5_000, 20_000],
      passivationMillion: 1_000_000,
      // Revisited only after the whole pool: seconds later, passivated again by then.
      passivationPool: 2_000,
      passivationConcurrency: 4,
      bytesN: 10_000,
      recoveryN: [
        { label: '10k', n: 10_000 },
        { label: '100k', n: 100_000 },
      ],
      // Long enough for 100k sqlite tasks to finish even on a loaded machine (a measured figure, not a projection);
      // lowdb past it is projected.
      recoveryBudgetMs: 30_000,
      replayN: 10_000,
      listeners: 1_000,
      bigListeners: 10_000,
      pokes: 20,
      pollTasks: 256,
      cluster: { pokes: 200, gets: 1_000, adoptions: 3, concurrency: 64, sliceMs: 1_500, rounds: 4 },
    };

/** fsync-floor rounds: spread over the run (start, middle, end); medians are reported. */
const ROUNDS = quick ? 1 : only ? 2 : 3;

// ---------------------------------------------------------------------------------------------
// Logging and raw results

const t0 = performance.now();
const log = (message: string) => process.stderr.write(`[${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${message}\n`);

type StoreKind = 'lowdb' | 'sqlite';

interface CreateCell {
  /** `memory`: the same create path with a store that keeps nothing on disk (no fsync), started empty. */
  store: StoreKind | 'memory';
  seed: string;
  storedAtStart: number;
  concurrency: number;
  load: LoadResult;
  /** The bare SDK echo, measured in slices interleaved with this cell's. */
  bare: LoadResult;
}

const raw = {
  fsync: [] as Summary[],
  /** One-row SQLite commits (the store's schema, WAL, synchronous=FULL) per round, when the driver loads. */
  sqliteCommit: [] as Summary[],
  /** The raw node:http echo at c=1, interleaved with the sqlite create cells at c=1 (the client's own floor). */
  rawEcho: [] as LoadResult[],
  bare: {} as Record<number, LoadResult[]>,
  create: [] as CreateCell[],
  serverStartMs: {} as Record<string, Record<string, number[]>>,
  seedMs: {} as Record<string, number>,
  get: [] as Array<{ store: StoreKind; variant: 'stored' | 'live'; concurrency: number; load: LoadResult; bare: LoadResult }>,
  echo: [] as Array<{ store: StoreKind; concurrency: number; load: LoadResult; bare: LoadResult }>,
  heap: {} as Record<string, HeapResult>,
  bytes: {} as Record<
    string,
    { tasks: number; bytesPerTask: number; allocatedPerTask?: number; recordJsonBytes: number; pageSize?: number; pageCount?: number }
  >,
  /** Creates through the Postgres store, the sqlite store and PostgreSQL's own single-row-commit floor (bench/pgFloor.ts), interleaved. */
  postgres: [] as Array<{ concurrency: number; postgres: LoadResult; sqlite: LoadResult; floor: LoadResult }>,
  cluster: undefined as ClusterResult | undefined,
  recovery: [] as Array<{
    store: StoreKind | 'postgres';
    label: string;
    resume: 'fail' | 'replay';
    result?: RecoveryResult;
    timedOut?: boolean;
    error?: string;
  }>,
  fanout: {} as { one?: FanoutResult[]; many?: FanoutResult[]; big?: FanoutResult[] },
  /** The same cell with the listens over WebSocket. */
  fanoutWs: {} as { one?: FanoutResult[]; many?: FanoutResult[]; big?: FanoutResult[] },
  coldStart: undefined as ColdStartResult | undefined,
  slowReader: {} as { budget?: SlowReaderResult; unbounded?: SlowReaderResult },
  foreign: [] as ForeignGetResult[],
  promoted: undefined as PromotedResult | undefined,
  lane: undefined as FastLaneResult | undefined,
  passivation: {} as {
    heap?: Partial<Record<PassivationResult['state'], PassivationResult>>;
    /** Timer-waiting (`ctx.sleep`) tasks: live and passivated (the floor is `heap.xstate`, same run). */
    sleepHeap?: Partial<Record<PassivationResult['state'], PassivationResult>>;
    http?: PassivationHttpResult;
  },
  skipped: [] as string[],
  errors: [] as string[],
};

interface ForeignGetResult {
  store: string;
  n: number;
  resultBytes: number;
  unknown: number;
  foreignSmall: number;
  foreignBig: number;
  ownBig: number;
}

interface HeapResult {
  mode: string;
  n: number;
  live: number;
  bytesPerTask: number;
  heapUsedAfter: number;
  rssDelta: number;
  createUsPerTask: number;
}

interface RecoveryResult {
  n: number;
  listed: number;
  openMs: number;
  listMs: number;
  puts: number;
  recoverMs: number;
  partial: boolean;
  startMs: number;
  projectedStartMs?: number;
  flushedMs?: number;
  report?: { resumed: number; failed: number };
}

async function section(name: string, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    const message = `${name}: ${(error as Error).stack ?? String(error)}`;
    raw.errors.push(message);
    log(`FAILED ${message}`);
    process.exitCode = 1;
  }
}

// ---------------------------------------------------------------------------------------------
// Baselines

function fsyncFloor(dir: string, ops: number): Summary {
  const file = join(dir, 'fsync-floor.bin');
  const fd = openSync(file, 'a', 0o600);
  const block = Buffer.alloc(512, 0x61);
  const times: number[] = [];
  try {
    for (let i = 0; i < ops; i++) {
      const start = performance.now();
      writeSync(fd, block);
      fdatasyncSync(fd);
      times.push(performance.now() - start);
    }
  } finally {
    closeSync(fd);
  }
  return summarize(times);
}

/**
 * The least a durable SQLite write can cost: one-row INSERT transactions into
 * a fresh database with the store's own schema and settings (WAL,
 * `synchronous=FULL`, `BEGIN IMMEDIATE`), a 512 B record column, in the same
 * folder as the disk floor. Each commit appends the row's pages (table, and
 * the four indexes) to the WAL and fsyncs it.
 */
async function sqliteCommitFloor(dir: string, ops: number): Promise<Summary | undefined> {
  let Driver: Awaited<ReturnType<typeof loadSqliteDriver>>;
  try {
    Driver = await loadSqliteDriver();
  } catch {
    return undefined;
  }
  const file = join(dir, `sqlite-floor-${raw.sqliteCommit.length}.sqlite`);
  const db = new Driver(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    for (const migration of SQLITE_MIGRATIONS) db.exec(migration);
    const insert = db.prepare(
      `INSERT INTO tasks (task_id, owner, tool, status, created_at, last_updated_at, ttl_ms, version, machine_version, record)
       VALUES (?, 'anonymous', 'bench_work', 'working', ?, ?, 3600000, 1, 1, ?)`,
    );
    const record = 'a'.repeat(512);
    const commit = db.transaction((id: string, now: number) => insert.run(id, now, now, record));
    const times: number[] = [];
    for (let i = 0; i < ops; i++) {
      const id = `${i.toString(16).padStart(8, '0')}${'0'.repeat(24)}`;
      const start = performance.now();
      commit.immediate(id, Date.now());
      times.push(performance.now() - start);
    }
    return summarize(times);
  } finally {
    db.close();
    await rm(file, { force: true });
    await rm(`${file}-wal`, { force: true });
    await rm(`${file}-shm`, { force: true });
  }
}

const echoCall = (): RpcCall => ({ method: 'tools/call', params: { name: 'echo', arguments: { text: 'hello' } } });
const checkEcho = (result: Json) =>
  Array.isArray(result.content) ? undefined : `echo: unexpected result ${JSON.stringify(result).slice(0, 200)}`;

async function fsyncRound(dataDir: string, round: number): Promise<void> {
  const floor = fsyncFloor(dataDir, SIZES.fsyncOps);
  raw.fsync.push(floor);
  log(`fsync floor round ${round}: p50 ${fmt(floor.p50)} ms, p99 ${fmt(floor.p99)} ms`);
  const commit = await sqliteCommitFloor(dataDir, SIZES.fsyncOps);
  if (commit) {
    raw.sqliteCommit.push(commit);
    log(`sqlite commit floor round ${round}: p50 ${fmt(commit.p50)} ms, p99 ${fmt(commit.p99)} ms`);
  }
}

/** The bare SDK server, started once and warmed like the others; every create/get cell interleaves slices on it. */
async function startBare(): Promise<ServerChild> {
  const server = await startServer({ mode: 'bare' });
  await runLoad({ url: server.url, concurrency: 16, warmupMs: 0, durationMs: SIZES.prewarmMs, next: echoCall, check: checkEcho });
  return server;
}

const barePartner = (bare: ServerChild): Partner => ({ key: 'bare', url: bare.url, next: echoCall, check: checkEcho, serverPid: bare.pid });

function interleave(partners: Partner[], concurrency: number): Promise<Record<string, LoadResult>> {
  return runInterleaved(partners, { concurrency, sliceMs: SIZES.sliceMs, warmupMs: SIZES.sliceWarmupMs, rounds: SIZES.interleaveRounds });
}

/**
 * Server CPU and both sides' sleeps per answer over a cell's windows (bench/threadStats.ts): a
 * client woken for each answer makes the server's writes dearer than answers leaving in bursts.
 */
const perAnswer = (load: LoadResult): string =>
  load.threads && load.requests > 0
    ? `server CPU ${fmt((load.threads.serverCpuMs * 1000) / load.requests)} µs/answer, sleeps/answer: load generator ${fmt(load.threads.clientSleeps / load.requests)}, server main thread ${fmt(load.threads.serverSleeps / load.requests)}`
    : 'no /proc readings';

const describe = (load: LoadResult) =>
  `${fmt(load.throughput)} req/s, p50 ${fmt(load.latency.p50)} ms, p99 ${fmt(load.latency.p99)} ms${load.errors ? `, ${load.errors} errors (${load.firstError})` : ''}${load.threads ? `; ${perAnswer(load)}` : ''}`;

/** The bare SDK figures at `concurrency`: medians over every cell it was interleaved with. */
const bareMedian = (concurrency: number, pick: (load: LoadResult) => number) => median((raw.bare[concurrency] ?? []).map(pick));
const fsyncMedian = (pick: (summary: Summary) => number) => median(raw.fsync.map(pick));

// ---------------------------------------------------------------------------------------------
// Durable create, tasks/get, taskvisor echo

function storeConfig(kind: StoreKind, dir: string): NonNullable<ServerConfig['store']> {
  return kind === 'lowdb' ? { kind: 'lowdb', dir } : sqliteConfig(join(dir, 'tasks.sqlite'));
}

async function seedStore(kind: StoreKind, dir: string, template: Templates['completed'], n: number): Promise<number> {
  await mkdir(dir, { recursive: true, mode: 0o700 }); // as taskvisor makes its own store folders (it warns about wider ones)
  return kind === 'lowdb' ? seedLowdb(dir, template, n) : seedSqlite(join(dir, 'tasks.sqlite'), template, n);
}

const createCall = (): RpcCall => ({ method: 'tools/call', params: { name: 'bench_work', arguments: { ms: 50 } } });
const checkTask = (result: Json) =>
  result.resultType === 'task' && typeof result.taskId === 'string'
    ? undefined
    : `not a CreateTaskResult: ${JSON.stringify(result).slice(0, 200)}`;

/**
 * One concurrency of the durable-create benchmark: the small store, the
 * large store and the bare SDK, in interleaved slices.
 */
async function createCells(
  kind: StoreKind,
  small: { server: ServerChild; stored: number; label: string },
  big: { server: ServerChild; stored: number; label: string },
  bare: ServerChild,
  concurrency: number,
): Promise<number> {
  let createdBig = 0;
  // At c=1 on sqlite, also the raw node:http echo: what this client's round trip alone costs (the p50 floor).
  const rawEcho = kind === 'sqlite' && concurrency === 1 ? await startServer({ mode: 'raw' }) : undefined;
  let loads: Record<string, LoadResult>;
  try {
    loads = await interleave(
      [
        { key: 'small', url: small.server.url, next: createCall, check: checkTask, serverPid: small.server.pid },
        { key: 'big', url: big.server.url, next: createCall, check: checkTask, onResult: () => createdBig++, serverPid: big.server.pid },
        barePartner(bare),
        ...(rawEcho ? [{ key: 'raw', url: rawEcho.url, next: echoCall, check: checkEcho }] : []),
      ],
      concurrency,
    );
  } finally {
    await rawEcho?.stop();
  }
  (raw.bare[concurrency] ??= []).push(loads.bare!);
  if (loads.raw) {
    raw.rawEcho.push(loads.raw);
    log(`raw echo c=1: ${describe(loads.raw)}`);
  }
  raw.create.push({ store: kind, seed: small.label, storedAtStart: small.stored, concurrency, load: loads.small!, bare: loads.bare! });
  raw.create.push({ store: kind, seed: big.label, storedAtStart: big.stored, concurrency, load: loads.big!, bare: loads.bare! });
  log(`create ${kind} ${small.label} c=${concurrency}: ${describe(loads.small!)}`);
  log(`create ${kind} ${big.label} c=${concurrency}: ${describe(loads.big!)}`);
  log(`bare SDK echo c=${concurrency}: ${describe(loads.bare!)}`);
  // Let the last tasks finish (50 ms) and their completion records land before what comes next.
  await new Promise((resolve) => setTimeout(resolve, 150));
  await Promise.all([small.server.command('flush'), big.server.command('flush')]);
  return createdBig;
}

/** Creates `count` tasks of `tool` with a few requests in flight; returns their ids. */
async function createTasks(url: string, name: string, args: Json, count: number): Promise<string[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const ids: string[] = [];
  try {
    for (let i = 0; i < count; i += 8) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(8, count - i) }, () => rpc(agent, url, { method: 'tools/call', params: { name, arguments: args } })),
      );
      for (const result of batch) ids.push(String(result.taskId));
    }
  } finally {
    agent.destroy();
  }
  return ids;
}

/**
 * tasks/get on completed tasks (read from the store) and — on the primary
 * store — on working tasks (live actors) and taskvisor's own synchronous
 * `echo`, each concurrency interleaved with the bare SDK.
 */
async function getCells(server: ServerChild, kind: StoreKind, primary: boolean, bare: ServerChild): Promise<void> {
  // Completed tasks are evicted from memory once their final record is stored: tasks/get reads the store.
  const stored = await createTasks(server.url, 'bench_work', { ms: 0 }, SIZES.pollTasks);
  await new Promise((resolve) => setTimeout(resolve, 200));
  await server.command('flush');
  const live = primary ? await createTasks(server.url, 'bench_wait', {}, SIZES.pollTasks) : [];
  const poll = (key: string, ids: string[], status: string, concurrency: number): Partner => ({
    key,
    url: server.url,
    next: (seq, worker) => ({ method: 'tasks/get', params: { taskId: ids[(seq * concurrency + worker) % ids.length]! } }),
    check: (result) =>
      result.status === status ? undefined : `tasks/get: expected ${status}, got ${JSON.stringify(result).slice(0, 200)}`,
  });
  for (const concurrency of SIZES.getConcurrency) {
    const partners = [poll('stored', stored, 'completed', concurrency)];
    if (primary)
      partners.push(poll('live', live, 'working', concurrency), { key: 'echo', url: server.url, next: echoCall, check: checkEcho });
    partners.push(barePartner(bare));
    const loads = await interleave(partners, concurrency);
    (raw.bare[concurrency] ??= []).push(loads.bare!);
    for (const variant of ['stored', 'live'] as const) {
      const load = loads[variant];
      if (!load) continue;
      raw.get.push({ store: kind, variant, concurrency, load, bare: loads.bare! });
      log(`tasks/get ${kind} ${variant} c=${concurrency}: ${describe(load)}`);
    }
    if (loads.echo) {
      raw.echo.push({ store: kind, concurrency, load: loads.echo, bare: loads.bare! });
      log(`taskvisor echo (never) ${kind} c=${concurrency}: ${describe(loads.echo)}`);
    }
    log(`bare SDK echo c=${concurrency}: ${describe(loads.bare!)}`);
  }
}

/** Seeds a store and flushes the page cache's dirty pages (so the seeding's write-back does not land on a measurement). */
async function seed(kind: StoreKind, dir: string, templates: Templates, size: { label: string; n: number }): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  const seedMs = await seedStore(kind, dir, templates.completed, size.n);
  raw.seedMs[`${kind}-${size.label}`] = seedMs;
  log(`seeded ${kind} with ${size.n} completed tasks in ${fmt(seedMs / 1000)} s`);
  flushDisk(size.n);
}

/**
 * Starts a server on an existing store and gives it the same warm-up as
 * every other (JIT, heap sizing): `stored` is what the store holds after it.
 */
async function startOn(
  kind: StoreKind,
  dir: string,
  label: string,
  storedBefore: number,
): Promise<{ server: ServerChild; stored: number }> {
  const server = await startServer({ mode: 'taskvisor', store: storeConfig(kind, dir), ttlMs: 3_600_000 }, { timeoutMs: 300_000 });
  ((raw.serverStartMs[kind] ??= {})[label] ??= []).push(server.startMs);
  log(`server (${kind}, ${label} stored) listening after ${fmt(server.startMs)} ms`);
  return { server, stored: storedBefore + (enabled('create') ? await prewarm(server) : 0) };
}

/**
 * 2 s of creates at c=16 right after a server starts: a fresh process is
 * measurably slower than one that already served a few thousand requests.
 * Returns the number of tasks it created.
 */
async function prewarm(server: ServerChild): Promise<number> {
  let created = 0;
  await runLoad({
    url: server.url,
    concurrency: 16,
    warmupMs: 0,
    durationMs: SIZES.prewarmMs,
    next: createCall,
    check: checkTask,
    onResult: () => created++,
  });
  await new Promise((resolve) => setTimeout(resolve, 150));
  await server.command('flush');
  return created;
}

/**
 * Create on the memory store at every concurrency, interleaved with the bare
 * SDK: the create path without a disk, so the durable stores' rows can be read
 * against it (where the time goes, store or request path).
 */
async function memoryCreateCells(bare: ServerChild): Promise<void> {
  for (const concurrency of SIZES.createConcurrency) {
    const server = await startServer({ mode: 'taskvisor', store: { kind: 'memory' }, ttlMs: 3_600_000 });
    try {
      const stored = await prewarm(server);
      const loads = await interleave(
        [{ key: 'memory', url: server.url, next: createCall, check: checkTask, serverPid: server.pid }, barePartner(bare)],
        concurrency,
      );
      (raw.bare[concurrency] ??= []).push(loads.bare!);
      raw.create.push({ store: 'memory', seed: 'empty', storedAtStart: stored, concurrency, load: loads.memory!, bare: loads.bare! });
      log(`create memory c=${concurrency}: ${describe(loads.memory!)}`);
      log(`bare SDK echo c=${concurrency}: ${describe(loads.bare!)}`);
    } finally {
      await server.stop();
    }
  }
}

async function stopAndRemove(server: ServerChild, dir: string, n: number): Promise<void> {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
  flushDisk(n);
}

/**
 * Durable create at every concurrency on a small store (re-seeded for each
 * concurrency, so it really holds ~1k) and a large one (seeded once),
 * interleaved with the bare SDK. Both servers are started afresh and warmed
 * alike for every concurrency, so they differ only in what their store
 * holds. Then tasks/get on the large store.
 */
async function storeBenchmarks(kind: StoreKind, dataDir: string, templates: Templates, primary: boolean, bare: ServerChild): Promise<void> {
  const [small, big] = SIZES.seeds as [(typeof SIZES.seeds)[number], (typeof SIZES.seeds)[number]];
  const bigDir = join(dataDir, `${kind}-${big.label}`);
  const smallDir = join(dataDir, `${kind}-${small.label}`);
  if (!enabled('create')) {
    // tasks/get alone: on the small store.
    await seed(kind, smallDir, templates, small);
    const { server } = await startOn(kind, smallDir, small.label, small.n);
    try {
      await getCells(server, kind, primary, bare);
    } finally {
      await stopAndRemove(server, smallDir, small.n);
    }
    return;
  }
  await seed(kind, bigDir, templates, big);
  let bigStored = big.n;
  try {
    for (const [index, concurrency] of SIZES.createConcurrency.entries()) {
      const large = await startOn(kind, bigDir, big.label, bigStored);
      try {
        await seed(kind, smallDir, templates, small);
        const fresh = await startOn(kind, smallDir, small.label, small.n);
        try {
          bigStored =
            large.stored + (await createCells(kind, { ...fresh, label: small.label }, { ...large, label: big.label }, bare, concurrency));
        } finally {
          await stopAndRemove(fresh.server, smallDir, small.n);
        }
        if (index === SIZES.createConcurrency.length - 1 && enabled('get')) await getCells(large.server, kind, primary, bare);
      } finally {
        await large.server.stop();
        flushDisk(0);
      }
    }
  } finally {
    await rm(bigDir, { recursive: true, force: true });
    flushDisk(big.n);
  }
}

/**
 * `sync(1)` after seeding or deleting a store, so its write-back (and the
 * journal commits it drags into the next fsync) is not measured by what runs
 * next.
 */
function flushDisk(files: number): void {
  const started = performance.now();
  try {
    execFileSync('sync', { stdio: 'ignore', timeout: 120_000 });
  } catch (error) {
    log(`sync failed: ${(error as Error).message}`);
  }
  if (files >= 5_000) log(`sync after ${files} files: ${fmt((performance.now() - started) / 1000)} s`);
}

// ---------------------------------------------------------------------------------------------
// Passivated idle tasks

/** 4 GiB: the heap cap of the million-task run (the goal's bound). */
const MILLION_HEAP_MB = 4096;

async function passivationBenchmark(dataDir: string): Promise<void> {
  const heap: NonNullable<typeof raw.passivation.heap> = (raw.passivation.heap = {});
  for (const [state, sizes, extra, timeoutMs] of [
    ['xstate', SIZES.passivationSizes, [], 300_000],
    ['live', SIZES.passivationSizes, [], 600_000],
    ['passivated', SIZES.passivationSizes, [], 600_000],
    ['recovered', [SIZES.passivationMillion], [`--max-old-space-size=${MILLION_HEAP_MB}`], 1_800_000],
  ] as const) {
    await section(`passivation heap ${state}`, async () => {
      const outcome = await runScript<PassivationResult>(
        'passivation.ts',
        { state, sizes },
        { nodeArgs: ['--expose-gc', ...extra], timeoutMs },
      );
      if (!outcome.result)
        throw new Error(
          `passivation.ts ${state} gave no result (code ${outcome.code}, timed out ${outcome.timedOut}): ${outcome.stderr.slice(-2000)}`,
        );
      heap[state] = outcome.result;
      const last = outcome.result.sizes.at(-1)!;
      log(
        `passivation ${state}: ${fmt(outcome.result.slopeBytesPerTask)} B/task (slope), at N=${last.n} heapUsed ${fmt(last.heapUsed / 2 ** 20)} MiB, RSS ${fmt(last.rss / 2 ** 20)} MiB`,
      );
    });
  }
  const sleepHeap: NonNullable<typeof raw.passivation.sleepHeap> = (raw.passivation.sleepHeap = {});
  for (const state of ['live', 'passivated'] as const) {
    await section(`passivation heap ${state} (timer-waiting)`, async () => {
      const outcome = await runScript<PassivationResult>(
        'passivation.ts',
        { state, sizes: SIZES.passivationSizes, wait: 'sleep' },
        { nodeArgs: ['--expose-gc'], timeoutMs: 600_000 },
      );
      if (!outcome.result)
        throw new Error(
          `passivation.ts ${state} sleep gave no result (code ${outcome.code}, timed out ${outcome.timedOut}): ${outcome.stderr.slice(-2000)}`,
        );
      sleepHeap[state] = outcome.result;
      const last = outcome.result.sizes.at(-1)!;
      log(
        `passivation ${state} (timer-waiting): ${fmt(outcome.result.slopeBytesPerTask)} B/task (slope), at N=${last.n} heapUsed ${fmt(last.heapUsed / 2 ** 20)} MiB, RSS ${fmt(last.rss / 2 ** 20)} MiB`,
      );
    });
  }
  await section('passivation http', async () => {
    raw.passivation.http = await runPassivationHttp({
      dataDir,
      pool: SIZES.passivationPool,
      concurrency: SIZES.passivationConcurrency,
      sliceMs: SIZES.sliceMs,
      warmupMs: SIZES.sliceWarmupMs,
      rounds: SIZES.interleaveRounds,
      log,
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Heap and bytes per stored task

async function heapBenchmarks(dataDir: string, templates: Templates, stores: StoreKind[]): Promise<void> {
  for (const [key, mode, n, extra, tool] of [
    ['xstate', 'xstate', SIZES.heapN, [], undefined],
    ['null', 'null', SIZES.heapN, [], undefined],
    ['memory', 'memory', SIZES.heapN, [], undefined],
    // The handler never reads ctx.signal: its run makes no AbortSignal (what a signal-waiting handler adds).
    ['memory-hold', 'memory', SIZES.heapN, [], 'bench_hold'],
    ['memory-big', 'memory', SIZES.bigHeapN, ['--max-old-space-size=4096'], undefined],
  ] as const) {
    await section(`heap ${key}`, async () => {
      const outcome = await runScript<HeapResult>(
        'heap.ts',
        { mode, n, ...(tool ? { tool } : {}) },
        { nodeArgs: ['--expose-gc', ...extra], timeoutMs: 240_000 },
      );
      if (!outcome.result)
        throw new Error(
          `heap.ts ${key} gave no result (code ${outcome.code}, timed out ${outcome.timedOut}): ${outcome.stderr.slice(-2000)}`,
        );
      raw.heap[key] = outcome.result;
      log(
        `heap ${key} n=${n}: ${fmt(outcome.result.bytesPerTask)} B/task, live ${outcome.result.live}, ${fmt(outcome.result.createUsPerTask)} µs/create`,
      );
    });
  }
  const recordJsonBytes = Buffer.byteLength(JSON.stringify(templates.completed));
  for (const kind of stores) {
    await section(`bytes ${kind}`, async () => {
      const dir = join(dataDir, `bytes-${kind}`);
      await rm(dir, { recursive: true, force: true });
      await seedStore(kind, dir, templates.completed, SIZES.bytesN);
      if (kind === 'lowdb') {
        let size = 0;
        let allocated = 0;
        let files = 0;
        const tasksDir = join(dir, 'tasks');
        for (const shard of readdirSync(tasksDir)) {
          for (const name of readdirSync(join(tasksDir, shard))) {
            const stat = statSync(join(tasksDir, shard, name));
            size += stat.size;
            allocated += stat.blocks * 512;
            files++;
          }
        }
        raw.bytes.lowdb = { tasks: files, bytesPerTask: size / files, allocatedPerTask: allocated / files, recordJsonBytes };
      } else {
        const Database = (await import('../src/store/sqliteDriver.js')).requireSqliteDriver();
        const db = new Database(join(dir, 'tasks.sqlite'), { readonly: true });
        try {
          const pageSize = db.pragma('page_size', { simple: true }) as number;
          const pageCount = db.pragma('page_count', { simple: true }) as number;
          const rows = db.prepare('SELECT count(*) FROM tasks').pluck().get() as number;
          raw.bytes.sqlite = { tasks: rows, bytesPerTask: (pageSize * pageCount) / rows, recordJsonBytes, pageSize, pageCount };
        } finally {
          db.close();
        }
      }
      log(`bytes per stored task ${kind}: ${fmt(raw.bytes[kind]!.bytesPerTask)} B (record JSON ${recordJsonBytes} B)`);
      await rm(dir, { recursive: true, force: true });
      flushDisk(SIZES.bytesN);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Recovery

async function recoveryBenchmarks(dataDir: string, templates: Templates, stores: StoreKind[], withPostgres: boolean): Promise<void> {
  const cases: Array<{ label: string; n: number; resume: 'fail' | 'replay' }> = SIZES.recoveryN.map((size) => ({
    ...size,
    resume: 'fail',
  }));
  if (SIZES.replayN > 0) cases.push({ label: `${SIZES.replayN / 1000}k`, n: SIZES.replayN, resume: 'replay' });
  // PostgreSQL: the same start-up recovery over its keyset-paged scan, one schema per case. In a
  // cluster the store's leases adopt tasks instead (claimExpired); this measures the scan-and-fail path of one instance.
  for (const kind of [...stores, ...(withPostgres ? (['postgres'] as const) : [])]) {
    for (const { label, n, resume } of cases) {
      await section(`recovery ${kind} ${label} ${resume}`, async () => {
        const dir = join(dataDir, `recovery-${kind}`);
        await rm(dir, { recursive: true, force: true });
        const schema = `tv_bench_rec_${Date.now().toString(36)}`;
        const config = (kind === 'postgres' ? { kind: 'postgres', url: PG_URL, schema } : storeConfig(kind, dir)) as TaskStoreConfig;
        const seedMs =
          kind === 'postgres' ? await seedThroughApi(config, templates.working, n) : await seedStore(kind, dir, templates.working, n);
        log(`seeded ${kind} with ${n} working tasks in ${fmt(seedMs / 1000)} s`);
        flushDisk(n);
        const entry: (typeof raw.recovery)[number] = { store: kind, label, resume };
        raw.recovery.push(entry);
        try {
          const outcome = await runScript<RecoveryResult>(
            'recovery.ts',
            { store: config, resume, n, budgetMs: SIZES.recoveryBudgetMs },
            { timeoutMs: SIZES.recoveryBudgetMs + 240_000, nodeArgs: ['--max-old-space-size=4096'] },
          );
          entry.timedOut = outcome.timedOut;
          if (!outcome.result) throw new Error(`recovery.ts gave no result (code ${outcome.code}): ${outcome.stderr.slice(-2000)}`);
          entry.result = outcome.result;
          const r = outcome.result;
          log(
            `recovery ${kind} ${label} ${resume}: ${r.partial ? `partial after ${fmt(r.startMs / 1000)} s, ${r.puts}/${r.listed} written, projected ${fmt((r.projectedStartMs ?? NaN) / 1000)} s` : `${fmt(r.startMs / 1000)} s`} (open ${fmt(r.openMs)} ms, list ${fmt(r.listMs)} ms)`,
          );
        } catch (error) {
          entry.error = (error as Error).message.slice(0, 300);
          throw error;
        } finally {
          await rm(dir, { recursive: true, force: true });
          if (kind === 'postgres') await dropPgSchema(schema);
          flushDisk(n);
        }
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Fan-out

async function fanoutBenchmark(dataDir: string): Promise<void> {
  const dir = join(dataDir, 'fanout');
  // One principal opens every stream: each taskvisor server needs a listen limit above the default 32
  // (limits.maxListenStreamsPerPrincipal), set the same way in the quick run (whose listener counts are above 32
  // too, so it meets the limit the full run meets).
  const limits = { maxListenStreamsPerPrincipal: SIZES.bigListeners + 8 };
  // The floor: a bare node:http SSE server writing the same frames (bench/sseFloor.ts). The runtime on lowdb (the
  // default store: each change is stored, fsync included, before it is published) and on the memory store (the
  // fan-out alone). Pokes are interleaved over the three, so their figures share the machine's load.
  const servers = {
    floor: await startServer({ mode: 'sse' }),
    lowdb: await startServer({ mode: 'taskvisor', store: { kind: 'lowdb', dir }, limits }),
    memory: await startServer({ mode: 'taskvisor', store: { kind: 'memory' }, limits }),
  };
  const target = (name: keyof typeof servers): FanoutTarget => fanoutTarget(name, servers[name]);
  try {
    const all = [target('floor'), target('lowdb'), target('memory')];
    raw.fanout.one = await runFanout(all, { listeners: 1, pokes: SIZES.pokes });
    raw.fanout.many = await runFanout(all, { listeners: SIZES.listeners, pokes: SIZES.pokes });
    // 10,000 streams per server would take the client past its 20,000 open files if opened on two at once:
    // the big cell runs floor, memory, floor one after the other (the floor's median is the baseline).
    const big: FanoutResult[] = [];
    for (const name of ['floor', 'memory', 'floor'] as const) {
      big.push(...(await runFanout([target(name)], { listeners: SIZES.bigListeners, pokes: SIZES.pokes, timeoutMs: 30_000 })));
    }
    raw.fanout.big = big;
    logFanout('SSE', [...raw.fanout.many, ...big]);
  } finally {
    for (const server of Object.values(servers)) await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
  await wsFanoutBenchmark(limits);
}

/** A fan-out target on a bench server: its HTTP url, its listen url, its CPU time. */
function fanoutTarget(name: string, server: ServerChild): FanoutTarget {
  return {
    name,
    url: server.url,
    listenUrl: server.listenUrl,
    cpuMicros: async () => (await server.command<{ cpuMicros: number }>('stats')).cpuMicros,
  };
}

function logFanout(transport: string, results: FanoutResult[]): void {
  for (const r of results) {
    log(
      `fan-out ${transport} ${r.listeners} listeners, ${r.name}: p50 ${fmt(r.latency.p50)} ms, p99 ${fmt(r.latency.p99)} ms, CPU/change ${fmt(r.cpuPerChangeMicros / 1000)} ms, missed ${r.missed}, opened in ${fmt(r.openMs)} ms`,
    );
  }
}

/**
 * The fan-out cell with the listens over WebSocket: the same listeners, pokes and sizes, each
 * stream a `subscriptions/listen` sent as a text frame on its own socket (the pokes still go over HTTP). The floor
 * is a bare `ws` server sending the same frames, one per socket (bench/sseFloor.ts with `websocket`), interleaved
 * with taskvisor on the memory store (the store is not what differs from the SSE cell; its lowdb figure is there).
 */
async function wsFanoutBenchmark(limits: Record<string, number>): Promise<void> {
  const servers = {
    floor: await startServer({ mode: 'sse', websocket: true }),
    memory: await startServer({ mode: 'taskvisor', store: { kind: 'memory' }, limits, websocket: true }),
  };
  try {
    const all = [fanoutTarget('floor', servers.floor), fanoutTarget('memory', servers.memory)];
    raw.fanoutWs.one = await runFanout(all, { listeners: 1, pokes: SIZES.pokes });
    raw.fanoutWs.many = await runFanout(all, { listeners: SIZES.listeners, pokes: SIZES.pokes });
    // As in the SSE cell: 10,000 sockets on one server at a time, floor before and after.
    const big: FanoutResult[] = [];
    for (const name of ['floor', 'memory', 'floor'] as const) {
      big.push(
        ...(await runFanout([fanoutTarget(name, servers[name])], { listeners: SIZES.bigListeners, pokes: SIZES.pokes, timeoutMs: 30_000 })),
      );
    }
    raw.fanoutWs.big = big;
    logFanout('WebSocket', [...raw.fanoutWs.many, ...big]);
  } finally {
    for (const server of Object.values(servers)) await server.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Slow reader: a WebSocket client that never reads, with and without the outbound budget

async function slowReaderBenchmark(): Promise<void> {
  const attackMs = quick ? 4_000 : 10_000;
  raw.slowReader.budget = await runSlowReader({ budgetBytes: 8 * 1024 * 1024, graceMs: 10_000, attackMs });
  raw.slowReader.unbounded = await runSlowReader({ budgetBytes: 1024 ** 3, graceMs: 2 ** 31 - 1, attackMs });
  for (const [name, r] of Object.entries(raw.slowReader)) {
    log(
      `slow reader ${name}: RSS +${fmt(r.rssGrowth / 2 ** 20)} MB, closed ${r.closedAfterMs === null ? 'never' : `after ${r.closedAfterMs} ms`}, other client ${r.otherAnswered}/${r.otherAsked}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Foreign vs unknown task ids

async function foreignGetBenchmark(): Promise<void> {
  for (const store of ['lowdb', 'sqlite'] as const) {
    if (store === 'sqlite' && !(await sqliteAvailable()).ok) continue;
    const outcome = await runScript<ForeignGetResult>('foreignGet.ts', { store, n: quick ? 40 : 300 }, { timeoutMs: 300_000 });
    if (!outcome.result) throw new Error(`foreignGet ${store}: no result (${outcome.stderr.slice(-500)})`);
    raw.foreign.push(outcome.result);
    const r = outcome.result;
    log(
      `tasks/get as another principal, ${store}: unknown ${fmt(r.unknown)} ms, foreign small ${fmt(r.foreignSmall)} ms, foreign 3 MB ${fmt(r.foreignBig)} ms (owner's own 3 MB get ${fmt(r.ownBig)} ms)`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Durable create through PostgreSQL, with the sqlite store as the same-run baseline

const PG_URL = process.env.TASKVISOR_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The Postgres store's pool in the bench server, and the floor's. */
const PG_POOL_SIZE = 10;

/**
 * A row as the store writes it for a create (the floor inserts rows like it): an unfinished task, so it
 * enters the same partial indexes. The bytes of a stored record (the prewarm's tasks have finished by
 * now: a few bytes more than at create, which only makes the floor's rows heavier).
 */
async function pgCreatedRow(schema: string): Promise<FloorRow> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const result = await client.query<{ owner: string; tool: string; status: string; ttl_ms: string | null; record: string }>(
      `SELECT owner, tool, status, ttl_ms, record FROM ${pg.escapeIdentifier(schema)}.tasks ORDER BY task_id LIMIT 1`,
    );
    const row = result.rows[0];
    if (!row) throw new Error('postgres bench: no working task to copy the floor row from');
    return {
      owner: row.owner,
      tool: row.tool,
      status: 'working',
      ttlMs: row.ttl_ms === null ? null : Number(row.ttl_ms),
      record: row.record,
    };
  } finally {
    await client.end();
  }
}

/** Why the Postgres benchmark cannot run here, or undefined when it can. */
async function postgresUnavailable(): Promise<string | undefined> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return `PostgreSQL at ${PG_URL} unreachable: ${(error as Error).message}`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function dropPgSchema(schema: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
  } finally {
    await client.end();
  }
}

/** Two instances on one fresh schema (bench/cluster.ts); a 2 s lease keeps the adoption rounds short. */
async function clusterBenchmark(): Promise<void> {
  const schema = `tv_bench_cluster_${Date.now().toString(36)}`;
  try {
    raw.cluster = await runCluster({ pgUrl: PG_URL, schema, leaseMs: 2_000, ...SIZES.cluster, log });
  } finally {
    await dropPgSchema(schema).catch((error) => log(`could not drop bench schema ${schema}: ${(error as Error).message}`));
  }
}

/**
 * Both servers start on empty stores and get the same warm-up; then, at each
 * concurrency, creates against the Postgres-backed server run in slices
 * interleaved with creates against the sqlite-backed one.
 */
async function postgresBenchmark(dataDir: string): Promise<void> {
  const schema = `tv_bench_${Date.now().toString(36)}`;
  const floorSchema = `${schema}_floor`;
  const sqliteDir = join(dataDir, 'pg-baseline-sqlite');
  await mkdir(sqliteDir, { recursive: true, mode: 0o700 });
  const pgServer = await startServer(
    { mode: 'taskvisor', store: { kind: 'postgres', url: PG_URL, schema, poolSize: PG_POOL_SIZE }, ttlMs: 3_600_000 },
    { timeoutMs: 60_000 },
  );
  try {
    const sqliteServer = await startServer(
      { mode: 'taskvisor', store: storeConfig('sqlite', sqliteDir), ttlMs: 3_600_000 },
      { timeoutMs: 60_000 },
    );
    try {
      await prewarm(pgServer);
      await prewarm(sqliteServer);
      // PostgreSQL's own floor: the row a create stores, one INSERT per commit, over the same pool size.
      const floor = await openPgFloor({ url: PG_URL, schema: floorSchema, poolSize: PG_POOL_SIZE, row: await pgCreatedRow(schema) });
      try {
        for (const concurrency of SIZES.postgresConcurrency) {
          const loads = await interleave(
            [
              { key: 'postgres', url: pgServer.url, next: createCall, check: checkTask, serverPid: pgServer.pid },
              { key: 'floor', url: '', next: createCall, measure: floor.run },
              { key: 'sqlite', url: sqliteServer.url, next: createCall, check: checkTask },
            ],
            concurrency,
          );
          raw.postgres.push({ concurrency, postgres: loads.postgres!, sqlite: loads.sqlite!, floor: loads.floor! });
          log(
            `create postgres c=${concurrency}: ${describe(loads.postgres!)}; PostgreSQL floor: ${describe(loads.floor!)}; sqlite: ${describe(loads.sqlite!)}`,
          );
          await new Promise((resolve) => setTimeout(resolve, 150));
          await Promise.all([pgServer.command('flush'), sqliteServer.command('flush')]);
        }
      } finally {
        await floor.close();
      }
    } finally {
      await sqliteServer.stop();
    }
  } finally {
    await pgServer.stop();
    for (const dropped of [schema, floorSchema]) {
      await dropPgSchema(dropped).catch((error) => log(`could not drop bench schema ${dropped}: ${(error as Error).message}`));
    }
    await rm(sqliteDir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// The table

type Row = BenchRow;

function buildRows(stores: StoreKind[], sqliteSkip: string | undefined): Row[] {
  const rows: Row[] = [];
  const add = (row: Row) => rows.push(row);
  // A quick run's sizes are far below the targets' sizes: its verdicts would mean nothing.
  const verdict = (ok: boolean | undefined): Verdict => (ok === undefined || quick ? '' : ok ? 'met' : 'missed');
  const fsP50 = fsyncMedian((s) => s.p50);
  const fsP99 = fsyncMedian((s) => s.p99);
  // The least a durable create over this client can take at c=1: the client's round trip to a server that does
  // nothing (raw echo) plus one SQLite commit. NaN when either was not measured.
  const commitP50 = median(raw.sqliteCommit.map((s) => s.p50));
  const rawEchoP50 = median(raw.rawEcho.map((l) => l.latency.p50));
  const c1Floor = commitP50 + rawEchoP50;

  // Baselines themselves.
  add({
    bench: 'baseline: disk floor',
    case: `512 B write + fdatasync ×${SIZES.fsyncOps}, ${raw.fsync.length} round(s)`,
    figure: 'p50',
    value: fsP50,
    unit: 'ms',
    baseline: '—',
  });
  add({ bench: 'baseline: disk floor', case: '', figure: 'p99', value: fsP99, unit: 'ms', baseline: '—' });
  if (raw.sqliteCommit.length > 0) {
    add({
      bench: 'baseline: SQLite commit floor',
      case: `one-row INSERT transaction (store schema, WAL, synchronous=FULL) ×${SIZES.fsyncOps}, ${raw.sqliteCommit.length} round(s)`,
      figure: 'p50',
      value: commitP50,
      unit: 'ms',
      baseline: 'fdatasync p50',
      baselineValue: fsP50,
      baselineUnit: 'ms',
      ratio: ratio(commitP50, fsP50),
    });
  }
  if (raw.rawEcho.length > 0) {
    add({
      bench: 'baseline: raw node:http echo',
      case: 'c=1, interleaved with the sqlite create cells at c=1 (the load generator’s round trip)',
      figure: 'p50',
      value: rawEchoP50,
      unit: 'ms',
      baseline: 'fdatasync p50',
      baselineValue: fsP50,
      baselineUnit: 'ms',
      ratio: ratio(rawEchoP50, fsP50),
    });
  }
  for (const c of Object.keys(raw.bare).map(Number)) {
    const cells = raw.bare[c]!.length;
    add({
      bench: 'baseline: bare SDK echo',
      case: `c=${c}, median over the ${cells} cell(s) it was interleaved with`,
      figure: 'throughput',
      value: bareMedian(c, (l) => l.throughput),
      unit: 'req/s',
      baseline: '—',
    });
    add({
      bench: 'baseline: bare SDK echo',
      case: `c=${c}`,
      figure: 'p50 / p99',
      value: bareMedian(c, (l) => l.latency.p50),
      unit: `ms / ${fmt(bareMedian(c, (l) => l.latency.p99))} ms`,
      baseline: '—',
    });
  }

  // The HTTP fast lane, every figure against the bare SDK echo and the raw floor of the same cell.
  const lane = raw.lane;
  if (lane) {
    const c = `c=${lane.concurrency}, autocannon, ${lane.rounds * 2} interleaved ${fmt(lane.sliceMs / 1000)} s slices`;
    const what = (key: keyof FastLaneResult['rate']) => `${fmt(lane.rate[key])} req/s, p50 ${fmt(lane.p50[key])} ms`;
    add({
      bench: 'HTTP fast lane: tasks/get',
      case: `${c}; completed task`,
      figure: 'throughput',
      value: lane.rate.lane,
      unit: 'req/s',
      baseline: 'bare SDK echo',
      baselineValue: lane.rate.bare,
      baselineUnit: 'req/s',
      ratio: ratio(lane.rate.lane, lane.rate.bare),
      target: '≥ 10× bare SDK echo',
      verdict: verdict(lane.errors === 0 ? ratio(lane.rate.lane, lane.rate.bare) >= 10 : undefined),
      // The goal's two figures agree only where the floor is 20× the echo: say what 10× means on this host.
      note: `p50 ${fmt(lane.p50.lane)} ms; the raw floor is ${fmt(ratio(lane.rate.raw, lane.rate.bare))}× the bare echo in this run, so 10× the echo is ${fmt(ratio(10 * lane.rate.bare, lane.rate.raw))}× the floor${lane.errors ? `; ${lane.errors} errors: ${lane.firstError}` : ''}`,
    });
    add({
      bench: 'HTTP fast lane: tasks/get',
      case: c,
      figure: 'share of the raw floor',
      value: lane.rate.lane,
      unit: 'req/s',
      baseline: 'raw node:http echo',
      baselineValue: lane.rate.raw,
      baselineUnit: 'req/s',
      ratio: ratio(lane.rate.lane, lane.rate.raw),
      target: '≥ 0.5× raw floor',
      verdict: verdict(lane.errors === 0 ? ratio(lane.rate.lane, lane.rate.raw) >= 0.5 : undefined),
      note: `raw ${what('raw')}; our own loadgen tops out at ${fmt(lane.ownLoadgenOnRaw)} req/s on it`,
    });
    add({
      bench: 'HTTP fast lane: tasks/get',
      case: c,
      figure: 'lane vs SDK path (fastLane: false)',
      value: lane.rate.lane,
      unit: 'req/s',
      baseline: 'same runtime, lane off',
      baselineValue: lane.rate.sdk,
      baselineUnit: 'req/s',
      ratio: ratio(lane.rate.lane, lane.rate.sdk),
      note: `SDK path ${what('sdk')}; bare SDK echo ${what('bare')}`,
    });
    const cpu = lane.cpuPerAnswerUs;
    if (cpu) {
      add({
        bench: 'HTTP fast lane: tasks/get',
        case: c,
        figure: 'server CPU per answer',
        value: cpu.lane,
        unit: 'µs',
        baseline: 'raw node:http echo',
        baselineValue: cpu.raw,
        baselineUnit: 'µs',
        ratio: ratio(cpu.lane, cpu.raw),
        note: `every thread, /proc, over the measured slices; SDK path ${fmt(cpu.sdk)} µs, bare SDK echo ${fmt(cpu.bare)} µs (${fmt(ratio(cpu.bare, cpu.lane))}× the lane's)`,
      });
    }
  }

  // 1. Durable create.
  if (enabled('create')) {
    if (sqliteSkip)
      add({
        bench: '1. durable create',
        case: 'sqlite',
        figure: 'skipped: sqlite store not available',
        value: NaN,
        unit: '',
        note: sqliteSkip,
      });
    const seedOrder = (label: string) => SIZES.seeds.findIndex((seed) => seed.label === label);
    // Memory first (the create path without a disk), then the durable stores.
    const storeOrder = (store: CreateCell['store']) => (store === 'memory' ? -1 : stores.indexOf(store));
    const cells = [...raw.create].sort(
      (a, b) => storeOrder(a.store) - storeOrder(b.store) || seedOrder(a.seed) - seedOrder(b.seed) || a.concurrency - b.concurrency,
    );
    // At c=64 sqlite ≥ 2× and lowdb ≥ 1× the bare SDK echo; the memory store is a reference, not a goal.
    const c64Target: Partial<Record<CreateCell['store'], number>> = { sqlite: 2, lowdb: 1 };
    for (const cell of cells) {
      const c = cell.concurrency;
      const name =
        cell.store === 'memory'
          ? `memory (not durable, started empty; ${cell.storedAtStart.toLocaleString('en-US')} stored at start), c=${c}`
          : `${cell.store}, ${cell.seed} seeded (${cell.storedAtStart.toLocaleString('en-US')} stored at start), c=${c}`;
      const goal = c === 64 ? c64Target[cell.store] : undefined;
      const bareTput = cell.bare.throughput;
      const tr = ratio(cell.load.throughput, bareTput);
      add({
        bench: '1. durable create',
        case: name,
        figure: 'throughput',
        value: cell.load.throughput,
        unit: 'req/s',
        baseline: `bare SDK echo c=${c}`,
        baselineValue: bareTput,
        baselineUnit: 'req/s',
        ratio: tr,
        ...(goal !== undefined ? { target: `≥ ${goal}×`, verdict: verdict(tr >= goal) } : {}),
        note: [
          cell.load.errors ? `${cell.load.errors} errors: ${cell.load.firstError}` : '',
          `${perAnswer(cell.load)} (bare echo: ${perAnswer(cell.bare)})`,
        ]
          .filter(Boolean)
          .join('; '),
      });
      const pr = ratio(cell.load.latency.p50, fsP50);
      add({
        bench: '1. durable create',
        case: name,
        figure: 'p50',
        value: cell.load.latency.p50,
        unit: 'ms',
        baseline: 'fdatasync p50',
        baselineValue: fsP50,
        baselineUnit: 'ms',
        ratio: pr,
        // At c>1 the p50 is mostly queueing (Little's law: ≈ c / throughput): the floor target is judged at c=1.
        ...(cell.store === 'sqlite' && c === 1
          ? {
              target: '≤ 3×',
              verdict: verdict(pr <= 3),
              ...(Number.isFinite(c1Floor)
                ? {
                    note: `the floor alone (raw echo p50 ${fmt(rawEchoP50)} ms + one SQLite commit p50 ${fmt(commitP50)} ms) is ${fmt(ratio(c1Floor, fsP50))}× fdatasync`,
                  }
                : {}),
            }
          : {}),
      });
      if (cell.store === 'sqlite' && c === 1 && Number.isFinite(c1Floor)) {
        add({
          bench: '1. durable create',
          case: name,
          figure: 'p50 vs its floor',
          value: cell.load.latency.p50,
          unit: 'ms',
          baseline: 'raw echo p50 c=1 + SQLite commit p50',
          baselineValue: c1Floor,
          baselineUnit: 'ms',
          ratio: ratio(cell.load.latency.p50, c1Floor),
        });
      }
      if (c === 1) {
        const bareP50 = cell.bare.latency.p50;
        add({
          bench: '1. durable create',
          case: name,
          figure: 'p50 vs the SDK alone',
          value: cell.load.latency.p50,
          unit: 'ms',
          baseline: 'bare SDK echo p50 c=1',
          baselineValue: bareP50,
          baselineUnit: 'ms',
          ratio: ratio(cell.load.latency.p50, bareP50),
        });
      }
      const bareP99 = cell.bare.latency.p99;
      add({
        bench: '1. durable create',
        case: name,
        figure: 'p99',
        value: cell.load.latency.p99,
        unit: 'ms',
        baseline: `bare SDK echo p99 c=${c}`,
        baselineValue: bareP99,
        baselineUnit: 'ms',
        ratio: ratio(cell.load.latency.p99, bareP99),
      });
      const small = raw.create.find(
        (other) => other.store === cell.store && other.concurrency === c && other.seed === SIZES.seeds[0]!.label,
      );
      if (small && small !== cell) {
        const sr = ratio(cell.load.latency.p50, small.load.latency.p50);
        add({
          bench: '1. durable create',
          case: name,
          figure: `p50 vs ${small.seed} seeded`,
          value: cell.load.latency.p50,
          unit: 'ms',
          baseline: `p50 at ${small.seed} seeded, c=${c}`,
          baselineValue: small.load.latency.p50,
          baselineUnit: 'ms',
          ratio: sr,
          target: '≤ 1.5×',
          verdict: verdict(sr <= 1.5),
        });
      }
    }
    for (const kind of stores) {
      const starts = raw.serverStartMs[kind] ?? {};
      const [smallLabel, bigLabel] = [SIZES.seeds[0]!.label, SIZES.seeds[1]!.label];
      const small = median(starts[smallLabel] ?? []);
      const big = median(starts[bigLabel] ?? []);
      if (Number.isFinite(big)) {
        add({
          bench: '1. durable create',
          case: `${kind}, ${bigLabel} stored`,
          figure: 'server start (store open)',
          value: big,
          unit: 'ms',
          baseline: `start with ${smallLabel} stored`,
          baselineValue: small,
          baselineUnit: 'ms',
          ratio: ratio(big, small),
        });
      }
    }
  }

  // 2. tasks/get (and taskvisor's own synchronous echo for context).
  if (enabled('get')) {
    for (const cell of raw.get) {
      const c = cell.concurrency;
      const name = `${cell.store}, ${cell.variant === 'stored' ? 'completed task (read from the store)' : 'working task (live actor)'}, c=${c}`;
      const bareTput = cell.bare.throughput;
      const tr = ratio(cell.load.throughput, bareTput);
      add({
        bench: '2. tasks/get',
        case: name,
        figure: 'throughput',
        value: cell.load.throughput,
        unit: 'req/s',
        baseline: `bare SDK echo c=${c}`,
        baselineValue: bareTput,
        baselineUnit: 'req/s',
        ratio: tr,
        ...(c === 64 ? { target: '≥ 0.8×', verdict: verdict(tr >= 0.8) } : {}),
        ...(cell.load.errors ? { note: `${cell.load.errors} errors: ${cell.load.firstError}` } : {}),
      });
      const bareP50 = cell.bare.latency.p50;
      const bareP99 = cell.bare.latency.p99;
      add({
        bench: '2. tasks/get',
        case: name,
        figure: 'p50',
        value: cell.load.latency.p50,
        unit: 'ms',
        baseline: `bare SDK echo p50 c=${c}`,
        baselineValue: bareP50,
        baselineUnit: 'ms',
        ratio: ratio(cell.load.latency.p50, bareP50),
      });
      add({
        bench: '2. tasks/get',
        case: name,
        figure: 'p99',
        value: cell.load.latency.p99,
        unit: 'ms',
        baseline: `bare SDK echo p99 c=${c}`,
        baselineValue: bareP99,
        baselineUnit: 'ms',
        ratio: ratio(cell.load.latency.p99, bareP99),
      });
    }
    for (const cell of raw.echo) {
      const c = cell.concurrency;
      const bareTput = cell.bare.throughput;
      add({
        bench: '2. (context) taskvisor echo',
        case: `taskBehavior 'never', ${cell.store}, c=${c}`,
        figure: 'throughput',
        value: cell.load.throughput,
        unit: 'req/s',
        baseline: `bare SDK echo c=${c}`,
        baselineValue: bareTput,
        baselineUnit: 'req/s',
        ratio: ratio(cell.load.throughput, bareTput),
      });
    }
  }

  // 3. Heap and bytes.
  if (enabled('heap')) {
    const xs = raw.heap.xstate;
    for (const [key, label] of [
      ['memory', 'runtime + memory store (record copy kept)'],
      ['memory-hold', 'the same, a handler that never reads ctx.signal'],
      ['null', 'runtime only (store keeps nothing)'],
    ] as const) {
      const h = raw.heap[key];
      if (!h) continue;
      add({
        bench: '3. heap per live idle task',
        case: `${label}, N=${h.n}`,
        figure: 'heapUsed Δ / N',
        value: h.bytesPerTask,
        unit: 'B',
        baseline: 'bare xstate actor of the task machine',
        baselineValue: xs?.bytesPerTask ?? NaN,
        baselineUnit: 'B',
        ratio: ratio(h.bytesPerTask, xs?.bytesPerTask ?? NaN),
        ...(key === 'memory' ? { target: '≤ 6,144 B', verdict: verdict(h.bytesPerTask <= 6144) } : {}),
        note: `RSS Δ ${fmt(h.rssDelta / h.n)} B/task, ${fmt(h.createUsPerTask)} µs/create`,
      });
    }
    if (xs)
      add({
        bench: '3. heap per live idle task',
        case: `bare xstate actor, N=${xs.n}`,
        figure: 'heapUsed Δ / N',
        value: xs.bytesPerTask,
        unit: 'B',
        baseline: '—',
      });
    const big = raw.heap['memory-big'];
    const mem = raw.heap.memory;
    if (big) {
      add({
        bench: '3. live tasks in one process',
        case: `memory store, --max-old-space-size=4096`,
        figure: 'live idle tasks',
        value: big.live,
        unit: 'tasks',
        baseline: `heap/task at N=${mem?.n ?? '?'}`,
        baselineValue: mem?.bytesPerTask ?? NaN,
        baselineUnit: 'B',
        ratio: ratio(big.bytesPerTask, mem?.bytesPerTask ?? NaN),
        target: `≥ ${SIZES.bigHeapN.toLocaleString('en-US')}`,
        verdict: verdict(big.live >= SIZES.bigHeapN),
        note: `heap/task ${fmt(big.bytesPerTask)} B, heapUsed ${fmt(big.heapUsedAfter / 2 ** 20)} MiB, RSS Δ ${fmt(big.rssDelta / 2 ** 20)} MiB, ${fmt(big.createUsPerTask)} µs/create`,
      });
    }
    for (const kind of stores) {
      const b = raw.bytes[kind];
      if (!b) continue;
      add({
        bench: '3. bytes per stored task',
        case: `${kind}, ${b.tasks} completed tasks${kind === 'sqlite' ? ' (page_count × page_size / rows)' : ' (file size)'}`,
        figure: 'bytes / task',
        value: b.bytesPerTask,
        unit: 'B',
        baseline: 'record as compact JSON',
        baselineValue: b.recordJsonBytes,
        baselineUnit: 'B',
        ratio: ratio(b.bytesPerTask, b.recordJsonBytes),
      });
      if (b.allocatedPerTask !== undefined) {
        add({
          bench: '3. bytes per stored task',
          case: `${kind} (allocated disk blocks)`,
          figure: 'bytes / task',
          value: b.allocatedPerTask,
          unit: 'B',
          baseline: 'record as compact JSON',
          baselineValue: b.recordJsonBytes,
          baselineUnit: 'B',
          ratio: ratio(b.allocatedPerTask, b.recordJsonBytes),
        });
      }
    }
    if (sqliteSkip)
      add({
        bench: '3. bytes per stored task',
        case: 'sqlite',
        figure: 'skipped: sqlite store not available',
        value: NaN,
        unit: '',
        note: sqliteSkip,
      });
  }

  // 3. Passivated idle tasks.
  if (enabled('passivation')) {
    const heap = raw.passivation.heap ?? {};
    const xs = heap.xstate;
    const sizesOf = (result: PassivationResult) => result.sizes.map((size) => size.n.toLocaleString('en-US')).join(' → ');
    /** The passivated and live rows of one waiting kind, each against the bare actor's slope (the same floor for both kinds). */
    const waitingRows = (bench: string, what: string, results: Partial<Record<'passivated' | 'live', PassivationResult>>) => {
      for (const [state, label] of [
        ['passivated', 'passivated (passivateIdleAfterMs 0), SQLite store'],
        ['live', 'live (passivation off), SQLite store'],
      ] as const) {
        const h = results[state];
        if (!h) continue;
        add({
          bench,
          case: `${label}${what}, slope N=${sizesOf(h)}`,
          figure: 'Δ heapUsed / Δ N',
          value: h.slopeBytesPerTask,
          unit: 'B',
          baseline: 'bare xstate actor of the task machine (slope)',
          baselineValue: xs?.slopeBytesPerTask ?? NaN,
          baselineUnit: 'B',
          ratio: ratio(h.slopeBytesPerTask, xs?.slopeBytesPerTask ?? NaN),
          ...(state === 'passivated' ? { target: '≤ 8,192 B', verdict: verdict(h.slopeBytesPerTask <= 8192) } : {}),
          note: `RSS slope ${fmt(h.rssSlopeBytesPerTask)} B/task${state === 'passivated' && results.live ? `; ${fmt(ratio(h.slopeBytesPerTask, results.live.slopeBytesPerTask))}× the live task` : ''}`,
        });
      }
    };
    waitingRows('3. heap per input-waiting task', '', heap);
    if (xs)
      add({
        bench: '3. heap per input-waiting task',
        case: `bare xstate actor, slope N=${sizesOf(xs)}`,
        figure: 'Δ heapUsed / Δ N',
        value: xs.slopeBytesPerTask,
        unit: 'B',
        baseline: '—',
      });
    waitingRows('3. heap per timer-waiting task', ', ctx.sleep of an hour', raw.passivation.sleepHeap ?? {});
    const million = heap.recovered;
    if (million) {
      const at = million.sizes[0]!;
      const cap = MILLION_HEAP_MB * 2 ** 20;
      add({
        bench: '3. passivated tasks in one process',
        case: `${at.n.toLocaleString('en-US')} input-waiting tasks, SQLite store, recovered passivated, --max-old-space-size=${MILLION_HEAP_MB}`,
        figure: 'heapUsed',
        value: at.heapUsed / 2 ** 20,
        unit: 'MiB',
        baseline: '4 GiB',
        baselineValue: MILLION_HEAP_MB,
        baselineUnit: 'MiB',
        ratio: at.heapUsed / cap,
        target: `${SIZES.passivationMillion.toLocaleString('en-US')} within 4 GiB`,
        // Heap and the whole process (RSS: heap, native memory, SQLite's page cache) both within the bound.
        verdict: verdict(at.passivated === SIZES.passivationMillion && at.heapUsed <= cap && at.rss <= cap),
        note: `${at.passivated.toLocaleString('en-US')} passivated, RSS ${fmt(at.rss / 2 ** 20)} MiB (${fmt(at.rss / cap)}× 4 GiB), ${fmt(million.slopeBytesPerTask)} B heap/task; seeded in ${fmt((million.seedMs ?? NaN) / 1000)} s, start (recovery) ${fmt((million.startMs ?? NaN) / 1000)} s`,
      });
    }
    const httpCell = raw.passivation.http;
    if (httpCell) {
      for (const kind of ['get', 'update'] as const) {
        const { passivated, live } = httpCell[kind];
        const checked =
          kind === 'update'
            ? `; ${httpCell.updates.passivated.mismatched + httpCell.updates.live.mismatched} tasks not where the answers sent lead`
            : '';
        add({
          bench: `3. tasks/${kind} on a passivated task`,
          case: `pool ${httpCell.pool} waiting tasks per server, c=${httpCell.concurrency}, interleaved slices`,
          figure: 'p50 latency',
          value: passivated.latency.p50,
          unit: 'ms',
          baseline: `tasks/${kind} on a live task`,
          baselineValue: live.latency.p50,
          baselineUnit: 'ms',
          ratio: ratio(passivated.latency.p50, live.latency.p50),
          target: '≤ 2× live',
          verdict: verdict(passivated.errors === 0 && ratio(passivated.latency.p50, live.latency.p50) <= 2),
          note: `p99 ${fmt(passivated.latency.p99)} vs ${fmt(live.latency.p99)} ms; ${fmt(passivated.throughput)} vs ${fmt(live.throughput)} req/s; errors ${passivated.errors}/${live.errors}${checked}`,
        });
      }
    }
  }

  // 4. Recovery.
  if (enabled('recovery')) {
    if (sqliteSkip)
      add({ bench: '4. restart recovery', case: 'sqlite', figure: 'skipped: sqlite store not available', value: NaN, unit: '' });
    const bigLabel = SIZES.recoveryN[SIZES.recoveryN.length - 1]!.label;
    for (const entry of raw.recovery) {
      const r = entry.result;
      const name = `${entry.store}, ${entry.label} working, resume '${entry.resume}'`;
      if (!r) {
        add({
          bench: '4. restart recovery',
          case: name,
          figure: 'runtime.start()',
          value: NaN,
          unit: 's',
          note: entry.error ?? 'no result',
        });
        continue;
      }
      const value = (r.partial ? (r.projectedStartMs ?? NaN) : r.startMs) / 1000;
      const read = (r.openMs + r.listMs) / 1000;
      // The goal is sqlite's; the other stores' rows are ratios only.
      const isTarget = entry.store === 'sqlite' && entry.resume === 'fail' && entry.label === bigLabel;
      add({
        bench: '4. restart recovery',
        case: name,
        figure: r.partial ? 'runtime.start() (projected)' : 'runtime.start()',
        value,
        unit: 's',
        baseline: 'plain read of the same records: store open + listNonTerminal (same child, before start)',
        baselineValue: read,
        baselineUnit: 's',
        ratio: ratio(value, read),
        ...(isTarget ? { target: '≤ 5 s', verdict: verdict(value <= 5) } : {}),
        note: r.partial
          ? `stopped after ${fmt(r.startMs / 1000)} s with ${r.puts}/${r.listed} failed records written; projected from that rate`
          : entry.resume === 'replay'
            ? `${r.report?.resumed ?? '?'} resumed; until flushed ${fmt((r.flushedMs ?? NaN) / 1000)} s`
            : `${r.report?.failed ?? '?'} failed records written`,
      });
    }
  }

  // 5. Fan-out: every figure against the floor (bare node:http SSE, or bare ws) measured in the same (interleaved) pokes.
  const fanoutRows = (
    results: { one?: FanoutResult[]; many?: FanoutResult[]; big?: FanoutResult[] },
    transport: { streams: string; baseline: string; stores: readonly ('lowdb' | 'memory')[]; targetStore?: 'lowdb' },
  ) => {
    if (!results.many || !results.one) return;
    const bench = '5. status → notifications/tasks';
    const pick = (cell: FanoutResult[], name: string) => cell.find((r) => r.name === name)!;
    const baseline = `${transport.baseline}, same listeners, interleaved`;
    for (const [cell, listeners] of [
      [results.one, 1],
      [results.many, SIZES.listeners],
    ] as const) {
      const floor = pick(cell, 'floor');
      for (const store of transport.stores) {
        const r = pick(cell, store);
        const isTarget = listeners === SIZES.listeners && store === transport.targetStore;
        add({
          bench,
          case: `${listeners} ${transport.streams}${listeners === 1 ? '' : 's'} on one task, ${store} store, ${r.pokes} changes`,
          figure: 'p50 (poke sent → frame read)',
          value: r.latency.p50,
          unit: 'ms',
          baseline,
          baselineValue: floor.latency.p50,
          baselineUnit: 'ms',
          ratio: ratio(r.latency.p50, floor.latency.p50),
          ...(isTarget ? { target: '≤ 5 ms', verdict: verdict(r.latency.p50 <= 5) } : {}),
          note: `p99 ${fmt(r.latency.p99)} ms (floor ${fmt(floor.latency.p99)}); from the change stamp p50 ${fmt(r.sinceChange.p50)} ms (floor ${fmt(floor.sinceChange.p50)}); poke round trip p50 ${fmt(r.pokeRtt.p50)} ms${r.missed ? `; ${r.missed} frames missing` : ''}`,
        });
        if (listeners === 1) continue;
        add({
          bench,
          case: `${listeners} ${transport.streams}s on one task, ${store} store, ${r.pokes} changes`,
          figure: 'server CPU per change (poke + fan-out)',
          value: r.cpuPerChangeMicros / 1000,
          unit: 'ms',
          baseline,
          baselineValue: floor.cpuPerChangeMicros / 1000,
          baselineUnit: 'ms',
          ratio: ratio(r.cpuPerChangeMicros, floor.cpuPerChangeMicros),
          note: `slowest listener median ${fmt(median(r.lastListenerMs))} ms (floor ${fmt(median(floor.lastListenerMs))}); ${listeners} streams opened in ${fmt(r.openMs)} ms`,
        });
      }
    }
    const big = results.big ?? [];
    const bigTaskvisor = big.find((r) => r.name === 'memory');
    const bigFloors = big.filter((r) => r.name === 'floor');
    if (bigTaskvisor && bigFloors.length > 0) {
      const floorP50 = median(bigFloors.map((r) => r.latency.p50));
      add({
        bench,
        case: `${bigTaskvisor.listeners} ${transport.streams}s on one task, memory store, ${bigTaskvisor.pokes} changes`,
        figure: 'p50 (poke sent → frame read)',
        value: bigTaskvisor.latency.p50,
        unit: 'ms',
        baseline: `${transport.baseline}, same listeners, run before and after`,
        baselineValue: floorP50,
        baselineUnit: 'ms',
        ratio: ratio(bigTaskvisor.latency.p50, floorP50),
        note: `p99 ${fmt(bigTaskvisor.latency.p99)} ms (floor ${fmt(median(bigFloors.map((r) => r.latency.p99)))}); CPU/change ${fmt(bigTaskvisor.cpuPerChangeMicros / 1000)} ms (floor ${fmt(median(bigFloors.map((r) => r.cpuPerChangeMicros)) / 1000)}); opened in ${fmt(bigTaskvisor.openMs / 1000)} s${bigTaskvisor.missed ? `; ${bigTaskvisor.missed} frames missing` : ''}`,
      });
    }
  };
  if (enabled('fanout')) {
    fanoutRows(raw.fanout, {
      streams: 'SSE listen stream',
      baseline: 'bare node:http SSE server',
      stores: ['lowdb', 'memory'],
      targetStore: 'lowdb',
    });
    fanoutRows(raw.fanoutWs, { streams: 'WebSocket listen stream', baseline: 'bare ws server', stores: ['memory'] });
  }
  // 6. Durable create through PostgreSQL against the sqlite store (at c=64 at least the sqlite throughput).
  if (enabled('postgres') && (!quick || only?.includes('postgres'))) {
    if (postgresSkip) add({ bench: '6. postgres durable create', case: '', figure: 'skipped', value: NaN, unit: '', note: postgresSkip });
    for (const cell of raw.postgres) {
      const r = ratio(cell.postgres.throughput, cell.sqlite.throughput);
      add({
        bench: '6. postgres durable create',
        case: `empty schema, pool 10, c=${cell.concurrency}`,
        figure: 'throughput',
        value: cell.postgres.throughput,
        unit: 'req/s',
        baseline: `sqlite store c=${cell.concurrency}`,
        baselineValue: cell.sqlite.throughput,
        baselineUnit: 'req/s',
        ratio: r,
        ...(cell.concurrency === 64 ? { target: '≥ 1×', verdict: verdict(r >= 1) } : {}),
        ...(cell.postgres.errors ? { note: `${cell.postgres.errors} errors: ${cell.postgres.firstError}` } : {}),
      });
      // Against PostgreSQL's own floor (bench/pgFloor.ts): one single-row INSERT per commit, same pool size, same run.
      const floorRatio = ratio(cell.postgres.throughput, cell.floor.throughput);
      add({
        bench: '6. postgres durable create',
        case: `c=${cell.concurrency}, vs PostgreSQL's floor`,
        figure: 'throughput',
        value: cell.postgres.throughput,
        unit: 'req/s',
        baseline: `single-row INSERT per commit (synchronous_commit on), pool ${PG_POOL_SIZE}, c=${cell.concurrency}`,
        baselineValue: cell.floor.throughput,
        baselineUnit: 'commits/s',
        ratio: floorRatio,
        ...(cell.concurrency === 64 ? { target: '≥ 0.8×', verdict: verdict(floorRatio >= 0.8) } : {}),
        ...(cell.floor.errors ? { note: `floor: ${cell.floor.errors} errors: ${cell.floor.firstError}` } : {}),
      });
      const floorLatency = ratio(cell.postgres.latency.p50, cell.floor.latency.p50);
      add({
        bench: '6. postgres durable create',
        case: `c=${cell.concurrency}, vs PostgreSQL's floor`,
        figure: 'p50 / p99',
        value: cell.postgres.latency.p50,
        unit: `ms / ${fmt(cell.postgres.latency.p99)} ms`,
        baseline: `single-row INSERT per commit, c=${cell.concurrency}`,
        baselineValue: cell.floor.latency.p50,
        baselineUnit: `ms / ${fmt(cell.floor.latency.p99)} ms`,
        ratio: floorLatency,
        ...(cell.concurrency === 1 ? { target: '≤ 2×', verdict: verdict(floorLatency <= 2) } : {}),
      });
      add({
        bench: '6. postgres durable create',
        case: `c=${cell.concurrency}`,
        figure: 'p50 / p99',
        value: cell.postgres.latency.p50,
        unit: `ms / ${fmt(cell.postgres.latency.p99)} ms`,
        baseline: `sqlite store c=${cell.concurrency}`,
        baselineValue: cell.sqlite.latency.p50,
        baselineUnit: `ms / ${fmt(cell.sqlite.latency.p99)} ms`,
        ratio: ratio(cell.postgres.latency.p50, cell.sqlite.latency.p50),
      });
    }
  }
  if (enabled('cluster') && (!quick || only?.includes('cluster'))) {
    if (clusterSkip)
      add({ bench: '10. two instances, one PostgreSQL', case: '', figure: 'skipped', value: NaN, unit: '', note: clusterSkip });
    if (raw.cluster) for (const row of clusterRows(raw.cluster, verdict)) add(row);
  }
  // 6. Slow reader.
  const { budget: slow, unbounded } = raw.slowReader;
  if (enabled('slowreader') && slow && unbounded) {
    const MiB = 2 ** 20;
    const name = `WS client not reading, ${slow.requests}× tasks/get of a ${fmt(slow.resultBytes / MiB)} MB result, pongs sent`;
    add({
      bench: '6. outbound budget (slow reader)',
      case: name,
      figure: 'server RSS growth',
      value: slow.rssGrowth / MiB,
      unit: 'MB',
      baseline: 'budget out of reach (1 GiB)',
      baselineValue: unbounded.rssGrowth / MiB,
      baselineUnit: 'MB',
      ratio: ratio(slow.rssGrowth, unbounded.rssGrowth),
      target: `≤ budget (${fmt(slow.budgetBytes / MiB)} MiB) ×2 + 64 MB`,
      verdict: verdict(slow.rssGrowth <= 2 * slow.budgetBytes + 64 * MiB),
      note: `growth / budget = ${fmt(slow.rssGrowth / slow.budgetBytes)}`,
    });
    add({
      bench: '6. outbound budget (slow reader)',
      case: name,
      figure: 'attacker closed after',
      value: slow.closedAfterMs ?? NaN,
      unit: 'ms',
      baseline: 'budget out of reach',
      baselineValue: unbounded.closedAfterMs ?? NaN,
      baselineUnit: unbounded.closedAfterMs === null ? 'never' : 'ms',
      target: '≤ grace (10 s) + 2 s',
      verdict: verdict(slow.closedAfterMs !== null && slow.closedAfterMs <= 12_000),
    });
    add({
      bench: '6. outbound budget (slow reader)',
      case: name,
      figure: 'other client answered',
      value: slow.otherAnswered / Math.max(1, slow.otherAsked),
      unit: 'share',
      baseline: 'budget out of reach',
      baselineValue: unbounded.otherAnswered / Math.max(1, unbounded.otherAsked),
      baselineUnit: 'share',
      note: `${slow.otherAnswered}/${slow.otherAsked} vs ${unbounded.otherAnswered}/${unbounded.otherAsked}`,
    });
  }

  // 7. Foreign vs unknown ids.
  for (const r of enabled('foreign') ? raw.foreign : []) {
    const name = `tasks/get as another principal, ${r.store}, median of ${r.n}`;
    for (const [figure, value] of [
      ['foreign id, small task', r.foreignSmall],
      [`foreign id, ${fmt(r.resultBytes / 2 ** 20)} MB result`, r.foreignBig],
    ] as const) {
      add({
        bench: '7. foreign vs unknown task id',
        case: name,
        figure,
        value,
        unit: 'ms',
        baseline: 'unknown id (same run)',
        baselineValue: r.unknown,
        baselineUnit: 'ms',
        ratio: ratio(value, r.unknown),
        target: '≈ 1× (no record of another principal is loaded)',
        verdict: verdict(value <= r.unknown * 1.5),
        ...(figure.includes('MB') ? { note: `the owner's own get of it: ${fmt(r.ownBig)} ms` } : {}),
      });
    }
  }

  // 9. Promoted upstream calls.
  if (enabled('promoted') && (!quick || only?.includes('promoted')) && raw.promoted)
    for (const row of promotedRows(raw.promoted)) add(row as unknown as Row);

  // 8. Cold start.
  const cold = raw.coldStart;
  if (enabled('coldstart') && cold && cold.built.length > 0) {
    const built = median(cold.built);
    const floor = median(cold.floor);
    add({
      bench: '8. cold start',
      case: `serve --stdio --demo from the built package, spawn to the initialize answer (median of ${cold.built.length})`,
      figure: 'time to first answer',
      value: built,
      unit: 'ms',
      baseline: 'node -e 0, spawn to exit',
      baselineValue: floor,
      baselineUnit: 'ms',
      ratio: ratio(built, floor),
      // The goal is ≤ 300 ms where node -e 0 takes 100 ms: as a ratio, so a loaded machine
      // (which slows both alike) does not decide the verdict.
      target: '≤ 3× node -e 0 (300 ms at 100 ms)',
      verdict: verdict(ratio(built, floor) <= 3),
      note: `max ${fmt(Math.max(...cold.built))} ms${cold.rebuilt ? '; dist/ rebuilt first' : ''}`,
    });
    if (cold.bare.length > 0) {
      const bare = median(cold.bare);
      add({
        bench: '8. cold start',
        case: `the same from the built package (median of ${cold.built.length})`,
        figure: 'time to first answer',
        value: built,
        unit: 'ms',
        baseline: 'bare v2 SDK stdio server (McpServer, one zod tool), spawn to the initialize answer',
        baselineValue: bare,
        baselineUnit: 'ms',
        ratio: ratio(built, bare),
        note: `the SDK alone: ${fmt(ratio(bare, floor))}× node -e 0`,
      });
    }
    if (cold.source.length > 0) {
      const source = median(cold.source);
      add({
        bench: '8. cold start',
        case: `the same from the TypeScript sources through tsx (median of ${cold.source.length})`,
        figure: 'time to first answer',
        value: source,
        unit: 'ms',
        baseline: 'built package',
        baselineValue: built,
        baselineUnit: 'ms',
        ratio: ratio(source, built),
        note: 'the TypeScript sources without the bundle',
      });
    }
  }

  return rows;
}

function renderTable(rows: Row[]): string {
  const lines = [
    '| Benchmark | Case | Figure | Value | Baseline (same run) | Baseline value | Ratio | Target | Verdict | Note |',
    '|---|---|---|---:|---|---:|---:|---|---|---|',
  ];
  const cell = (text: string) => text.replaceAll('|', '\\|');
  for (const row of rows) {
    const value = Number.isFinite(row.value) ? `${fmt(row.value)} ${row.unit}`.trim() : '—';
    const baselineValue = row.baselineValue !== undefined ? `${fmt(row.baselineValue)} ${row.baselineUnit ?? ''}`.trim() : '';
    const r = row.ratio !== undefined && Number.isFinite(row.ratio) ? `${fmt(row.ratio)}×` : '';
    lines.push(
      `| ${cell(row.bench)} | ${cell(row.case)} | ${cell(row.figure)} | ${cell(value)} | ${cell(row.baseline ?? '')} | ${cell(baselineValue)} | ${r} | ${cell(row.target ?? '')} | ${row.verdict ? `**${row.verdict}**` : ''} | ${cell(row.note ?? '')} |`,
    );
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Main

const startedAt = new Date();
const loadStart = loadavg();
const dataDir = await mkdtemp(join(tmpdir(), 'taskvisor-bench-'));
log(
  `taskvisor bench (${quick ? 'quick' : 'full'}${only ? `, only ${only.join(',')}` : ''}); data in ${dataDir}; load average ${loadStart.map((l) => l.toFixed(2)).join(' ')}`,
);
// Every child measures the compiled library, as users run it (bench/compiledLibrary.ts); `--source`: tsx.
const compiled = flags.source ? undefined : await compileLibrary();
log(
  compiled
    ? `library: compiled (tsc, tsconfig.build.json) in ${fmt(compiled.ms)} ms`
    : 'library: TypeScript sources through tsx (--source)',
);

const stores: StoreKind[] = ['lowdb'];
let sqliteSkip: string | undefined;
let postgresSkip: string | undefined;
let clusterSkip: string | undefined;
try {
  const sqlite = await sqliteAvailable();
  if (sqlite.ok) stores.push('sqlite');
  else {
    sqliteSkip = sqlite.why;
    raw.skipped.push(`sqlite: ${sqlite.why}`);
    log(`skipped: sqlite store not available (${sqlite.why})`);
  }

  const templates = await captureTemplates();
  await fsyncRound(dataDir, 1);

  if (enabled('create') || enabled('get')) {
    const bare = await startBare();
    try {
      if (enabled('create')) await section('create memory', () => memoryCreateCells(bare));
      for (const [index, kind] of stores.entries()) {
        await section(`create/get ${kind}`, () => storeBenchmarks(kind, dataDir, templates, index === stores.length - 1, bare));
      }
    } finally {
      await bare.stop();
    }
  }
  if (enabled('lane'))
    await section('lane', async () => {
      raw.lane = await runFastLaneCell({
        concurrency: 16,
        sliceMs: quick ? 600 : 1_500,
        warmupMs: quick ? 100 : 250,
        rounds: quick ? 1 : 2,
        prewarmMs: quick ? 300 : 2_000,
        log,
      });
    });
  if (ROUNDS === 3) await fsyncRound(dataDir, 2);
  if (enabled('heap')) await heapBenchmarks(dataDir, templates, stores);
  if (enabled('passivation')) {
    // The SQLite store is what makes a million waiting tasks fit (no record in the heap).
    if (stores.includes('sqlite')) await section('passivation', () => passivationBenchmark(dataDir));
    else raw.skipped.push(`passivation: ${sqliteSkip}`);
  }
  if (enabled('recovery')) {
    const pgRecoverySkip = await postgresUnavailable();
    if (pgRecoverySkip) {
      raw.skipped.push(`postgres recovery: ${pgRecoverySkip}`);
      log(`skipped: postgres recovery (${pgRecoverySkip})`);
    }
    await recoveryBenchmarks(dataDir, templates, stores, pgRecoverySkip === undefined);
  }
  if (enabled('fanout')) await section('fanout', () => fanoutBenchmark(dataDir));
  // Not in a plain --quick run (it may build dist/, which the pack test of `npm test` builds too); `--quick --only coldstart` runs it.
  if (enabled('coldstart') && (!quick || only?.includes('coldstart')))
    await section('coldstart', async () => {
      log('cold start: serve --stdio --demo from dist/ vs node -e 0');
      raw.coldStart = await runColdStart(quick ? 3 : 10, quick ? 1 : 3);
    });
  // Like postgres, not in a plain --quick run (two extra server processes); `--quick --only slowreader` runs it.
  if (enabled('slowreader') && (!quick || only?.includes('slowreader'))) await section('slowreader', slowReaderBenchmark);
  if (enabled('foreign') && (!quick || only?.includes('foreign'))) await section('foreign', foreignGetBenchmark);
  // Like postgres, not in a plain --quick run (an upstream child and two runtimes); `--quick --only promoted` runs it small.
  if (enabled('promoted') && (!quick || only?.includes('promoted')))
    await section('promoted', async () => void (raw.promoted = await runPromoted(quick, log)));
  // Not in a plain --quick run (it stays a smoke test of the rest); `--quick --only postgres` runs it small.
  if (enabled('postgres') && (!quick || only?.includes('postgres'))) {
    postgresSkip = !stores.includes('sqlite') ? `no baseline: ${sqliteSkip}` : await postgresUnavailable();
    if (postgresSkip) {
      raw.skipped.push(`postgres: ${postgresSkip}`);
      log(`skipped: postgres (${postgresSkip})`);
    } else await section('postgres', () => postgresBenchmark(dataDir));
  }
  if (enabled('cluster') && (!quick || only?.includes('cluster'))) {
    clusterSkip = await postgresUnavailable();
    if (clusterSkip) {
      raw.skipped.push(`cluster: ${clusterSkip}`);
      log(`skipped: cluster (${clusterSkip})`);
    } else await section('cluster', clusterBenchmark);
  }
  if (ROUNDS >= 2) await fsyncRound(dataDir, ROUNDS);
} finally {
  await rm(dataDir, { recursive: true, force: true });
  await compiled?.remove();
}

const loadEnd = loadavg();
const rows = buildRows(stores, sqliteSkip);
const table = renderTable(rows);
const finishedAt = new Date();
const header = [
  ...(quick ? ['(quick run: tiny sizes and one concurrency — a smoke test; no verdicts)'] : []),
  `taskvisor bench — ${startedAt.toISOString()} — ${quick ? 'quick' : 'full'} run${only ? ` (only ${only.join(', ')})` : ''} — ${((performance.now() - t0) / 1000).toFixed(0)} s`,
  `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}; library ${compiled ? 'compiled' : 'sources through tsx'}; load average at start ${loadStart.map((l) => l.toFixed(2)).join(' / ')}, at end ${loadEnd.map((l) => l.toFixed(2)).join(' / ')}`,
];
await mkdir(resultsDir, { recursive: true });
const resultFile = join(resultsDir, `${startedAt.toISOString().replaceAll(':', '-')}.json`);
await writeFile(
  resultFile,
  `${JSON.stringify(
    {
      startedAt: startedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      mode: quick ? 'quick' : 'full',
      only: only ?? null,
      library: compiled ? 'compiled' : 'source',
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      loadavgStart: loadStart,
      loadavgEnd: loadEnd,
      sizes: SIZES,
      baselineRounds: ROUNDS,
      rows,
      raw,
    },
    null,
    2,
  )}\n`,
);
process.stdout.write(`${header.join('\n')}\n\n${table}\n\nresults: ${resultFile}\n`);
if (raw.errors.length > 0) process.stderr.write(`\n${raw.errors.length} benchmark section(s) failed:\n${raw.errors.join('\n')}\n`);
process.exit(process.exitCode ?? 0);
