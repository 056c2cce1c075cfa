/**
 * Runs test tiers: `node --import tsx scripts/test.ts <unit|integration|system|all> [node --test flags]`.
 *
 * - unit: every `*.unit.test.ts` in one process (`scripts/unit-tier.ts`).
 * - integration, system: one process per file (`node --test`), so a file's
 *   children, ports and leftovers end with it.
 * - all: the three in one `node --test` run. The files that take longest start
 *   first (so none of them trails alone at the end), the unit process last, to
 *   fill the gaps.
 *
 * Exits with the tests' status; exits 1 before running anything when a test
 * file has no tier in its name.
 */
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { listTestFiles, REPO_ROOT, TIERS, untieredMessage, type Tier } from './testTiers.js';

const UNIT_RUNNER = 'scripts/unit-tier.ts';

/**
 * The longest files, longest first (spec output of a full run). Starting them first keeps the
 * pool busy to the end instead of finishing on one of them alone; a file missing here only
 * starts in alphabetical order.
 */
const LONGEST_FIRST: readonly string[] = [];

function ordered(files: string[]): string[] {
  const rank = (file: string) => {
    const index = LONGEST_FIRST.indexOf(file);
    return index === -1 ? LONGEST_FIRST.length : index;
  };
  return [...files].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

const [mode, ...passThrough] = process.argv.slice(2);
if (mode !== 'all' && !TIERS.includes(mode as Tier)) {
  console.error(`usage: node --import tsx scripts/test.ts <${TIERS.join('|')}|all> [node --test flags]`);
  process.exit(2);
}
const { byTier, untiered } = listTestFiles();
if (untiered.length > 0) {
  console.error(untieredMessage(untiered));
  process.exit(1);
}

// Files of the per-process tiers wait on children, sockets and timers more than they compute,
// so more of them than cores run at once; TEST_CONCURRENCY overrides (e.g. 1 on a loaded machine).
const concurrency = process.env.TEST_CONCURRENCY ?? String(Math.max(2, availableParallelism()));
const args =
  mode === 'unit'
    ? ['--import', 'tsx', ...passThrough, UNIT_RUNNER]
    : [
        '--import',
        'tsx',
        '--test',
        `--test-concurrency=${concurrency}`,
        ...passThrough,
        ...(mode === 'all' ? [...ordered([...byTier.system, ...byTier.integration]), UNIT_RUNNER] : ordered(byTier[mode as Tier])),
      ];
const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
