/**
 * Restart recovery time, in a child of its own: builds a runtime over a store
 * already seeded with non-terminal tasks and times `runtime.start()`.
 *
 *   node --import tsx bench/recovery.ts '{"store":{"kind":"lowdb","dir":"…"},"resume":"fail","n":10000,"budgetMs":60000}'
 *
 * The baseline is the store's plain read of the same records, measured first
 * in this child on an instance of its own (closed before the runtime starts):
 * `open()` (lowdb scans every file into its index) plus `listNonTerminal()`
 * (reads and parses every unfinished record). Then `runtime.start()` on a
 * fresh instance: open, the paged scan (`scanNonTerminal`: never all records in memory at once)
 * and per task one transition for `resume: 'fail'`, each page's failed
 * records stored with one durable `putMany`; one actor restore per task for
 * `'replay'`.
 *
 * The write phase has a budget: past it the child stops and reports how far
 * it got (`partial: true`), so the parent can project the total.
 * Prints `PROGRESS {…}` lines and one `RESULT {…}` on stdout.
 */
import { performance } from 'node:perf_hooks';
import { createRuntime, type ResumePolicy, type TaskRecord, type TaskStore, type TaskStoreConfig } from '../src/index.js';
import { createTaskStore } from '../src/store/index.js';
import { ForwardingTaskStore } from '../src/store/kit/ForwardingTaskStore.js';
import { registerBenchTools } from './tools.js';

interface RecoveryArgs {
  store: TaskStoreConfig;
  resume: ResumePolicy;
  n: number;
  /** Longest the write phase may run before the child reports a partial result. */
  budgetMs: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as RecoveryArgs;

// The baseline: a plain read of the same records.
let openMs = 0;
let listMs = 0;
let listed = 0;
{
  const plain = createTaskStore(args.store);
  let at = performance.now();
  await plain.open();
  openMs = performance.now() - at;
  at = performance.now();
  listed = (await plain.listNonTerminal()).length;
  listMs = performance.now() - at;
  await plain.close();
}

const inner = createTaskStore(args.store);

let phase: 'open' | 'list' | 'recover' = 'open';
let puts = 0;
let recoverStart = 0;

/** The store, its phases timed: open, then the recovery listing; puts counted. */
class TimedStore extends ForwardingTaskStore {
  override async open(): Promise<void> {
    await this.inner.open();
    phase = 'list';
  }

  override async put(record: TaskRecord): Promise<void> {
    await this.inner.put(record);
    puts++;
  }

  /** Recovery writes each page's failures with one call. */
  override async putMany(records: readonly TaskRecord[]): Promise<void> {
    await super.putMany(records);
    puts += records.length;
  }

  override listNonTerminal(): Promise<TaskRecord[]> {
    phase = 'recover';
    recoverStart = performance.now();
    return this.inner.listNonTerminal();
  }

  /** Recovery reads page by page where the store can. */
  override scanNonTerminal(pageSize: number): AsyncIterable<TaskRecord[]> {
    phase = 'recover';
    recoverStart = performance.now();
    return super.scanNonTerminal(pageSize);
  }
}

const timed: TaskStore = new TimedStore(inner);

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
