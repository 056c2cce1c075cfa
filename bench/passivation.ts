/**
 * Passivated idle tasks (waiting ones kept in the store, not in memory), in a child of its own (run with
 * `--expose-gc`): heap per input-waiting task, and how many fit in one process.
 *
 *   node --expose-gc --import tsx bench/passivation.ts '{"state":"passivated","sizes":[10000,20000]}'
 *
 * States:
 * - `xstate`: the floor — bare `createActor(taskMachine).start()`, no runtime.
 * - `live`: a runtime (passivation off) whose `bench_ask` tasks each wait for
 *   input with a live actor and a suspended handler run.
 * - `passivated`: the same with `passivateIdleAfterMs: 0`: every task leaves
 *   memory once its `input_required` record is stored; only the registry's
 *   entry stays.
 *
 * `wait: 'sleep'` (live and passivated only) measures the same for tasks
 * waiting for a timer: `bench_sleep` tasks each sleep an hour in
 * `ctx.sleep`; live, each keeps its actor, its suspended run and its
 * timer; passivated, each leaves memory once its sleep is stored and only
 * the registry's entry (and its wake time's item in the passivated tasks'
 * one timer queue) stays.
 *
 * - `recovered`: the million-task run. `sizes[0]` input-waiting `bench_ask`
 *   records (clones of a real one) are seeded into an SQLite file, then a
 *   runtime with `passivateIdleAfterMs: 0` starts on it: recovery keeps each
 *   passivated without building its actor (TaskPassivation.hold), exactly as
 *   a restart does. Creating a million tasks one `tools/call` at a time
 *   (~2 ms each on this shared machine) would take over half an hour; what
 *   stays per task is the same registry entry either way.
 *
 * Every runtime here uses the SQLite store (a temporary file): it keeps no record in
 * the heap (its page cache is native memory, in RSS), so the heap holds only
 * what the runtime keeps per task — the memory store would keep a copy of
 * every record, snapshot included, and is no store for a million tasks.
 *
 * Tasks are created through the runtime's internal `ToolCaller.call` — the
 * path a `tools/call` takes once the SDK has parsed it — `window` at a time;
 * each size waits until every task waits for input (and, passivated, has
 * left memory), then measures heapUsed after full GCs. The heap per task is
 * the slope between the sizes, `(heap(n₂) − heap(n₁)) / (n₂ − n₁)`: what one
 * more task costs, with the runtime's and the store's fixed costs cancelled.
 *
 * Prints `PROGRESS {…}` lines and `RESULT {…}` on stdout.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createActor } from 'xstate';
import { createRuntime, silentLogger, type TaskRecord } from '../src/index.js';
import { taskMachine } from '../src/inspection/index.js';
import type { ToolCaller } from '../src/runtime/ToolCaller.js';
import { seedSqlite, sqliteConfig } from './seed.js';
import { registerBenchTools } from './tools.js';

export interface PassivationArgs {
  state: 'xstate' | 'live' | 'passivated' | 'recovered';
  /** Task counts measured at, ascending (the slope is taken between the first and the last). */
  sizes: number[];
  /** What the tasks wait for: input (`bench_ask`, default) or a timer (`bench_sleep`). */
  wait?: 'input' | 'sleep';
  /** Creates in flight at once. Default 500. */
  window?: number;
}

export interface PassivationSize {
  n: number;
  heapUsed: number;
  rss: number;
  /** Tasks with a live actor / passivated when measured. */
  live: number;
  passivated: number;
  /** ms to create this size's tasks (from the previous size) and see them all waiting. */
  createMs: number;
}

export interface PassivationResult {
  state: PassivationArgs['state'];
  wait: NonNullable<PassivationArgs['wait']>;
  baseline: { heapUsed: number; rss: number };
  sizes: PassivationSize[];
  /** (heapUsed at the last size − at the first) / (tasks between them). */
  slopeBytesPerTask: number;
  /** The same for RSS (heap, native memory and SQLite's page cache). */
  rssSlopeBytesPerTask: number;
  /** `recovered`: ms to seed the store, ms `runtime.start()` took (recovery holding every task passivated). */
  seedMs?: number;
  startMs?: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as PassivationArgs;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const sizes = [...args.sizes].sort((a, b) => a - b);
if (sizes.length < (args.state === 'recovered' ? 1 : 2))
  throw new Error('give at least two sizes (the heap per task is the slope between them)');
const window = args.window ?? 500;
const wait = args.wait ?? 'input';
const tool = wait === 'sleep' ? 'bench_sleep' : 'bench_ask';

/** A client that can answer form elicitations (`bench_ask` fails its tasks otherwise). */
const CAPABILITIES = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };

