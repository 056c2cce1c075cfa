/**
 * Upstreams that are not taskvisor: one written with the plain v2 SDK
 * (2026-07-28, no tasks extension) and one with the v1 SDK (2025-11-25
 * only), both stdio children of the aggregator. Their tools are listed and
 * answered for callers with and without the tasks capability; nothing is
 * ever a task (they have none to give).
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { errorOf, rawRequest, resultOf, REPO_ROOT, tempDir, TSX_IMPORT } from '../support/processes.js';
import { startAggregator, UPSTREAM_READY_MS, type Aggregator } from './harness.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

describe('upstreams written with the plain v2 SDK and with the v1 SDK', () => {
  let aggregator: Aggregator;
  let tasksClient: ConnectedClient;
  let plainClient: ConnectedClient;
  let cwd: { path: string; remove(): Promise<void> };

  before(async () => {
    cwd = await tempDir('taskvisor-agg-sdk-');
    aggregator = await startAggregator([
      {
        name: 'plain',
        type: 'stdio',
        command: process.execPath,
        args: ['--import', TSX_IMPORT, fixture('plain-v2-server.ts')],
        cwd: REPO_ROOT,
        // slow_add is forwarded as is (these tests are about forwarding; promotion has its own), and rogue's call is
        // held (promotion) but never promoted: its unasked task is followed by the held call, answered synchronously.
        promotion: { tools: { slow_add: { taskBehavior: 'never' }, rogue: { promoteAfterMs: 60_000 } } },
      },
      {
        name: 'legacy',
        type: 'stdio',
        command: process.execPath,
        args: ['--import', TSX_IMPORT, fixture('v1-server.ts')],
        cwd: REPO_ROOT,
        toolPrefix: 'legacy',
      },
      {
        name: 'lazy',
        type: 'stdio',
        command: process.execPath,
        args: ['--import', TSX_IMPORT, fixture('plain-v2-server.ts')],
        cwd: REPO_ROOT,
        autoStart: false,
      },
    ]);
    tasksClient = await connect({ kind: 'http', url: aggregator.url });
    plainClient = await connect({ kind: 'http', url: aggregator.url }, {});
  });
  after(async () => {
    await tasksClient?.close();
    await plainClient?.close();
    await aggregator?.close();
    await cwd?.remove();
  });

  it('negotiates each upstream its own era and sees that neither has tasks', () => {
    const byName = Object.fromEntries(aggregator.runtime.upstreams!.status().map((status) => [status.name, status]));
    assert.equal(byName.plain!.state, 'ready');
    assert.equal(byName.plain!.protocolVersion, '2026-07-28');
    assert.equal(byName.plain!.tasks, false);
    assert.equal(byName.legacy!.state, 'ready');
    assert.equal(byName.legacy!.protocolVersion, '2025-11-25');
    assert.equal(byName.legacy!.tasks, false);
    assert.equal(byName.lazy!.state, 'not started');
  });

  it('lists both catalogs under x_<prefix>_, without double prefixing', async () => {
    const names = (await tasksClient.client.listTools()).tools.map((tool) => tool.name).sort();
    assert.deepEqual(names, ['x_legacy_greet', 'x_plain_add', 'x_plain_rogue', 'x_plain_slow_add']);
  });

  it('a task the upstream returns unasked is collapsed, never handed out (even to a Tasks-capable caller)', async () => {
    for (const client of [tasksClient, plainClient]) {
      const result = resultOf(
        await rawRequest(client, {
          method: 'tools/call',
          params: { name: 'x_plain_rogue', arguments: {}, _meta: client === tasksClient ? envelope() : envelope({}) },
        }),
      );
      assert.equal(result.resultType, 'complete', JSON.stringify(result));
      assert.equal(result.taskId, undefined);
      assert.deepEqual(result.content, [{ type: 'text', text: 'rogue rogue-1 done' }]);
    }
  });

  it('autoStart: false connects only when started', async () => {
    const lazy = () => aggregator.runtime.upstreams!.status().find((status) => status.name === 'lazy')!;
    assert.equal(lazy().state, 'not started');
    aggregator.runtime.upstreams!.startUpstream('lazy');
    await aggregator.runtime.upstreams!.waitFor('lazy', (status) => status.state === 'ready', UPSTREAM_READY_MS);
    const names = (await tasksClient.client.listTools()).tools.map((tool) => tool.name);
    assert.ok(names.includes('x_lazy_add'), names.join(', '));
  });

  for (const [label, who] of [
    ['a Tasks-capable client', () => tasksClient],
    ['a client without the capability', () => plainClient],
  ] as const) {
    it(`answers ${label} with the upstream's plain result`, async () => {
      const client = who();
      const meta = client === tasksClient ? envelope() : envelope({});
      const sum = resultOf(
        await rawRequest(client, { method: 'tools/call', params: { name: 'x_plain_slow_add', arguments: { a: 2, b: 3 }, _meta: meta } }),
      );
      assert.equal(sum.resultType, 'complete');
      assert.deepEqual(sum.content, [{ type: 'text', text: '5' }]);
      const greeting = resultOf(
        await rawRequest(client, { method: 'tools/call', params: { name: 'x_legacy_greet', arguments: { name: 'Ada' }, _meta: meta } }),
      );
      assert.deepEqual(greeting.content, [{ type: 'text', text: 'Hi Ada, from v1' }]);
    });
  }

  it('the upstream validates arguments: its error comes back', async () => {
    const outcome = await rawRequest(tasksClient, {
      method: 'tools/call',
      params: { name: 'x_plain_add', arguments: { a: 'two' }, _meta: envelope() },
    });
    // The v2 McpServer reports invalid arguments as a tool error result (isError) or -32602; either way it is the upstream's answer.
    if (outcome.kind === 'error') assert.equal(errorOf(outcome).code, -32602);
    else assert.equal(resultOf(outcome).isError, true);
  });
});
