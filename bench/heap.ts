/**
 * Heap per live idle task actor, in a child of its own (run with
 * `--expose-gc`): creates `n` idle tasks (`bench_wait`, waiting for cancel)
 * in-process and reports `(heapUsed after − before) / n` after full GCs.
 *
 *   node --expose-gc --import tsx bench/heap.ts '{"mode":"memory","n":20000}'
 *
 * Modes:
 * - `xstate`: the floor — bare `createActor(taskMachine).start()` with the
 *   machine (no child actor: its run is the runtime's); no runtime.
 * - `xstate-shared`: the same actors the way the runtime builds them: one
 *   shared system, options let go after start (TaskActorSystem).
 * - `memory`: a runtime with the memory store (which also keeps a copy of
 *   every record, snapshot included).
 * - `null`: a runtime whose store keeps nothing (create/put resolve at once):
 *   the runtime's own per-task cost (actor, persister, tool run, registry).
 *
 * `tool` (runtime modes): `bench_wait` (default: the handler waits on
 * `ctx.signal`, so its run holds an AbortSignal and a listener) or
 * `bench_hold` (the handler waits on a promise of its own and never reads
 * `ctx.signal`: the run makes no AbortSignal).
 *
 * Tasks are created through the runtime's internal `ToolCaller.call` — the
 * exact path a `tools/call` takes after the SDK has parsed the request — so
 * no HTTP server instance per task is in the way (100k creates over HTTP
 * would take minutes).
 *
 * Prints `RESULT {…}` on stdout.
 */
import { performance } from 'node:perf_hooks';
import { createActor } from 'xstate';
import { createRuntime, silentLogger, type TaskRecord, type TaskStore } from '../src/index.js';
import { MemoryTaskStore } from '../src/store/index.js';
import { taskMachine } from '../src/inspection/index.js';
import { releaseStartOptions, sharedTaskSystem } from '../src/runtime/TaskActorSystem.js';
import type { ToolCaller } from '../src/runtime/ToolCaller.js';
import { registerBenchTools } from './tools.js';

interface HeapArgs {
  mode: 'xstate' | 'xstate-shared' | 'memory' | 'null';
  n: number;
  tool?: 'bench_wait' | 'bench_hold';
}

const args = JSON.parse(process.argv[2] ?? '{}') as HeapArgs;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

const tick = () => new Promise((resolve) => setImmediate(resolve));
async function settle(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    await tick();
    gc!();
  }
  return process.memoryUsage().heapUsed;
}

/** A store that keeps nothing: isolates the runtime's own per-task memory. */
class NullTaskStore implements TaskStore {
  async open() {}
  async close() {}
  async create(_record: TaskRecord) {}
  async put(_record: TaskRecord) {}
  async get(_taskId: string) {
    return undefined;
  }
  async delete(_taskId: string) {
    return false;
  }
  async listNonTerminal() {
    return [];
  }
  async listExpired() {
    return [];
  }
  async list() {
    return [];
  }
  async quarantine() {
    return false;
  }
  async listQuarantined() {
    return [];
  }
}

const keep: unknown[] = [];
let before: number;
let rssBefore: number;
let createMs: number;
let live = args.n;

if (args.mode === 'xstate' || args.mode === 'xstate-shared') {
  const shared = args.mode === 'xstate-shared' ? sharedTaskSystem() : {};
  before = await settle();
  rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  for (let i = 0; i < args.n; i++) {
    const taskId = `t${i.toString(16).padStart(31, '0')}`;
    const actor = createActor(taskMachine, {
      input: { taskId, owner: 'anonymous', tool: 'bench_wait', args: {}, now: Date.now(), ttlMs: 3_600_000 },
      ...shared,
    }).start();
    if (args.mode === 'xstate-shared') releaseStartOptions(actor);
    keep.push(actor);
  }
  createMs = performance.now() - started;
} else {
  const runtime = createRuntime({
    store: args.mode === 'memory' ? new MemoryTaskStore() : new NullTaskStore(),
    reapIntervalMs: 0,
    // The bench measures capacity with one principal; the per-principal limit (default 1000) would cut it short.
    limits: { maxLiveTasksPerPrincipal: Number.MAX_SAFE_INTEGER },
    logger: silentLogger,
  });
  registerBenchTools(runtime);
  await runtime.start();
  // Private field, read only: the same call path a tools/call takes once the SDK has parsed it.
  const caller = (runtime as unknown as { parts: { caller: ToolCaller } }).parts.caller;
  const clientCapabilities = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
  const create = async () => {
    const outcome = await caller.call({
      name: args.tool ?? 'bench_wait',
      args: {},
      principal: 'anonymous',
      declaresTasks: true,
      clientCapabilities,
    });
    if (outcome.kind !== 'task') throw new Error(`expected a task, got ${outcome.kind}`);
  };
  // Warm up code paths and lazily built structures before the baseline.
  for (let i = 0; i < 200; i++) await create();
  await runtime.flushed();
  before = await settle();
  rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  let lastReport = started;
  for (let done = 0; done < args.n; done += 500) {
    await Promise.all(Array.from({ length: Math.min(500, args.n - done) }, create));
    if (performance.now() - lastReport > 2000) {
      lastReport = performance.now();
      process.stdout.write(`PROGRESS ${JSON.stringify({ done: done + 500, ms: lastReport - started })}\n`);
    }
  }
  await runtime.flushed();
  createMs = performance.now() - started;
  live = runtime.liveTasks - 200;
  keep.push(runtime);
}

const after = await settle();
const memory = process.memoryUsage();
// Read `keep` after the measurement so nothing it holds could be collected before it.
if (keep.length === 0) throw new Error('nothing was kept');
process.stdout.write(
  `RESULT ${JSON.stringify({
    mode: args.mode,
    tool: args.mode.startsWith('xstate') ? undefined : (args.tool ?? 'bench_wait'),
    n: args.n,
    live,
    bytesPerTask: (after - before) / args.n,
    heapUsedBefore: before,
    heapUsedAfter: after,
    rssDelta: memory.rss - rssBefore,
    rssPerTask: (memory.rss - rssBefore) / args.n,
    createUsPerTask: (createMs * 1000) / args.n,
    createMs,
  })}\n`,
);
process.exit(0);
