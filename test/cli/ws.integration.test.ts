/**
 * `taskvisor serve --ws HOST:PORT` as a user runs it: MCP over WebSocket
 * (alone, or next to HTTP), the `ws` config section, and a refused flag.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect, envelope, type Endpoint } from '../support/extTasksClient.js';
import { CLI, DEMO_TOOLS, rawRequest, resultOf, runNode, spawnNode, tempDir } from '../support/processes.js';

const STARTUP_TIMEOUT_MS = 45_000;
const SERVING_WS = /serving MCP over WebSocket at (\S+)\n/;
const SERVING_HTTP = /serving MCP over Streamable HTTP at (\S+)\n/;
const DEMO_TOOL_NAMES = ['echo', 'fail', 'hello_world', 'sleep', 'tool_error'];

let dir: Awaited<ReturnType<typeof tempDir>>;
before(async () => {
  dir = await tempDir('taskvisor-cli-ws-');
});
after(async () => {
  await dir?.remove();
});

/** The tool names an endpoint lists to a 2026-07-28 client. */
async function listToolNames(endpoint: Endpoint): Promise<string[]> {
  const client = await connect(endpoint);
  try {
    const result = resultOf(await rawRequest(client, { method: 'tools/list', params: { _meta: envelope() } }));
    return (result.tools as Array<{ name: string }>).map((tool) => tool.name).sort();
  } finally {
    await client.close();
  }
}

describe('serve --ws', { concurrency: 2 }, () => {
  it('serve --ws 127.0.0.1:0 --demo prints the ws URL, serves tools/list over WebSocket, and serves no HTTP', async () => {
    const cwd = join(dir.path, 'demo');
    await mkdir(cwd);
    const child = spawnNode([CLI, 'serve', '--ws', '127.0.0.1:0', '--demo'], { cwd, env: { ...process.env, PORT: '', HOST: '' } });
    try {
      const [, url] = await child.waitForOutput(SERVING_WS, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      assert.match(url!, /^ws:\/\/127\.0\.0\.1:\d+\/mcp$/);
      assert.notEqual(new URL(url!).port, '0');
      assert.deepEqual(await listToolNames({ kind: 'ws', url: url! }), DEMO_TOOL_NAMES);
      assert.doesNotMatch(child.stderr, /Streamable HTTP/, '--ws alone serves only WebSocket');
      assert.equal(child.stdout, '');
    } catch (error) {
      await child.kill('SIGKILL');
      throw error;
    }
    const { code, signal } = await child.kill('SIGTERM');
    assert.equal(signal, null, `killed by ${signal}: ${child.stderr}`);
    assert.equal(code, 0, child.stderr);
  });

  it('a config with a ws section and no transport flag serves HTTP and WebSocket (ws.path honoured)', async () => {
    const config = join(dir.path, 'both.yaml');
    await writeFile(
      config,
      `store:\n  kind: memory\nhttp:\n  port: 0\nws:\n  host: 127.0.0.1\n  port: 0\n  path: /socket\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\n`,
    );
    const child = spawnNode([CLI, 'serve', '--config', config], { cwd: dir.path, env: { ...process.env, PORT: '', HOST: '' } });
    try {
      const [, wsUrl] = await child.waitForOutput(SERVING_WS, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      const [, httpUrl] = await child.waitForOutput(SERVING_HTTP, { stream: 'stderr' });
      assert.match(wsUrl!, /^ws:\/\/127\.0\.0\.1:\d+\/socket$/);
      const [overWs, overHttp] = await Promise.all([
        listToolNames({ kind: 'ws', url: wsUrl! }),
        listToolNames({ kind: 'http', url: httpUrl! }),
      ]);
      assert.deepEqual(overWs, DEMO_TOOL_NAMES);
      assert.deepEqual(overHttp, DEMO_TOOL_NAMES);
    } catch (error) {
      await child.kill('SIGKILL');
      throw error;
    }
    const { code } = await child.kill('SIGTERM');
    assert.equal(code, 0, child.stderr);
  });

  it('--ws nonsense: exit 1 naming --ws, before anything starts', async () => {
    const cwd = join(dir.path, 'ws-nonsense');
    await mkdir(cwd);
    const run = await runNode([CLI, 'serve', '--ws', 'nonsense'], { cwd, timeoutMs: STARTUP_TIMEOUT_MS });
    assert.equal(run.code, 1, run.stderr);
    assert.equal(run.stderr, 'taskvisor: --ws nonsense: expected host:port (e.g. 127.0.0.1:3000), :port or port\n');
    assert.equal(existsSync(join(cwd, '.taskvisor')), false, 'partial start: the default store was created');
  });
});
