/**
 * examples/client/demo.ts (the examples use taskvisor/client) as
 * a user runs it: it spawns the demo server over stdio itself, and its output
 * shows a task's status changes, an input request answered in a callback,
 * and a task cancelled through an AbortSignal.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT, runNode, tempDir, TSX_IMPORT } from '../support/processes.js';

const EXAMPLE = join(REPO_ROOT, 'examples', 'client', 'demo.ts');

let dir: Awaited<ReturnType<typeof tempDir>>;
let run: Awaited<ReturnType<typeof runNode>>;

before(async () => {
  // The spawned demo server keeps its store in the working directory: a fresh one.
  dir = await tempDir('taskvisor-client-example-');
  run = await runNode(['--import', TSX_IMPORT, EXAMPLE], { cwd: dir.path, timeoutMs: 180_000 });
});
after(() => dir?.remove());

describe('examples/client/demo.ts', () => {
  it('runs to its end', () => {
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  });

  it('a task: its id, each status change, then the result', () => {
    assert.match(run.stdout, /^sleep is task [0-9a-f]{32}\n {2}working: Sleeping for 1500 ms\n(?: {2}.*\n)* {2}completed\nsleep: rested$/m);
  });

  it('an input request answered by the callback', () => {
    assert.match(run.stdout, /^asked: Please enter your name\.\nhello_world: Hello, Ada!$/m);
  });

  it('a task cancelled through an AbortSignal', () => {
    assert.match(run.stdout, /^the long sleep: cancelled \(changed my mind\)$/m);
  });
});
