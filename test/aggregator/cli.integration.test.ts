/**
 * The aggregator through the command line: `taskvisor serve --config` with
 * upstreams (one good, one that cannot start), `taskvisor upstreams` against
 * that running server, and config errors that name file, line and field.
 */
import assert from 'node:assert/strict';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect } from '../support/extTasksClient.js';
import { CLI, runNode, spawnNode, tempDir, waitFor, type Child } from '../support/processes.js';
import { UPSTREAM_CONFIG } from './harness.js';
import { parseConfig } from '../../src/config/loadConfig.js';

describe('taskvisor serve with upstreams, and taskvisor upstreams', () => {
  let dir: { path: string; remove(): Promise<void> };
  let server: Child;
  let url: string;
  let config: string;

  before(async () => {
    dir = await tempDir('taskvisor-agg-cli-');
    config = join(dir.path, 'taskvisor.yaml');
    await writeFile(
      config,
      [
        'store: { kind: memory }',
        'state: { file: ./state/runtime-state.json }',
        'upstreams:',
        '  - name: demo',
        '    type: stdio',
        `    command: ${JSON.stringify(process.execPath)}`,
        `    args: [${JSON.stringify(CLI)}, serve, --config, ${JSON.stringify(UPSTREAM_CONFIG)}, --stdio, --quiet]`,
        '  - name: broken',
        '    type: stdio',
        '    command: ./no-such-upstream-binary',
        '    backoff: { initialMs: 200, maxMs: 60000, factor: 10 }',
        '',
      ].join('\n'),
    );
    server = spawnNode([CLI, 'serve', '--config', config, '--http', '127.0.0.1:0'], { cwd: dir.path });
    url = (await server.waitForOutput(/serving MCP over Streamable HTTP at (\S+)/))[1]!;
    await server.waitForOutput(/upstream demo: ready/);
  });
  after(async () => {
    await server?.kill('SIGTERM');
    await dir?.remove();
  });

  it("serves the good upstream's tools while the broken one backs off", async () => {
    const client = await connect({ kind: 'http', url });
    try {
      const names = (await client.client.listTools()).tools.map((tool) => tool.name);
      assert.ok(names.includes('x_demo_sleep'), names.join(', '));
      assert.ok(!names.some((name) => name.startsWith('x_broken_')));
    } finally {
      await client.close();
    }
  });

  it('prints state, tool count, retry time and last error of each upstream of the running server', async () => {
    const output = await waitFor(
      async () => {
        const run = await runNode([CLI, 'upstreams', '--config', config], { cwd: dir.path });
        return /broken\s+backoff/.test(run.stdout) && /demo\s+ready/.test(run.stdout) ? run : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 300, what: 'both upstreams in the health table' },
    );
    assert.equal(output.code, 0, output.stderr);
    const lines = output.stdout.trim().split('\n');
    assert.match(lines[0]!, /^NAME\s+STATE\s+TOOLS\s+PROTOCOL\s+RETRY\s+LAST ERROR$/);
    const demo = lines.find((line) => line.startsWith('demo'))!;
    assert.match(demo, /^demo\s+ready\s+5\s+2026-07-28\+tasks\s+-\s+-$/);
    const broken = lines.find((line) => line.startsWith('broken'))!;
    assert.match(broken, /backoff\s+0\s+-\s+\d{4}-\d\d-\d\dT[\d:.]+Z \(in \d+s\)\s+\S.*(ENOENT|spawn)/);
    const json = JSON.parse((await runNode([CLI, 'upstreams', '--config', config, '--json'], { cwd: dir.path })).stdout);
    assert.equal(json.running, true);
    assert.equal(json.upstreams.demo.toolCount, 5);
    assert.equal((await stat(join(dir.path, 'state', 'runtime-state.json'))).mode & 0o777, 0o600);
  });

  it('after the server stops, the last report is shown as stale (exit 3)', async () => {
    await server.kill('SIGTERM');
    const run = await runNode([CLI, 'upstreams', '--state', join(dir.path, 'state', 'runtime-state.json')], { cwd: dir.path });
    assert.equal(run.code, 3, run.stdout + run.stderr);
    assert.match(run.stdout, /is not running; last report/);
    assert.match(run.stdout, /demo\s+stopped \(stale\)/);
  });
});

describe('upstream config errors', () => {
  it('name the file, line and field', async () => {
    const dir = await tempDir('taskvisor-agg-cfg-');
    try {
      const cases: Array<[string, RegExp]> = [
        ['upstreams:\n  - name: a\n    type: stdio\n', /taskvisor\.yaml:2:5: upstreams\[0\]\.command: /],
        [
          'upstreams:\n  - name: a\n    type: streamable-http\n    url: ftp://x\n',
          /taskvisor\.yaml:4:10: upstreams\[0\]\.url: expected an http/,
        ],
        [
          'upstreams:\n  - { name: a, type: stdio, command: x }\n  - { name: a, type: stdio, command: y }\n',
          /upstreams\[1\]\.name: duplicate upstream name "a"/,
        ],
        ['upstreams:\n  - { name: "a.b", type: stdio, command: x }\n', /upstreams\[0\]\.name: use 1-64 characters/],
        ['upstreams:\n  - { name: a, type: grpc, command: x }\n', /upstreams\[0\]\.type: expected type: stdio/],
        ['aggregator: { toolNamespace: "x_" }\n', /aggregator\.toolNamespace: use a letter/],
      ];
      // Through the CLI once (exit 1, message on stderr), the rest through the same parser in process.
      const file = join(dir.path, 'taskvisor.yaml');
      await writeFile(file, cases[0]![0]);
      const run = await runNode([CLI, 'serve', '--config', file, '--http', '127.0.0.1:0'], { cwd: dir.path });
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, cases[0]![1]);
      for (const [text, expected] of cases.slice(1)) {
        assert.throws(
          () => parseConfig(text, 'taskvisor.yaml'),
          (error: Error) => {
            assert.match(error.message, expected);
            return true;
          },
        );
      }
    } finally {
      await dir.remove();
    }
  });
});
