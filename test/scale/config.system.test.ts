/**
 * `store: { kind: postgres }` in a config file: every bad field is named with
 * file:line:col, an unreachable database is one clear line, and a good config
 * starts an instance that registers in the schema.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/loadConfig.js';
import { CLI, REPO_ROOT, runNode, tempDir } from '../support/processes.js';
import { freshSchema, pgQuery, TEST_PG_URL } from '../support/postgres.js';
import { CLUSTER_TOOLS, startInstance, stopAll } from './cluster.js';

describe('postgres store configuration', { timeout: 60_000 }, () => {
  it('names the file, line, column and field of every bad postgres setting', async () => {
    const dir = await tempDir();
    try {
      const config = join(dir.path, 'bad.yaml');
      await writeFile(config, 'store:\n  kind: postgres\n  url: mysql://x\n  schema: Bad-Name\n  poolSize: 0\n  leaseMs: 10\n  extra: 1\n');
      const run = await runNode([CLI, 'serve', '--config', config, '--http', '127.0.0.1:0'], { cwd: dir.path });
      assert.equal(run.code, 1);
      assert.match(run.stderr, /bad\.yaml:3:8: store\.url: expected a postgres:\/\/user@host:port\/database URL/);
      assert.match(run.stderr, /bad\.yaml:4:11: store\.schema: expected a lower-case identifier/);
      assert.match(run.stderr, /bad\.yaml:5:13: store\.poolSize: .*>=1/);
      assert.match(run.stderr, /bad\.yaml:6:12: store\.leaseMs: .*>=500/);
      assert.match(run.stderr, /bad\.yaml:7:3: store\.extra: unknown field/);
    } finally {
      await dir.remove();
    }
  });

  it('the example cluster config (examples/cluster/taskvisor.yaml) is valid', async () => {
    const loaded = await loadConfig(join(REPO_ROOT, 'examples', 'cluster', 'taskvisor.yaml'));
    assert.equal(loaded.config.store?.kind, 'postgres');
  });

  it('an unreachable database fails the start with one line naming the config and the server', async () => {
    const dir = await tempDir();
    try {
      const config = join(dir.path, 'down.yaml');
      await writeFile(config, 'store:\n  kind: postgres\n  url: postgres://postgres@127.0.0.1:1/test\n');
      const run = await runNode([CLI, 'serve', '--config', config, '--http', '127.0.0.1:0'], { cwd: dir.path });
      assert.equal(run.code, 1);
      assert.match(
        run.stderr,
        /down\.yaml: store: cannot open postgres postgres:\/\/postgres@127\.0\.0\.1:1\/test schema taskvisor: connection refused/,
      );
      assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
    } finally {
      await dir.remove();
    }
  });

  it('a good config creates the schema, registers the instance and drops its lease on SIGTERM', async () => {
    const dir = await tempDir();
    const { schema, drop } = await freshSchema('tv_cfg');
    const config = join(dir.path, 'taskvisor.yaml');
    await writeFile(
      config,
      `store:\n  kind: postgres\n  url: ${TEST_PG_URL}\n  schema: ${schema}\n  poolSize: 2\ntools:\n  - ${JSON.stringify(CLUSTER_TOOLS)}\n`,
    );
    const instance = await startInstance(config, 'A', join(dir.path, 'runs.log'), dir.path);
    try {
      const live = await pgQuery(`SELECT 1 FROM ${schema}.instances WHERE instance_id = $1 AND lease_expires_at > now()`, [
        instance.instanceId,
      ]);
      assert.equal(live.rowCount, 1);
      await instance.client.close();
      assert.equal((await instance.child.kill('SIGTERM')).code, 0);
      const after = await pgQuery(`SELECT 1 FROM ${schema}.instances WHERE instance_id = $1 AND lease_expires_at > now()`, [
        instance.instanceId,
      ]);
      assert.equal(after.rowCount, 0, 'a graceful stop gives the lease up at once');
    } finally {
      await stopAll([instance]);
      await drop();
      await dir.remove();
    }
  });
});
