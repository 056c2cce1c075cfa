/**
 * Restart recovery time, in a child of its own: builds a runtime over a store
 * already seeded with non-terminal tasks and times `runtime.start()`.
 *
 *   node --import tsx bench/recovery.ts '{"store":{"kind":"lowdb","dir":"…"},"resume":"fail","n":10000,"budgetMs":60000}'
 *
 * The store is wrapped to split the time into its parts: `open()` (lowdb
 * scans every file into its index), `listNonTerminal()` (reads every
 * unfinished record), and the rest — one transition plus one durable `put`
 * per task for `resume: 'fail'`, one actor restore per task for `'replay'`.
 *
 * The write phase has a budget: past it the child stops and reports how far
 * it got (`partial: true`), so the parent can project the total.
 * Prints `PROGRESS {…}` lines and one `RESULT {…}` on stdout.
 */
import { performance } from 'node:perf_hooks';
import { createRuntime, type ResumePolicy, type TaskRecord, type TaskStore, type TaskStoreConfig } from '../src/index.js';
import { createTaskStore } from '../src/store/index.js';
import { registerBenchTools } from './tools.js';

interface RecoveryArgs {
  store: TaskStoreConfig;
  resume: ResumePolicy;
  n: number;
  /** Longest the write phase may run before the child reports a partial result. */
  budgetMs: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as RecoveryArgs;
const inner = createTaskStore(args.store);

let phase: 'open' | 'list' | 'recover' = 'open';
let openMs = 0;
let listMs = 0;
let listed = 0;
let puts = 0;
let recoverStart = 0;

const timed: TaskStore = {
  async open() {
    const started = performance.now();
    await inner.open();
    openMs = performance.now() - started;
    phase = 'list';
  },
  close: () => inner.close(),
  create: (record: TaskRecord) => inner.create(record),
  async put(record: TaskRecord) {
    await inner.put(record);
    puts++;
  },
  get: (taskId: string, owner?: string) => inner.get(taskId, owner),
  delete: (taskId: string) => inner.delete(taskId),
  async listNonTerminal() {
    const started = performance.now();
    const records = await inner.listNonTerminal();
    listMs = performance.now() - started;
    listed = records.length;
    phase = 'recover';
    recoverStart = performance.now();
    return records;
  },
  listExpired: (now: number, limit: number) => inner.listExpired(now, limit),
  list: (query) => inner.list(query),
  quarantine: (taskId: string, reason: string) => inner.quarantine(taskId, reason),
  listQuarantined: () => inner.listQuarantined(),
};

const runtime = createRuntime({
  store: timed,
  reapIntervalMs: 0,
  logger: { info: () => {}, error: (message) => process.stderr.write(`recovery: error: ${message}\n`) },
});
registerBenchTools(runtime, { resume: args.resume });

const started = performance.now();
const report = (extra: Record<string, unknown>) =>
  process.stdout.write(
    `RESULT ${JSON.stringify({
      n: args.n,
      resume: args.resume,
      listed,
      openMs,
      listMs,
      puts,
      recoverMs: recoverStart ? performance.now() - recoverStart : 0,
      heapUsed: process.memoryUsage().heapUsed,
      ...extra,
    })}\n`,
  );

const watchdog = setInterval(() => {
  const now = performance.now();
  process.stdout.write(`PROGRESS ${JSON.stringify({ phase, puts, ms: now - started })}\n`);
  if (phase === 'recover' && now - recoverStart > args.budgetMs) {
    const done = puts;
    const recoverMs = now - recoverStart;
    report({
      partial: true,
      startMs: now - started,
      projectedStartMs: done > 0 ? openMs + listMs + (recoverMs * listed) / done : Number.POSITIVE_INFINITY,
    });
    process.exit(0);
  }
}, 500);

const startReport = await runtime.start();
const startMs = performance.now() - started;
let flushedMs: number | undefined;
if (args.resume === 'replay') {
  await runtime.flushed();
  flushedMs = performance.now() - started;
}
clearInterval(watchdog);
report({ partial: false, startMs, flushedMs, report: startReport, liveTasks: runtime.liveTasks });
process.exit(0);
