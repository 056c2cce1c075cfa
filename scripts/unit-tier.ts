/**
 * Runs every `*.unit.test.ts` in this one process: node:test registers the
 * tests of each imported module on the same root, so the tier pays for one
 * tsx start-up instead of one per file (Node 20 has no `--test-isolation=none`).
 * A failing test is reported with its file and line (`test at test/…:12:3`),
 * and fails the run; a file that cannot be loaded is reported as a failing test
 * named after it.
 * A last test fails the run when the files left cwd, an env var or a process
 * listener changed, since every later file would run with it.
 *
 * `node --import tsx scripts/unit-tier.ts` (what `npm run test:unit` runs), or as one file of `node --test`.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { listTestFiles, REPO_ROOT, untieredMessage } from './testTiers.js';

// A top-level hook would land on the shared root and run around every file's tests, not only its own.
const TOP_LEVEL_HOOK = /^(?:before|after|beforeEach|afterEach)\(/m;

// What one file could change for every file after it. Checked once all files' tests ran; the failure
// says what changed (the env var, the event), which a grep of the unit files turns into the file.
const WATCHED_EVENTS = ['exit', 'beforeExit', 'uncaughtException', 'unhandledRejection', 'warning', 'SIGINT', 'SIGTERM'] as const;
function processState() {
  return {
    cwd: process.cwd(),
    env: Object.fromEntries(Object.entries(process.env).sort(([a], [b]) => a.localeCompare(b))),
    listeners: Object.fromEntries(WATCHED_EVENTS.map((event) => [event, process.listenerCount(event)])),
  };
}
// Taken when node:test starts the tests, after it added its own process listeners (and before it
// drops its exit listener, which is why only added listeners count).
let initialState: ReturnType<typeof processState> | undefined;
before(() => {
  initialState = processState();
});

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

test('the unit files leave cwd, env vars and process listeners as they found them', () => {
  const now = processState();
  assert.ok(initialState);
  assert.equal(now.cwd, initialState.cwd, 'cwd');
  assert.deepEqual(now.env, initialState.env, 'env vars');
  const added = WATCHED_EVENTS.filter((event) => now.listeners[event]! > initialState!.listeners[event]!);
  assert.deepEqual(added, [], 'process events with more listeners than before the tests');
});