const tick = () => new Promise((resolve) => setImmediate(resolve));
async function settle(): Promise<{ heapUsed: number; rss: number }> {
  for (let i = 0; i < 3; i++) {
    await tick();
    gc!();
  }
  const { heapUsed, rss } = process.memoryUsage();
  return { heapUsed, rss };
}
const progress = (data: unknown) => process.stdout.write(`PROGRESS ${JSON.stringify(data)}\n`);

const keep: unknown[] = [];
const measured: PassivationSize[] = [];
let baseline: { heapUsed: number; rss: number };
let seedMs: number | undefined;
let startMs: number | undefined;
const dir = await mkdtemp(join(tmpdir(), 'taskvisor-bench-passivation-'));

try {
  if (args.state === 'xstate') {
    const actors: unknown[] = [];
    keep.push(actors);
    baseline = await settle();
    let made = 0;
    for (const n of sizes) {
      const started = performance.now();
      for (; made < n; made++) {
        const taskId = `t${made.toString(16).padStart(31, '0')}`;
        actors.push(
          createActor(taskMachine, {
            input: { taskId, owner: 'anonymous', tool: 'bench_ask', args: {}, now: Date.now(), ttlMs: 3_600_000 },
          }).start(),
        );
      }
      const createMs = performance.now() - started;
      measured.push({ n, ...(await settle()), live: made, passivated: 0, createMs });
    }
  } else if (args.state === 'recovered') {
    const n = sizes[0]!;
    const file = join(dir, 'tasks.sqlite');
    const template = await waitingTemplate(join(dir, 'template.sqlite'));
    seedMs = await seedSqlite(file, template, n);
    progress({ seeded: n, ms: Math.round(seedMs) });
    baseline = await settle();
    const runtime = createRuntime({
      store: sqliteConfig(file),
      reapIntervalMs: 0,
      passivateIdleAfterMs: 0,
      limits: { maxLiveTasksPerPrincipal: Number.MAX_SAFE_INTEGER },
      logger: silentLogger,
    });
    keep.push(runtime);
    registerBenchTools(runtime);
    const started = performance.now();
    const report = await runtime.start();
    startMs = performance.now() - started;
    if (runtime.passivatedTasks !== n)
      throw new Error(`recovery held ${runtime.passivatedTasks} of ${n} passivated (${JSON.stringify(report)})`);
    measured.push({ n, ...(await settle()), live: runtime.liveTasks, passivated: runtime.passivatedTasks, createMs: startMs });
  } else {
    const runtime = createRuntime({
      store: sqliteConfig(join(dir, 'tasks.sqlite')),
      reapIntervalMs: 0,
      passivateIdleAfterMs: args.state === 'passivated' ? 0 : false,
      // One principal holds every task: the per-principal limit (default 1000) would cut the bench short.
      limits: { maxLiveTasksPerPrincipal: Number.MAX_SAFE_INTEGER },
      logger: silentLogger,
    });
    keep.push(runtime);
    registerBenchTools(runtime);
    await runtime.start();
    // Private field, read only: the same call path a tools/call takes once the SDK has parsed it.
    const caller = (runtime as unknown as { parts: { caller: ToolCaller } }).parts.caller;
    const create = async () => {
      const outcome = await caller.call({
        name: tool,
        args: {},
        principal: 'anonymous',
        declaresTasks: true,
        clientCapabilities: CAPABILITIES,
      });
      if (outcome.kind !== 'task') throw new Error(`expected a task, got ${outcome.kind}`);
    };
    const passivating = args.state === 'passivated';
    /** Every task created so far waits for input or its timer (stored), and has left memory if passivated. */
    const waitingAll = async (total: number) => {
      for (let spins = 0; ; spins++) {
        await runtime.flushed();
        if (passivating ? runtime.passivatedTasks === total : runtime.liveTasks === total) {
          // Live: every actor exists from its create; one more flush after the handlers' first elicits.
          if (passivating) return;
          await tick();
          await runtime.flushed();
          return;
        }
        // A task that ended (e.g. failed: a client without elicitation.form) is neither: waiting longer would hang.
        if (runtime.liveTasks + runtime.passivatedTasks < total || spins > 100_000)
          throw new Error(
            `${total - runtime.liveTasks - runtime.passivatedTasks} of ${total} tasks ended instead of waiting (${wait}) (${runtime.liveTasks} live, ${runtime.passivatedTasks} passivated)`,
          );
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    };
    // Warm up code paths and lazily built structures before the baseline.
    const WARM = 200;
    await Promise.all(Array.from({ length: WARM }, create));
    await waitingAll(WARM);
    baseline = await settle();
    let made = 0;
    const t0 = performance.now();
    let lastReport = t0;
    for (const n of sizes) {
      const started = performance.now();
      while (made < n) {
        const batch = Math.min(window, n - made);
        await Promise.all(Array.from({ length: batch }, create));
        made += batch;
        // Passivated: bound the live actors in between (a batch leaves memory before the next comes).
        if (passivating) await waitingAll(WARM + made);
        if (performance.now() - lastReport > 5000) {
          lastReport = performance.now();
          const { heapUsed, rss } = process.memoryUsage();
          progress({ made, ms: Math.round(lastReport - t0), heapUsed, rss, live: runtime.liveTasks, passivated: runtime.passivatedTasks });
        }
      }
      await waitingAll(WARM + made);
      const createMs = performance.now() - started;
      measured.push({
        n,
        ...(await settle()),
        live: runtime.liveTasks - (passivating ? 0 : WARM),
        passivated: runtime.passivatedTasks - (passivating ? WARM : 0),
        createMs,
      });
      progress(measured.at(-1));
    }
  }
} finally {
  // The process exits without closing the runtime: its tasks are left as they are, the temporary store removed.
  await rm(dir, { recursive: true, force: true });
}

/** The stored record of a real `bench_ask` task waiting for its first answer (a runtime of its own, closed after). */
async function waitingTemplate(file: string): Promise<TaskRecord> {
  const runtime = createRuntime({ store: sqliteConfig(file), reapIntervalMs: 0, passivateIdleAfterMs: false, logger: silentLogger });
  registerBenchTools(runtime);
  await runtime.start();
  try {
    const caller = (runtime as unknown as { parts: { caller: ToolCaller } }).parts.caller;
    const outcome = await caller.call({
      name: 'bench_ask',
      args: {},
      principal: 'anonymous',
      declaresTasks: true,
      clientCapabilities: CAPABILITIES,
    });
    if (outcome.kind !== 'task') throw new Error(`expected a task, got ${outcome.kind}`);
    const taskId = outcome.task.taskId;
    for (let i = 0; i < 500; i++) {
      await runtime.flushed();
      const record = await runtime.store.get(taskId);
      if (record?.status === 'input_required' && record.snapshot !== undefined) return record;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('the template task never waited for input');
  } finally {
    await runtime.close();
  }
}

const first = measured[0]!;
const last = measured.at(-1)!;
// Read `keep` after the measurement so nothing it holds could be collected before it.
if (keep.length === 0) throw new Error('nothing was kept');
const result: PassivationResult = {
  state: args.state,
  wait,
  baseline: baseline!,
  sizes: measured,
  // One size (recovered): per task from the baseline before the runtime was built.
  slopeBytesPerTask: last === first ? (last.heapUsed - baseline!.heapUsed) / last.n : (last.heapUsed - first.heapUsed) / (last.n - first.n),
  rssSlopeBytesPerTask: last === first ? (last.rss - baseline!.rss) / last.n : (last.rss - first.rss) / (last.n - first.n),
  ...(seedMs !== undefined ? { seedMs } : {}),
  ...(startMs !== undefined ? { startMs } : {}),
};
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
process.exit(0);
