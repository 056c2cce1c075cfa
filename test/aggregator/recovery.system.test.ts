/**
 * An upstream that dies mid-task and comes back: while it is down,
 * `tasks/get` of its wrapped ids answers a retryable JSON-RPC error naming
 * it (never an invented status) and its tools leave the catalog; once it is
 * back (same port), the upstream actor reconnects on its own, the catalog is
 * restored, and the same wrapped ids route again — to whatever the upstream
 * says about them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { CLI, callTool, errorOf, freePort, getTask, resultOf, spawnNode, tempDir, waitFor, type Child } from '../support/processes.js';
import { DEMO_TOOLS, startAggregator, type Aggregator } from './harness.js';

describe('upstream killed mid-task, then restarted', () => {
  let cwd: { path: string; remove(): Promise<void> };
  let port: number;
  let upstream: Child | undefined;
  let aggregator: Aggregator;
  let client: ConnectedClient;

  /** The demo server (lowdb store in `cwd`, so its tasks survive the restart) on a fixed port. */
  const startDemo = async () => {
    upstream = spawnNode([CLI, 'serve', '--demo', '--http', `127.0.0.1:${port}`], { cwd: cwd.path });
    await upstream.waitForOutput(/serving MCP over Streamable HTTP at/);
  };

  before(async () => {
    cwd = await tempDir('taskvisor-agg-recovery-');
    port = await freePort();
    await startDemo();
    aggregator = await startAggregator([
      {
        name: 'demo',
        type: 'streamable-http',
        url: `http://127.0.0.1:${port}/mcp`,
        pingIntervalMs: 100,
        maxPingFailures: 1,
        timeout: 5_000,
        backoff: { initialMs: 100, maxMs: 400 },
      },
    ]);
    client = await connect({ kind: 'http', url: aggregator.url });
  });
  after(async () => {
    await client?.close();
    await aggregator?.close();
    await upstream?.kill();
    await cwd?.remove();
  });

  it('errors naming the upstream while it is down, recovers with its catalog when it is back', async () => {
    const running = String(resultOf(await callTool(client, 'x_demo_sleep', { ms: 120_000 })).taskId);
    const finished = String(resultOf(await callTool(client, 'x_demo_sleep', { ms: 250, message: 'done before the crash' })).taskId);
    await waitFor(async () => resultOf(await getTask(client, finished)).status === 'completed', {
      timeoutMs: 10_000,
      what: 'the short task to complete',
    });

    await upstream!.kill('SIGKILL');

    // Down: a retryable error that names the upstream, for both ids; no status is made up.
    for (const id of [running, finished]) {
      const error = errorOf(await getTask(client, id));
      assert.equal(error.code, -32603, JSON.stringify(error));
      assert.match(error.message, /Upstream demo is unavailable/);
      assert.equal((error.data as { upstream: string; retryable: boolean }).upstream, 'demo');
      assert.equal((error.data as { retryable: boolean }).retryable, true);
    }
    // The actor notices (failed ping) and backs off; the upstream's tools leave the catalog.
    const down = await aggregator.runtime.upstreams!.waitFor(
      'demo',
      (status) => status.state === 'backoff' || status.state === 'connecting',
      10_000,
    );
    assert.equal(down.toolCount, 0);
    await waitFor(async () => !(await client.client.listTools()).tools.some((tool) => tool.name.startsWith('x_demo_')), {
      what: 'the catalog to drop the upstream tools',
    });
    const inBackoff = await aggregator.runtime.upstreams!.waitFor('demo', (status) => status.state === 'backoff', 10_000);
    assert.ok(inBackoff.lastError, 'a last error is reported');
    assert.ok(inBackoff.retryAt !== null, 'a retry time is reported');
    const callWhileDown = errorOf(await callTool(client, 'x_demo_sleep', { ms: 10 }));
    assert.equal(callWhileDown.code, -32602, 'the tool is gone from the catalog while the upstream is down');

    await startDemo();

    // Back: reconnected by the actor's own backoff loop, catalog restored.
    const ready = await aggregator.runtime.upstreams!.waitFor('demo', (status) => status.state === 'ready', 20_000);
    assert.equal(ready.toolCount, DEMO_TOOLS.length);
    const tools = (await client.client.listTools()).tools
      .map((tool) => tool.name)
      .filter((name) => name.startsWith('x_demo_'))
      .sort();
    assert.deepEqual(tools, DEMO_TOOLS);
    // The same wrapped ids route again; what they say is the upstream's own account.
    const finishedAgain = resultOf(await getTask(client, finished));
    assert.equal(finishedAgain.status, 'completed');
    assert.deepEqual(finishedAgain.result, { content: [{ type: 'text', text: 'done before the crash' }], resultType: 'complete' });
    const runningAgain = resultOf(await getTask(client, running));
    assert.equal(runningAgain.taskId, running);
    assert.equal(runningAgain.status, 'failed', 'the restarted upstream failed its interrupted task (resume: fail)');
    assert.match(String((runningAgain.error as { message: string }).message), /restarted/);
    // And new calls work.
    const fresh = resultOf(
      await client
        .raw({ method: 'tools/call', params: { name: 'x_demo_echo', arguments: { text: 'back' }, _meta: envelope() } } as never)
        .then((o) => o as never),
    );
    assert.deepEqual(fresh.content, [{ type: 'text', text: 'back' }]);
  });
});
