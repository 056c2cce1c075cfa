/**
 * The benchmark harness still runs: `bench/run.ts --quick` (tiny sizes, one
 * concurrency) in a child exits 0, prints the markdown table and writes its
 * JSON results. Figures are not checked: a smoke run on a shared machine
 * measures nothing worth asserting.
 */
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT, runNode, tempDir, TSX_IMPORT } from '../support/processes.js';

// A minute on an idle machine; at load average 18 (parallel work on 2 cores) it took past 140 s and was killed.
test('bench/run.ts --quick exits 0, prints the table and writes a JSON file', { timeout: 420_000 }, async () => {
  const results = await tempDir('taskvisor-bench-test-');
  try {
    const run = await runNode(
      ['--expose-gc', '--import', TSX_IMPORT, join(REPO_ROOT, 'bench', 'run.ts'), '--quick', '--results-dir', results.path],
      {
        timeoutMs: 400_000,
      },
    );
    assert.equal(run.code, 0, `exit ${run.code} (${run.signal})\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`);
    assert.match(run.stdout, /^\| Benchmark \| Case \| Figure \| Value \| Baseline \(same run\) \| Baseline value \| Ratio \|/m);
    for (const section of [
      'baseline: disk floor',
      'baseline: bare SDK echo',
      '1. durable create',
      '2. tasks/get',
      'HTTP fast lane: tasks/get',
      '3. heap per live idle task',
      '3. bytes per stored task',
      '3. heap per input-waiting task',
      '3. heap per timer-waiting task',
      '3. passivated tasks in one process',
      '3. tasks/get on a passivated task',
      '3. tasks/update on a passivated task',
      '4. restart recovery',
      '5. status → notifications/tasks',
    ]) {
      assert.ok(run.stdout.includes(`| ${section} |`), `no ${section} row in\n${run.stdout}`);
    }
    const files = (await readdir(results.path)).filter((name) => name.endsWith('.json'));
    assert.equal(files.length, 1, `expected one JSON file in ${results.path}, found ${files.join(', ')}`);
    assert.ok(run.stdout.includes(join(results.path, files[0]!)), 'the printed results path names the file written');
    const json = JSON.parse(await readFile(join(results.path, files[0]!), 'utf8')) as {
      mode: string;
      rows: unknown[];
      raw: { errors: string[] };
    };
    assert.equal(json.mode, 'quick');
    assert.ok(json.rows.length > 10);
    assert.deepEqual(json.raw.errors, []);
  } finally {
    await results.remove();
  }
});
