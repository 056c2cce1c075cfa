/**
 * The Postgres benchmark entry still runs: `bench/run.ts --quick --only
 * postgres` exits 0 and prints the Postgres rows next to the sqlite baseline
 * of the same run. Figures are not checked (a smoke run on a shared machine).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT, runNode, tempDir, TSX_IMPORT } from '../support/processes.js';
import { pgQuery } from '../support/postgres.js';

test('bench/run.ts --quick --only postgres prints the postgres rows against the sqlite baseline', { timeout: 120_000 }, async () => {
  const benchSchemas = async () =>
    new Set(
      (await pgQuery<{ nspname: string }>(`SELECT nspname FROM pg_namespace WHERE nspname LIKE 'tv_bench_%'`)).rows.map(
        (row) => row.nspname,
      ),
    );
  const before = await benchSchemas(); // also fails clearly when PostgreSQL is down
  const results = await tempDir('taskvisor-bench-pg-');
  try {
    const run = await runNode(
      ['--import', TSX_IMPORT, join(REPO_ROOT, 'bench', 'run.ts'), '--quick', '--only', 'postgres', '--results-dir', results.path],
      { timeoutMs: 110_000 },
    );
    assert.equal(run.code, 0, `exit ${run.code} (${run.signal})\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`);
    assert.match(
      run.stdout,
      /\| 6\. postgres durable create \| empty schema, pool 10, c=4 \| throughput \| [\d.,]+ req\/s \| sqlite store c=4 \| [\d.,]+ req\/s \| [\d.,]+× \|/,
    );
    const left = [...(await benchSchemas())].filter((name) => !before.has(name));
    assert.deepEqual(left, [], 'the bench drops its schema');
  } finally {
    await results.remove();
  }
});

test('bench/run.ts --quick --only cluster,promoted prints the two-instance and the promoted-call rows', { timeout: 300_000 }, async () => {
  const results = await tempDir('taskvisor-bench-cluster-');
  try {
    // From the sources (no compile step): a smoke run of the harness, not a measurement.
    const run = await runNode(
      [
        '--import',
        TSX_IMPORT,
        join(REPO_ROOT, 'bench', 'run.ts'),
        '--quick',
        '--source',
        '--only',
        'cluster,promoted',
        '--results-dir',
        results.path,
      ],
      { timeoutMs: 290_000 },
    );
    assert.equal(run.code, 0, `exit ${run.code} (${run.signal})\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`);
    assert.match(run.stdout, /\| 10\. two instances, one PostgreSQL \| change on A → listen stream on B, \d+ pokes \|/);
    assert.match(
      run.stdout,
      /\| 10\. two instances, one PostgreSQL \| kill -9 of the owner, 1 rounds \| kill → task ended by the adopter, worst \| [\d.,]+ ms \|/,
    );
    assert.match(run.stdout, /\| 9\. promoted upstream call \|/);
  } finally {
    await results.remove();
  }
});
