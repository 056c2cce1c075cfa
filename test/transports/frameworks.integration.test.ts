/**
 * The HTTP entry embedded in the web frameworks Node services run on, each
 * the real framework over real HTTP on 127.0.0.1: Express 5 behind
 * `express.json()`, a Fastify 5 plugin (Fastify's own JSON parsing), Koa
 * behind @koa/bodyparser, Hono on @hono/node-server, and a bare fetch
 * handler (how Next.js route handlers, Bun and Deno call `entry.fetch`).
 * Where the framework parsed the body, the entry takes the parsed value and
 * judges it by the same limits (docs/frameworks.md).
 *
 * For each host: a direct call and a task round trip with the ext-tasks
 * client, a listen stream that receives `notifications/tasks`, a 2025-11-25
 * session with the v1 SDK client, and bodies refused by the body limits.
 */
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { bodyParser } from '@koa/bodyparser';
import { serve } from '@hono/node-server';
import { resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import demoTools from '../../examples/demo/tools.js';
import { createRuntime, defineTool, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { createHttpEntry, taskvisorExpress, taskvisorFastify, taskvisorKoa, type HttpEntry } from '../../src/transports/index.js';
import { connect, envelope, taskSession } from '../support/extTasksClient.js';
import { standardHeaders } from '../support/httpRaw.js';
import { createTask, getTask, resultOf } from '../support/processes.js';
import { textOf, type Json } from '../support/taskOps.js';

const MAX_BODY_BYTES = 16 * 1024;

/** `gated` tasks finish when the test releases them (a listen stream then sees the change), not after a time. */
const gates: Array<() => void> = [];
const gated = defineTool('gated', { description: 'Finishes when the test releases it.', taskBehavior: 'always' }, async () => {
  await new Promise<void>((resolve) => gates.push(resolve));
  return 'released';
});
const releaseGates = () => gates.splice(0).forEach((release) => release());

interface Host {
  url: string;
  close(): Promise<void>;
}

/** The URL of a Node server listening on 127.0.0.1 (port 0), once it listens. */
async function listening(server: Server, path = '/mcp'): Promise<string> {
  if (!server.listening) await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
}

const closing = (server: Server) => async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
};

const HOSTS: Record<string, (entry: HttpEntry) => Promise<Host>> = {
  'Express 5 (express.json(), taskvisorExpress)': async (entry) => {
    const app = express();
    app.use(express.json({ limit: '1mb' }));
    app.use(taskvisorExpress(entry));
    const server = app.listen(0, '127.0.0.1');
    return { url: await listening(server), close: closing(server) };
  },
  'Fastify 5 (taskvisorFastify plugin)': async (entry) => {
    const app = Fastify();
    await app.register(taskvisorFastify(entry));
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { url: await listening(app.server), close: () => app.close() };
  },
  'Koa (@koa/bodyparser, taskvisorKoa)': async (entry) => {
    const app = new Koa();
    app.use(bodyParser({ jsonLimit: '1mb' }));
    app.use(taskvisorKoa(entry));
    const server = app.listen(0, '127.0.0.1');
    return { url: await listening(server), close: closing(server) };
  },
  'Hono (@hono/node-server, entry.fetch(c.req.raw))': async (entry) => {
    const app = new Hono();
    app.all(entry.path, (c) => entry.fetch(c.req.raw));
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
    return { url: await listening(server), close: closing(server) };
  },
  'a bare fetch handler (Next.js route handlers, Bun, Deno)': async (entry) => {
    const server = serve({ fetch: (request: Request) => entry.fetch(request), port: 0, hostname: '127.0.0.1' }) as Server;
    return { url: await listening(server), close: closing(server) };
  },
};

/** One SSE stream: waits for the message a predicate accepts (no fixed wait). */
function sseReader(body: ReadableStream<Uint8Array>) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  const seen: Json[] = [];
  return {
    seen,
    async next(accept: (message: Json) => boolean): Promise<Json> {
      for (;;) {
        const found = seen.find(accept);
        if (found) return found;
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended before the message was seen: ${JSON.stringify(seen)}`);
        buffered += decoder.decode(value, { stream: true });
        const events = buffered.split(/\r?\n\r?\n/);
        buffered = events.pop() ?? '';
        for (const event of events) {
          const data = event
            .split(/\r?\n/)
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trimStart())
            .join('\n');
          if (data) seen.push(JSON.parse(data) as Json);
        }
      }
    },
    cancel: () => reader.cancel(),
  };
}

/** A raw tools/call POST whose `arguments` are `args`. */
const postCall = (url: string, args: unknown) => {
  const params = { name: 'echo', arguments: args, _meta: envelope() };
  return fetch(url, {
    method: 'POST',
    headers: standardHeaders('tools/call', params),
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }),
  });
};

describe('the HTTP entry embedded in web frameworks', () => {
  let runtime: TaskvisorRuntime;

  before(async () => {
    runtime = createRuntime({
      store: new MemoryTaskStore(),
      logger: silentLogger,
      promoteAfterMs: 50,
      pollIntervalMs: 50,
      limits: { maxRequestBodyBytes: MAX_BODY_BYTES },
    });
    runtime.use(...demoTools, gated);
    await runtime.start();
  });
  after(async () => {
    releaseGates();
    await runtime?.close();
  });

  for (const [name, start] of Object.entries(HOSTS)) {
    describe(name, () => {
      let entry: HttpEntry;
      let host: Host;
      before(async () => {
        entry = createHttpEntry(runtime, { path: '/mcp' });
        host = await start(entry);
      });
      after(async () => {
        await host?.close();
        await entry?.close();
      });

      it('a direct call and a task round trip with the ext-tasks client', async () => {
        const connected = await connect({ kind: 'http', url: host.url });
        const session = taskSession(connected);
        try {
          const direct = await session.callTool('echo', { text: 'now' });
          assert.equal(direct.kind, 'immediate');
          assert.equal(textOf(resultFromTaskOutcome((await direct.settle()).outcome)), 'now');
          const task = await session.callTool('sleep', { ms: 120, message: 'slept' });
          assert.equal(task.kind, 'task');
          const { outcome } = await task.settle();
          assert.equal(outcome.status, 'completed');
          assert.equal(textOf(resultFromTaskOutcome(outcome)), 'slept');
        } finally {
          await session.close();
          await connected.close();
        }
      });

      it('a listen stream receives notifications/tasks for a task it was acknowledged', async () => {
        const connected = await connect({ kind: 'http', url: host.url });
        const abort = new AbortController();
        try {
          const taskId = await createTask(connected, 'gated');
          const params = { notifications: { taskIds: [taskId] }, _meta: envelope() };
          const response = await fetch(host.url, {
            method: 'POST',
            headers: standardHeaders('subscriptions/listen', params),
            body: JSON.stringify({ jsonrpc: '2.0', id: 'listen-1', method: 'subscriptions/listen', params }),
            signal: abort.signal,
          });
          assert.equal(response.status, 200);
          assert.match(response.headers.get('content-type') ?? '', /text\/event-stream/);
          const stream = sseReader(response.body!);
          const ack = await stream.next((message) => message.method === 'notifications/subscriptions/acknowledged');
          assert.deepEqual(((ack.params as Json).notifications as Json).taskIds, [taskId]);
          releaseGates();
          const done = await stream.next(
            (message) =>
              message.method === 'notifications/tasks' &&
              (message.params as Json).taskId === taskId &&
              (message.params as Json).status === 'completed',
          );
          assert.equal((done.params as Json).taskId, taskId);
          assert.equal(resultOf(await getTask(connected, taskId)).status, 'completed');
        } finally {
          abort.abort();
          await connected.close();
        }
      });

      it('a 2025-11-25 session with the v1 SDK client: initialize, then a call', async () => {
        const transport = new V1HttpTransport(new URL(host.url));
        const client = new V1Client({ name: 'legacy-v1-client', version: '1.32.2' });
        try {
          await client.connect(transport);
          assert.equal(client.getServerVersion()?.name !== undefined, true);
          assert.ok(transport.sessionId, 'initialize opened a session');
          const result = await client.callTool({ name: 'echo', arguments: { text: 'legacy' } });
          assert.deepEqual(result.content, [{ type: 'text', text: 'legacy' }]);
          await transport.terminateSession();
        } finally {
          await client.close();
        }
      });

      it('a body over maxRequestBodyBytes is 413 with the limit named; one nested too deeply is 400', async () => {
        const large = await postCall(host.url, { text: 'x'.repeat(MAX_BODY_BYTES + 1) });
        assert.equal(large.status, 413);
        const refused = (await large.json()) as { error: { code: number; data: { limit: string; max: number } } };
        assert.equal(refused.error.code, -32000);
        assert.deepEqual(refused.error.data, { limit: 'maxRequestBodyBytes', max: MAX_BODY_BYTES });

        let deep: unknown = 'bottom';
        for (let depth = 0; depth < 100; depth++) deep = [deep];
        const nested = await postCall(host.url, { text: deep });
        assert.equal(nested.status, 400);
        const shape = (await nested.json()) as { error: { code: number; data: { limit: string } } };
        assert.equal(shape.error.code, -32000);
        assert.equal(shape.error.data.limit, 'maxJsonDepth');

        // The host goes on serving.
        const ok = await postCall(host.url, { text: 'after' });
        assert.equal(ok.status, 200, await ok.clone().text());
        assert.match(await ok.text(), /after/);
      });
    });
  }
});

describe("the host framework's own authentication names the principal", () => {
  let runtime: TaskvisorRuntime;
  let entry: HttpEntry;
  let plain: HttpEntry;
  let host: Host;

  before(async () => {
    runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger, promoteAfterMs: 50, pollIntervalMs: 50 });
    runtime.use(...demoTools, gated);
    await runtime.start();
    entry = createHttpEntry(runtime, { path: '/mcp' });
    plain = createHttpEntry(runtime, { path: '/plain' });
    const app = express();
    // The host's auth middleware: who the caller is, or nobody.
    app.use((req, _res, next) => {
      const user = req.headers['x-user'];
      if (typeof user === 'string') (req as typeof req & { user?: string }).user = user;
      next();
    });
    app.use(express.json());
    app.use(
      taskvisorExpress(entry, {
        principal: (req: express.Request & { user?: string }) => (req.user ? { id: req.user } : null),
      }),
    );
    // Mounted behind express.json() without handing the parsed body in: the wiring mistake this names.
    app.use((req, res, next) => plain.handleNode(req, res) || next());
    const server = app.listen(0, '127.0.0.1');
    host = { url: await listening(server), close: closing(server) };
  });
  after(async () => {
    releaseGates();
    await host?.close();
    await runtime?.close();
  });

  it('a request the host authenticated nobody for is 401; tasks belong to the principal the host named (I-7)', async () => {
    const anonymous = await postCall(host.url, { text: 'who' });
    assert.equal(anonymous.status, 401);
    assert.equal(((await anonymous.json()) as { error: { code: number } }).error.code, -32600);

    const alice = await connect({ kind: 'http', url: host.url, headers: { 'x-user': 'alice' } });
    const bob = await connect({ kind: 'http', url: host.url, headers: { 'x-user': 'bob' } });
    try {
      const taskId = await createTask(alice, 'gated');
      assert.equal(resultOf(await getTask(alice, taskId)).status, 'working');
      const foreign = await getTask(bob, taskId);
      assert.equal(foreign.kind, 'error');
      assert.equal(foreign.kind === 'error' ? foreign.error.code : 0, -32602, "another principal's task is unknown");
      releaseGates();
    } finally {
      await alice.close();
      await bob.close();
    }
  });

  it('a body a parser already read, not handed in, is a clear 500 naming the fix (not a hang)', async () => {
    const params = { name: 'echo', arguments: { text: 'x' }, _meta: envelope() };
    const response = await fetch(host.url.replace('/mcp', '/plain'), {
      method: 'POST',
      headers: standardHeaders('tools/call', params),
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }),
    });
    assert.equal(response.status, 500);
    const body = (await response.json()) as { error: { code: number; message: string } };
    assert.equal(body.error.code, -32603);
    assert.match(body.error.message, /already read the request body; pass the parsed body/);
  });

  it('fetch takes the principal and a parsed body too; an entry with its own authentication refuses one from the host (TypeError)', async () => {
    const params = { name: 'echo', arguments: { text: 'fetched' }, _meta: envelope() };
    const request = () =>
      new Request('http://127.0.0.1/mcp', {
        method: 'POST',
        headers: standardHeaders('tools/call', params),
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }),
      });
    assert.equal((await entry.fetch(request(), { principal: null })).status, 401);
    const served = await entry.fetch(request(), { principal: { id: 'carol' } });
    assert.equal(served.status, 200);
    assert.match(await served.text(), /fetched/);

    // A body the fetch host already read is handed in, judged, and never read again (the stream is used up here).
    const consumed = request();
    const parsedBody = JSON.parse(await consumed.text()) as unknown;
    const fromParsed = await entry.fetch(consumed, { parsedBody, principal: { id: 'carol' } });
    assert.equal(fromParsed.status, 200);
    assert.match(await fromParsed.text(), /fetched/);
    let deep: unknown = 'bottom';
    for (let depth = 0; depth < 100; depth++) deep = [deep];
    const tooDeep = await entry.fetch(request(), { parsedBody: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { deep } } });
    assert.equal(tooDeep.status, 400);
    assert.equal(((await tooDeep.json()) as { error: { data: { limit: string } } }).error.data.limit, 'maxJsonDepth');

    const own = createHttpEntry(runtime, { authenticate: () => ({ id: 'hook' }) });
    try {
      await assert.rejects(own.fetch(request(), { principal: { id: 'carol' } }), TypeError);
    } finally {
      await own.close();
    }
  });
});
