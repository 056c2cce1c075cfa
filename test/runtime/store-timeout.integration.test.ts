/**
 * A stalled store is not a hang. A create whose write does not come back
 * answers a retryable -32603 once the store operation timeout passes; the
 * write that lands afterwards is removed, so no task exists that nobody was
 * told about. A task read waits no longer than the timeout either.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { createRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { FaultyTaskStore } from '../support/FaultyTaskStore.js';
import { connect, envelope } from '../support/extTasksClient.js';

describe('store operation timeouts', () => {
  // `storeDeadlineMs` is the deprecated name of the same option: both must keep a create from hanging.
  for (const option of ['storeTimeoutMs', 'storeDeadlineMs'] as const)
    it(`a create on a hung store answers a retryable -32603 after the timeout (${option}); the late write is removed`, async () => {
      const store = new FaultyTaskStore(new MemoryTaskStore());
      const logged: string[] = [];
      const runtime = createRuntime({
        store,
        logger: { info: () => {}, error: (message) => logged.push(message) },
        reapIntervalMs: 0,
        [option]: 300,
      });
      runtime.tool('work', { taskBehavior: 'always', inputSchema: z.object({}) }, () => 'done');
      await runtime.start();
      const http = await listenHttp(runtime, { port: 0 });
      const client = await connect({ kind: 'http', url: http.url });
      try {
        const hang = store.inject({ effect: 'hang', ops: ['create'] });
        const reply = (await client.raw({
          method: 'tools/call',
          params: { name: 'work', arguments: {}, _meta: envelope() },
        } as never)) as unknown as {
          error?: { code: number; message: string; data?: { retryable?: boolean } };
        };
        assert.equal(reply.error?.code, -32603, JSON.stringify(reply));
        assert.match(reply.error.message, /did not answer within 300 ms; nothing was stored\. Retry/);
        assert.equal(reply.error.data?.retryable, true);
        assert.equal(store.hungWrites, 1);
        // The stall ends: the held create lands, and is removed at once (the caller was told it failed).
        hang.remove();
        while (!logged.some((line) => /its create landed after its timeout and was removed/.test(line)))
          await new Promise((resolve) => setTimeout(resolve, 10));
        assert.deepEqual(await store.inner.list(), []);
        // The store answers again: the next create works.
        const ok = (await client.raw({
          method: 'tools/call',
          params: { name: 'work', arguments: {}, _meta: envelope() },
        } as never)) as unknown as {
          result?: { taskId?: string };
        };
        assert.equal(typeof ok.result?.taskId, 'string');
      } finally {
        store.heal();
        await client.close();
        await http.close();
        await runtime.close();
      }
    });
});
