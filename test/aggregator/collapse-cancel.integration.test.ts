/**
 * Collapse and cancellation: when a caller that cannot take a task gives up
 * (its request is aborted and its stream closes), taskvisor cancels the
 * upstream task it was running on the caller's behalf. The upstream here is
 * a taskvisor runtime served over real HTTP whose tool records its abort.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { connect } from '../support/extTasksClient.js';
import { CLI, waitFor } from '../support/processes.js';
import { startAggregator, type Aggregator } from './harness.js';

describe('collapse: the upstream task is cancelled when the inbound request goes away', () => {
  let upstream: TaskvisorRuntime;
  let aggregator: Aggregator;
  const started: string[] = [];
  const aborted: string[] = [];
  let upstreamUrl: string;

  before(async () => {
    upstream = createRuntime({ store: { kind: 'memory' }, logger: silentLogger, pollIntervalMs: 100 });
    upstream.tool('block', { description: 'Runs until cancelled.' }, async (_args, ctx) => {
      const label = `call-${started.length + 1}`;
      started.push(label);
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      aborted.push(label);
      return 'cancelled';
    });
    await upstream.start();
    const http = await listenHttp(upstream, { port: 0 });
    upstreamUrl = http.url;
    aggregator = await startAggregator([{ name: 'up', type: 'streamable-http', url: http.url }]);
  });
  after(async () => {
    await aggregator?.close();
    await upstream?.close();
  });

  it('a 2026-07-28 client without the capability aborts its call', async () => {
    const plain = await connect({ kind: 'http', url: aggregator.url }, {});
    try {
      const controller = new AbortController();
      const call = plain.client.callTool({ name: 'x_up_block', arguments: {} }, { signal: controller.signal });
      await waitFor(() => started.length === 1, { what: 'the upstream tool to start' });
      controller.abort();
      await assert.rejects(call);
      await waitFor(() => aborted.includes('call-1'), { timeoutMs: 10_000, what: 'the upstream task to be cancelled' });
    } finally {
      await plain.close();
    }
  });

  // Over stdio: a v1 client's notifications/cancelled reaches the pinned 2025 instance serving its call.
  // (Stateless legacy HTTP serves every POST with a fresh instance, so there it cannot; see docs/aggregator.md.)
  it('a v1 SDK client over stdio aborts its call', async () => {
    const config = join(aggregator.dir, 'stdio-aggregator.yaml');
    await writeFile(
      config,
      `store: { kind: memory }\nstate: { file: ./stdio-state.json }\nupstreams:\n  - { name: up, type: streamable-http, url: ${JSON.stringify(upstreamUrl)} }\n`,
    );
    const client = new V1Client({ name: 'legacy', version: '1.0.0' }, { capabilities: {} });
    await client.connect(
      new V1StdioTransport({
        command: process.execPath,
        args: [CLI, 'serve', '--config', config, '--stdio', '--quiet'],
        cwd: aggregator.dir,
        stderr: 'pipe',
      }),
    );
    try {
      await waitFor(async () => (await client.listTools()).tools.some((tool) => tool.name === 'x_up_block'), {
        timeoutMs: 20_000,
        intervalMs: 200,
        what: 'the upstream catalog',
      });
      const controller = new AbortController();
      const call = client.callTool({ name: 'x_up_block', arguments: {} }, undefined, { signal: controller.signal });
      await waitFor(() => started.length === 2, { what: 'the upstream tool to start' });
      controller.abort();
      await assert.rejects(call);
      await waitFor(() => aborted.includes('call-2'), { timeoutMs: 10_000, what: 'the upstream task to be cancelled' });
    } finally {
      await client.close();
    }
  });
});
