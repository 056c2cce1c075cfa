/**
 * Runs test tiers: `node --import tsx scripts/test.ts <unit|integration|system|all>`.
 *
 * - unit: every `*.unit.test.ts` in one process (`scripts/unit-tier.ts`).
 * - integration, system: one process per file (node:test's `run()`, as
 *   `node --test` does), so a file's children, ports and leftovers end with it.
 * - all: the three in one run. The files that take longest start first (so
 *   none of them trails alone at the end), the unit process last, to fill the gaps.
 *
 * Ends by counting and listing the skipped tests (`scripts/skipReport.ts`); under
 * `TASKVISOR_CI=1` a skip not accepted in `scripts/expectedSkips.ts` fails the run.
 * Exits with the tests' status; exits 1 before running anything when a test
 * file has no tier in its name.
 */
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { run } from 'node:test';
import { spec, tap } from 'node:test/reporters';
import { SkipReport, type TestEventData } from './skipReport.js';
import { listTestFiles, REPO_ROOT, TIERS, untieredMessage, type Tier } from './testTiers.js';

const UNIT_RUNNER = 'scripts/unit-tier.ts';

/**
 * The files that take longest, longest first (from per-file times of the integration and system
 * tiers, 7 Dec 2026). Started first, they run alongside the many short files instead of trailing
 * alone at the end; a file not listed starts after them in alphabetical order.
 */
const LONGEST_FIRST: readonly string[] = [
  'test/bench/quick.system.test.ts',
  'test/cli/call.integration.test.ts',
  'test/package/pack-install.system.test.ts',
  'test/docs/doc-examples.system.test.ts',
  'test/auth/cli-auth.integration.test.ts',
  'test/chaos/chaos.system.test.ts',
  'test/cli/cli.integration.test.ts',
  'test/workflows/cli-upstreams.integration.test.ts',
  'test/scale/cluster.system.test.ts',
  'test/scale/bench.system.test.ts',
  'test/transports/tasks-fast-lane.integration.test.ts',
  'test/cli/hostile-config.integration.test.ts',
  'test/aggregator/legacy-tasks.integration.test.ts',
  'test/workflows/cli.integration.test.ts',
  'test/e2e/stdio.integration.test.ts',
  'test/security/front-door-config.integration.test.ts',
  'test/aggregator/cli.integration.test.ts',
  'test/workflows/history.system.test.ts',
  'test/inspection/inspect.integration.test.ts',
  'test/aggregator/progress-relay.integration.test.ts',
  'test/runtime/recovery.system.test.ts',
  'test/aggregator/recovery.system.test.ts',
  'test/runtime/passivation.property.integration.test.ts',
  'test/inspection/export.integration.test.ts',
  'test/auth/isolation-matrix.integration.test.ts',
  'test/workflows/durable-backoff.integration.test.ts',
  'test/e2e/http.integration.test.ts',
  'test/store/one-owner.system.test.ts',
];

function ordered(files: string[]): string[] {
  const rank = (file: string) => {
    const index = LONGEST_FIRST.indexOf(file);
    return index === -1 ? LONGEST_FIRST.length : index;
  };
  return [...files].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

const [mode, ...rest] = process.argv.slice(2);
if ((mode !== 'all' && !TIERS.includes(mode as Tier)) || rest.length > 0) {
  console.error(`usage: node --import tsx scripts/test.ts <${TIERS.join('|')}|all>`);
  process.exit(2);
}
const { byTier, untiered } = listTestFiles();
if (untiered.length > 0) {
  console.error(untieredMessage(untiered));
  process.exit(1);
}

const tierFiles = mode === 'all' ? [...byTier.system, ...byTier.integration] : mode === 'unit' ? [] : byTier[mode as Tier];
const runsUnit = mode === 'all' || mode === 'unit';
const files = [...ordered(tierFiles), ...(runsUnit ? [UNIT_RUNNER] : [])].map((file) => join(REPO_ROOT, file));
// A file here keeps a core busy well under half of its time (it waits on children, sockets and
// timers: the tests need ~530 s of CPU, yet two files at a time took ~11 min on two idle cores),
// so two files per core keep the cores busy. On a machine other work already keeps busy, that
// only starves the CPU-bound files (bench --quick needs all of its 400 s limit at load 20), so one per core.
// The threshold leaves room for the load npm test's own checks leave behind: typecheck and eslint alone
// leave a one-minute load average of about 3 on an otherwise idle 2-core machine, where four files at a
// time took 6 min 42 s and two took 8 min 20 s. TEST_CONCURRENCY overrides both.
const cores = availableParallelism();
const busy = loadavg()[0]! > 2.5 * cores;
const concurrency = Number(process.env.TEST_CONCURRENCY ?? Math.min(8, (busy ? 1 : 2) * cores));
if (busy && process.env.TEST_CONCURRENCY === undefined && files.length > 1) {
  console.error(`# load average ${loadavg()[0]!.toFixed(1)} on ${cores} cores: ${concurrency} test files at a time`);
}
// Skips are listed at the end; under CI (TASKVISOR_CI=1, set by .ci/run) one that CI does not expect fails the run.
const skips = new SkipReport(process.env.TASKVISOR_CI === '1');
// run() rather than `node --test`, which sorts its files by name and so would start the longest last.
// Each file's process inherits this one's `--import tsx`. The unit tier is one of them (scripts/unit-tier.ts).
const stream = run({ files, concurrency });
stream.on('test:pass', (data: TestEventData) => skips.record(data));
stream.on('test:fail', (data: TestEventData & { todo?: unknown }) => {
  skips.record(data);
  if (data.todo === undefined || data.todo === false) process.exitCode = 1;
});
const reporter = stream.compose(process.stdout.isTTY ? new spec() : tap);
reporter.pipe(process.stdout);
// After the reporter's own summary: the last lines of the run.
reporter.on('end', () => {
  console.log(skips.summary().join('\n'));
  if (skips.unexpected.length > 0) process.exitCode = 1;
});
