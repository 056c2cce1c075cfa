/**
 * Runs every `*.unit.test.ts` in this one process: node:test registers the
 * tests of each imported module on the same root, so the tier pays for one
 * tsx start-up instead of one per file (Node 20 has no `--test-isolation=none`).
 * A failing test is reported with its file and line (`test at test/…:12:3`),
 * and fails the run; a file that cannot be loaded is reported as a failing test
 * named after it.
 *
 * `node --import tsx scripts/unit-tier.ts` (what `npm run test:unit` runs), or as one file of `node --test`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { listTestFiles, REPO_ROOT, untieredMessage } from './testTiers.js';

// A top-level hook would land on the shared root and run around every file's tests, not only its own.
const TOP_LEVEL_HOOK = /^(?:before|after|beforeEach|afterEach)\(/m;

const { byTier, untiered } = listTestFiles();
if (untiered.length > 0) {
  test('every test file has a tier', () => {
    throw new Error(untieredMessage(untiered));
  });
}
for (const file of byTier.unit) {
  const path = join(REPO_ROOT, file);
  if (TOP_LEVEL_HOOK.test(readFileSync(path, 'utf8'))) {
    test(`${file} loads`, () => {
      throw new Error(`${file}: unit test files share one process, so hooks go inside describe(), not at the top level`);
    });
    continue;
  }
  try {
    await import(pathToFileURL(path).href);
  } catch (error) {
    test(`${file} loads`, () => {
      throw error;
    });
  }
}
