/**
 * The embedding example (`examples/embed/server.ts`) as a child process:
 * taskvisor mounted at /mcp inside a plain Node HTTP service. Contract: it
 * exports nothing, listens on `PORT` (or a free port), prints
 * `listening <url>` on stdout, and serves its tool (`slow_add`, 1 s) end to end.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TasksClient } from '../../src/client/index.js';
import { REPO_ROOT, spawnNode, tempDir, TSX_IMPORT, type Child } from '../support/processes.js';

const EMBED_SERVER = join(REPO_ROOT, 'examples', 'embed', 'server.ts');

describe('examples/embed/server.ts', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let child: Child;
  let url: string;

  before(async () => {
    dir = await tempDir('taskvisor-embed-');
    const env = { ...process.env };
    delete env.PORT;
    // Its store (./.taskvisor-embed) is relative to the working directory: a fresh temp dir.
    child = spawnNode(['--import', TSX_IMPORT, EMBED_SERVER], { cwd: dir.path, env });
    [, url] = (await child.waitForOutput(/^listening (\S+)$/m, { stream: 'stdout', timeoutMs: 45_000 })) as [string, string];
  });

  after(async () => {
    await child?.kill('SIGKILL');
    await dir?.remove();
  });

  it('listens on a free loopback port and prints its MCP URL', () => {
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    assert.notEqual(new URL(url).port, '0');
    assert.ok(existsSync(join(dir.path, '.taskvisor-embed')), 'its lowdb store is in the working directory');
  });

  it('serves a tool call end to end: a 2026 client gets a task that completes, a 2025 client a plain result', async () => {
    const modern = await TasksClient.connect({ url });
    const legacy = new Client({ name: 'legacy', version: '1.0.0' });
    await legacy.connect(new StreamableHTTPClientTransport(new URL(url)));
    try {
      let taskId = '';
      const statuses: string[] = [];
      const [result, plain] = await Promise.all([
        modern.callTool(
          'slow_add',
          { a: 2, b: 3 },
          { onTask: (id) => (taskId = id), onStatus: ({ status }) => void statuses.push(status) },
        ),
        legacy.callTool({ name: 'slow_add', arguments: { a: 40, b: 2 } }),
      ]);
      // 1 s is past the 200 ms promotion threshold: the 2026 call became a task, created working.
      assert.match(taskId, /^[0-9a-f]{32}$/, 'the tools/call answered a CreateTaskResult');
      assert.equal(statuses[0], 'working');
      assert.deepEqual(result.content, [{ type: 'text', text: '5' }]);
      assert.deepEqual(plain, { content: [{ type: 'text', text: '42' }] });
    } finally {
      await modern.close();
      await legacy.close();
    }
  });

  it('leaves the service’s other routes to the service', async () => {
    const response = await fetch(new URL('/health', url));
    assert.equal(response.status, 200);
    assert.equal(await response.text(), 'the rest of your service\n');
  });

  it('stops on SIGTERM', async () => {
    const timer = setTimeout(() => child.process.kill('SIGKILL'), 5_000);
    const { code, signal } = await child.kill('SIGTERM');
    clearTimeout(timer);
    assert.equal(signal, null, `did not exit on SIGTERM within 5 s (killed): ${child.stderr}`);
    assert.equal(code, 0, child.stderr);
  });
});
