/**
 * The test tiers, chosen by file name: `*.unit.test.ts`, `*.integration.test.ts`,
 * `*.system.test.ts`, next to the other tests of their feature under `test/<feature>/`.
 *
 * - unit: in-process only. No child process, no socket (not even a listen on
 *   127.0.0.1, no fetch or connect), no PostgreSQL, no wait on a real timer
 *   beyond ~100 ms (wait for the event instead). Files are fine in a temp dir the
 *   test makes and removes: lowdb and SQLite stores, token files. All of them run
 *   in one process (`scripts/unit-tier.ts`), so no top-level before/after hooks
 *   and nothing that outlives the file: env vars, process listeners, cwd.
 * - integration: real sockets, stdio children, waits of seconds on real timers
 *   (ttl, sleep and retry deadlines); needs nothing but Node.
 * - system: needs more than Node or is the heavy end: PostgreSQL, kill -9
 *   recovery, Chromium, nginx/HAProxy, package pack/install, chaos, the bench
 *   smoke runs, cold start, a tmpfs mount.
 */
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const TIERS = ['unit', 'integration', 'system'] as const;
export type Tier = (typeof TIERS)[number];

export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const TEST_ROOT = join(REPO_ROOT, 'test');

/** `test/...` paths of every test file, sorted; `untiered` are `*.test.ts` files with no tier in their name. */
export function listTestFiles(): { byTier: Record<Tier, string[]>; untiered: string[] } {
  const byTier: Record<Tier, string[]> = { unit: [], integration: [], system: [] };
  const untiered: string[] = [];
  const entries = readdirSync(TEST_ROOT, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
    .map((entry) => relative(REPO_ROOT, join(entry.parentPath, entry.name)).split('\\').join('/'))
    .sort();
  for (const file of files) {
    const tier = TIERS.find((name) => file.endsWith(`.${name}.test.ts`));
    if (tier) byTier[tier].push(file);
    else untiered.push(file);
  }
  return { byTier, untiered };
}

/** What to print when a test file has no tier, so a new file cannot silently drop out of every tier. */
export function untieredMessage(untiered: string[]): string {
  return [
    'These test files have no tier in their name, so no tier would run them:',
    ...untiered.map((file) => `  ${file}`),
    'Rename each to *.unit.test.ts, *.integration.test.ts or *.system.test.ts (rules: scripts/testTiers.ts, README "Developing").',
  ].join('\n');
}
