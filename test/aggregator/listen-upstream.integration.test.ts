/**
 * The listen relay subscribes upstream: a listen on taskvisor naming a
 * wrapped id opens a `subscriptions/listen` on the (Tasks-capable) upstream
 * for the upstream id, relays its pushes with the wrapped id, and closes it
 * once the task is terminal. The upstream is a taskvisor runtime over real
 * HTTP, so its listen hub can be watched.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { connect, envelope } from '../support/extTasksClient.js';
import { rawRequest, resultOf, waitFor } from '../support/processes.js';
import { startAggregator, type Aggregator } from './harness.js';

describe('listen relay through an upstream subscription', () => {
  let upstream: TaskvisorRuntime;
  let aggregator: Aggregator;
  let release: () => void = () => {};

  before(async () => {
    upstream = createRuntime({ store: { kind: 'memory' }, logger: silentLogger });
    upstream.tool('gate', { taskBehavior: 'always' }, async (_args, ctx) => {
      await new Promise<void>((resolve) => {
        release = resolve;
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      return 'opened';
    });
    await upstream.start();
    const http = await listenHttp(upstream, { port: 0 });
    aggregator = await startAggregator([{ name: 'up', type: 'streamable-http', url: http.url }]);
  });
  after(async () => {
    release();
    await aggregator?.close();
    await upstream?.close();
  });

  it('opens an upstream listen for the upstream id, relays its push under the wrapped id, closes it when terminal', async () => {
    const caller = await connect({ kind: 'http', url: aggregator.url });
    const frames: Array<Record<string, unknown>> = [];
    caller.client.fallbackNotificationHandler = async (notification) => {
      frames.push(notification.params as Record<string, unknown>);
    };
    try {
      const created = resultOf(
        await rawRequest(caller, { method: 'tools/call', params: { name: 'x_up_gate', arguments: {}, _meta: envelope() } }),
      );
      const id = String(created.taskId);
      assert.equal(upstream.subscriptions.size, 0);
      const subscription = await caller.client.listen({ taskIds: [id] } as never);
      await waitFor(() => upstream.subscriptions.size === 1, { what: 'the aggregator to listen upstream' });
      release();
      const done = await waitFor(() => frames.find((frame) => frame.taskId === id && frame.status === 'completed'), {
        timeoutMs: 10_000,
        what: 'the completed frame',
      });
      assert.deepEqual(done.result, { content: [{ type: 'text', text: 'opened' }], resultType: 'complete' });
      await waitFor(() => upstream.subscriptions.size === 0, { what: 'the upstream listen to be closed after the terminal frame' });
      await subscription.close();
    } finally {
      await caller.close();
    }
  });
});
