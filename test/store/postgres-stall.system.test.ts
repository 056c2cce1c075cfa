/**
 * Store operation timeouts through a real stall: PostgreSQL behind a TCP
 * proxy that stops forwarding (no error, no answer). A create must not hang
 * for the whole stall: it answers a retryable -32603 once the store
 * operation timeout passes, and once the proxy forwards again creates work
 * and nothing the caller was refused is left behind as a task.
 */
import assert from 'node:assert/strict';
import { createServer, connect as tcpConnect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { createRuntime, silentLogger } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { PostgresTaskStore } from '../../src/store/index.js';
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
  it('a create answers a retryable -32603 after the store operation timeout instead of hanging; after the stall creates work again', async () => {
    const proxy = await stallableProxy();
    const { schema, drop } = await freshSchema('tv_stall');
    const store = new PostgresTaskStore({ url: proxy.url, schema, poolSize: 2, leaseMs: 30_000 });
    const runtime = createRuntime({ store, logger: silentLogger, reapIntervalMs: 0, storeTimeoutMs: 1_000 });
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
      assert.doesNotMatch(refused.error.message, /postgres|5432|127\.0\.0\.1/);
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

  it(
    'a stall longer than the lease: the instance gives its tasks up during the stall, and they end saying it lost its lease',
    { timeout: 180_000 },
    async () => {
      const proxy = await stallableProxy();
      const { schema, drop } = await freshSchema('tv_stall_lease');
      // A short lease (an option) keeps the stall short; the default is 5 s.
      const leaseMs = 3_000;
      const store = new PostgresTaskStore({ url: proxy.url, schema, poolSize: 4, leaseMs });
      const runtime = createRuntime({ store, logger: silentLogger, reapIntervalMs: 0, storeTimeoutMs: 1_000 });
      const started: string[] = [];
      const abortedAt: number[] = [];
      // resume: 'fail' (the default): a task given up cannot run again anywhere, so it must end saying why.
      runtime.tool('hold', { taskBehavior: 'always', inputSchema: z.object({}) }, (_args, ctx) => {
        started.push(ctx.taskId ?? '');
        return new Promise<string>((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => {
            abortedAt.push(Date.now());
            reject(ctx.signal.reason as Error);
          }),
        );
      });
      await runtime.start();
      const http = await listenHttp(runtime, { port: 0 });
      const client = await connect({ kind: 'http', url: http.url });
      const raw = async (method: string, params: Record<string, unknown>) =>
        (await client.raw({ method, params: { ...params, _meta: envelope() } } as never)) as unknown as {
          result?: { taskId?: string; status?: string; statusMessage?: string };
          error?: { code: number; message: string };
        };
      const until = async (what: string, probe: () => boolean | Promise<boolean>, timeoutMs: number) => {
        const end = Date.now() + timeoutMs;
        while (!(await probe())) {
          if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      try {
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) {
          const created = await raw('tools/call', { name: 'hold', arguments: {} });
          assert.equal(typeof created.result?.taskId, 'string', JSON.stringify(created));
          ids.push(created.result!.taskId!);
        }
        await until('the three tools to run', () => started.length === 3, 60_000);

        proxy.freeze();
        const frozenAt = Date.now();
        // No answer, no error: the renewal hangs. The instance cannot prove its lease and must stop its tasks
        // before the lease could end (a survivor may adopt them then), not once the stall is over.
        await until('the tasks to be given up during the stall', () => abortedAt.length === 3, 4 * leaseMs);
        // Long enough that the lease has certainly expired in the database too.
        while (Date.now() - frozenAt < 3 * leaseMs) await new Promise((resolve) => setTimeout(resolve, 100));
        const thawedAt = Date.now();
        proxy.thaw();
        assert.ok(
          // By the end of the lease (plus what a loaded event loop adds), well inside the three-lease stall.
          abortedAt.every((at) => at < thawedAt && at - frozenAt <= 2 * leaseMs),
          `given up ${abortedAt.map((at) => at - frozenAt).join(', ')} ms into a ${thawedAt - frozenAt} ms stall (lease ${leaseMs} ms)`,
        );

        // The instance joins again under a new id and adopts its own old tasks: they cannot resume, so they end
        // failed saying the lease was lost, never "The server restarted" (this process never restarted).
        for (const taskId of ids) {
          let task: { status?: string; statusMessage?: string } | undefined;
          await until(
            `task ${taskId} to end`,
            async () => {
              task = (await raw('tasks/get', { taskId })).result;
              return task?.status === 'failed';
            },
            60_000,
          );
          assert.match(task!.statusMessage ?? '', /lost its cluster lease/, JSON.stringify(task));
          assert.doesNotMatch(task!.statusMessage ?? '', /server restarted/i);
        }
        assert.equal(started.length, 3, 'no tool ran twice');
      } finally {
        proxy.thaw();
        await client.close();
        await http.close();
        await runtime.close();
        await proxy.close();
        await drop();
      }
    },
  );
});
