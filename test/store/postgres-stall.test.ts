/**
 * Issue 13 item 4 through a real stall: PostgreSQL behind a TCP proxy that
 * stops forwarding (no error, no answer). A create used to hang for the
 * whole stall; now it answers a retryable -32603 once the store deadline
 * passes, and once the proxy forwards again creates work and nothing the
 * caller was refused is left behind as a task.
 */
import assert from 'node:assert/strict';
import { createServer, connect as tcpConnect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { createRuntime, listenHttp, PostgresTaskStore, silentLogger } from '../../src/index.js';
import { connect, envelope } from '../support/extTasksClient.js';
import { freshSchema, TEST_PG_URL } from '../support/postgres.js';

/** A TCP proxy to 127.0.0.1:5432 whose forwarding can be frozen (bytes are held, sockets stay open). */
async function stallableProxy() {
  const target = new URL(TEST_PG_URL);
  let frozen = false;
  const held: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const pipe = (from: Socket, to: Socket) =>
    from.on('data', (chunk) => {
      if (frozen) held.push(() => to.write(chunk));
      else to.write(chunk);
    });
  const server = createServer((client) => {
    const upstream = tcpConnect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    pipe(client, upstream);
    pipe(upstream, client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const url = new URL(TEST_PG_URL);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    freeze: () => void (frozen = true),
    thaw: () => {
      frozen = false;
      for (const flush of held.splice(0)) flush();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('postgres behind a proxy that stops forwarding', () => {
  it('a create answers a retryable -32603 after the store deadline instead of hanging; after the stall creates work again', async () => {
    const proxy = await stallableProxy();
    const { schema, drop } = await freshSchema('tv_stall');
    const store = new PostgresTaskStore({ url: proxy.url, schema, poolSize: 2, leaseMs: 30_000 });
    const runtime = createRuntime({ store, logger: silentLogger, reapIntervalMs: 0, storeDeadlineMs: 1_000 });
    runtime.tool('work', { taskBehavior: 'always', inputSchema: z.object({}) }, () => 'done');
    await runtime.start();
    const http = await listenHttp(runtime, { port: 0 });
    const client = await connect({ kind: 'http', url: http.url });
    const call = async () =>
      (await client.raw({ method: 'tools/call', params: { name: 'work', arguments: {}, _meta: envelope() } } as never)) as unknown as {
        result?: { taskId?: string };
        error?: { code: number; message: string; data?: { retryable?: boolean } };
      };
    try {
      assert.equal(typeof (await call()).result?.taskId, 'string', 'a create before the stall');
      proxy.freeze();
      const started = Date.now();
      const refused = await call();
      const waited = Date.now() - started;
      assert.equal(refused.error?.code, -32603, JSON.stringify(refused));
      assert.equal(refused.error?.data?.retryable, true);
      assert.doesNotMatch(refused.error!.message, /postgres|5432|127\.0\.0\.1/);
      assert.ok(waited < 15_000, `the create was answered after ${waited} ms`);
      proxy.thaw();
      let after = await call();
      for (let i = 0; i < 50 && after.error; i++) after = await call();
      assert.equal(typeof after.result?.taskId, 'string', `a create after the stall: ${JSON.stringify(after)}`);
    } finally {
      proxy.thaw();
      await client.close();
      await http.close();
      await runtime.close();
      await proxy.close();
      await drop();
    }
  });
});
