/**
 * RawRequests under one long-lived signal (a held upstream call sends several
 * requests under its task's signal): a settled request leaves no abort
 * listener behind, and an abort after it sends no cancel for it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Transport } from '@modelcontextprotocol/client';
import { RawRequests } from '../../src/upstreams/RawRequests.js';

function recordingTransport(): { transport: Transport; sent: Array<{ method?: string }> } {
  const sent: Array<{ method?: string }> = [];
  const transport = { send: async (message: { method?: string }) => void sent.push(message) } as unknown as Transport;
  return { transport, sent };
}

describe('RawRequests under one signal', () => {
  it('removes each request’s abort listener once it is answered, and cancels only what is still waiting', async () => {
    const { transport, sent } = recordingTransport();
    const requests = new RawRequests('up');
    const controller = new AbortController();
    let listeners = 0;
    const { signal } = controller;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<typeof add>) => (listeners++, add(...args))) as typeof add;
    signal.removeEventListener = ((...args: Parameters<typeof remove>) => (listeners--, remove(...args))) as typeof remove;

    for (const id of ['r1', 'r2', 'r3']) {
      const answered = requests.send(transport, id, 'tools/call', {}, 10_000, { signal });
      assert.equal(requests.settle(id, { result: {} }), true);
      await answered;
    }
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(listeners, 0, 'every answered request took its listener away');

    const waiting = requests.send(transport, 'r4', 'tools/call', {}, 10_000, { signal });
    controller.abort();
    const cancels = sent.filter((message) => message.method === 'notifications/cancelled');
    assert.equal(cancels.length, 1, 'one cancel, for the request still waiting');
    assert.equal(requests.settle('r4', { result: {} }), true);
    await waiting;
  });
});
