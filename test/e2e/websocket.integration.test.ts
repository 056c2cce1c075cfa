/**
 * The e2e conformance scenarios over a real WebSocket on 127.0.0.1 (port 0;
 * `listenWebSocket`: each socket served by the SDK's `serveStdio` through a
 * custom `Transport`), plus what only WebSocket has: framing errors, the
 * upgrade front door (404, 403, 401), per-connection principals (I-7), a
 * 2025-11-25 client, `subscriptions/listen` pushes on the connection, and
 * shutdown/keepalive.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { WebSocketClientTransport as V1WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { WebSocket } from 'ws';
import { listenWebSocket, type WebSocketListener } from '../../src/transports/index.js';
import { type TaskvisorRuntime } from '../../src/index.js';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { error_, result_, taskOps, textOf, unknownTaskId, type Json } from '../support/taskOps.js';
import { waitFor } from '../support/processes.js';
import { WebSocketClientTransport, WebSocketUpgradeError } from '../../src/client/index.js';
import { startE2eRuntime } from './fixtures/runtime.js';
import { registerScenarios } from './scenarios.js';

let url = '';

/** A raw socket: send frames, read the JSON replies in order. */
async function rawSocket(target: string, options: { headers?: Record<string, string>; autoPong?: boolean } = {}) {
  const socket = new WebSocket(target, { headers: options.headers ?? {}, autoPong: options.autoPong ?? true });
  const messages: Json[] = [];
  const waiters: Array<() => void> = [];
  socket.on('message', (data) => {
    messages.push(JSON.parse(String(data)) as Json);
    for (const wake of waiters.splice(0)) wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return {
    socket,
    messages,
    closed,
    /** Resolves the `count`-th message (1-based) once it arrived. */
    async nth(count: number, timeoutMs = 5_000): Promise<Json> {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) assert.fail(`expected ${count} messages, got ${JSON.stringify(messages)}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50).unref();
        });
      }
      return messages[count - 1]!;
    },
    close: async () => {
      if (socket.readyState !== WebSocket.CLOSED) socket.close();
      await closed;
    },
  };
}

/** The HTTP status (and headers) an upgrade to `target` is refused with. */
async function refusedUpgrade(target: string, headers: Record<string, string> = {}): Promise<WebSocketUpgradeError> {
  const transport = new WebSocketClientTransport(target, { headers });
  const error = await transport.start().then(
    () => assert.fail(`the upgrade to ${target} was accepted`),
    (error: unknown) => error,
  );
  assert.ok(error instanceof WebSocketUpgradeError, String(error));
  return error;
}

registerScenarios(
  'WebSocket',
  async () => {
    const runtime = await startE2eRuntime();
    const listener = await listenWebSocket(runtime, { port: 0 });
    url = listener.url;
    return { endpoint: { kind: 'ws', url }, close: () => runtime.close() };
  },
  ({ connected }) => {
    describe('WebSocket framing and front door', () => {
      it('a text frame that is not JSON gets -32700 with id null; binary frames and batches -32600; the socket keeps serving', async () => {
        const raw = await rawSocket(url);
        try {
          raw.socket.send('{"jsonrpc": "2.0", "id": 1, "method": ');
          assert.deepEqual(await raw.nth(1), {
            jsonrpc: '2.0',
            id: null,
            error: { code: -32700, message: 'Parse error: the frame is not valid JSON' },
          });
          raw.socket.send(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' })), { binary: true });
          const binary = await raw.nth(2);
          assert.equal(binary.id, null);
          assert.equal((binary.error as Json).code, -32600);
          raw.socket.send(JSON.stringify([{ jsonrpc: '2.0', id: 3, method: 'ping' }]));
          assert.equal(((await raw.nth(3)).error as Json).code, -32600);
          raw.socket.send(JSON.stringify({ jsonrpc: '1.0', id: 4, method: 'ping' }));
          const invalid = await raw.nth(4);
          assert.equal((invalid.error as Json).code, -32600);
          assert.equal(invalid.id, 4);
          // Still open, still serving: a modern opening and a tool call on the same socket.
          raw.socket.send(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'server/discover', params: { _meta: envelope() } }));
          const discover = await raw.nth(5);
          assert.equal(discover.id, 5);
          assert.ok(((discover.result as Json).supportedVersions as string[]).includes('2026-07-28'), JSON.stringify(discover));
          raw.socket.send(
            JSON.stringify({
              jsonrpc: '2.0',
              id: 6,
              method: 'tools/call',
              params: { name: 'echo', arguments: { text: 'still here' }, _meta: envelope() },
            }),
          );
          const echo = await raw.nth(6);
          assert.equal(textOf(echo.result as Json), 'still here');
          assert.equal(raw.socket.readyState, WebSocket.OPEN);
        } finally {
          await raw.close();
        }
        // The shared connection was not disturbed.
        assert.equal(textOf(result_(await taskOps(connected).call('echo', { text: 'ok' }))), 'ok');
      });

      it('an upgrade on another path is HTTP 404; plain HTTP on the path is 426', async () => {
        const wrong = await refusedUpgrade(url.replace(/\/mcp$/, '/other'));
        assert.equal(wrong.status, 404);
        assert.equal((JSON.parse(wrong.body) as { error: { code: number } }).error.code, -32601);
        const plain = await fetch(url.replace(/^ws:/, 'http:'));
        assert.equal(plain.status, 426);
        assert.equal((await fetch(url.replace(/^ws:/, 'http:').replace(/\/mcp$/, '/other'))).status, 404);
      });

      it('a foreign Host (DNS rebinding) or a foreign browser Origin is HTTP 403; loopback origins pass', async () => {
        assert.equal((await refusedUpgrade(url, { host: 'evil.example' })).status, 403);
        assert.equal((await refusedUpgrade(url, { origin: 'https://evil.example' })).status, 403);
        const local = await rawSocket(url, { headers: { origin: 'http://localhost:5173' } });
        await local.close();
      });
    });

    describe('subscriptions/listen over WebSocket (T-29, T-31)', () => {
      it('listen({taskIds}) is acknowledged on the socket and pushes notifications/tasks up to the terminal status', async () => {
        // Its own connection: the shared one must see no notifications/tasks (checked by the wire-shape test).
        const listener = await connect({ kind: 'ws', url });
        try {
          const ops = taskOps(() => listener);
          const notes: Json[] = [];
          listener.client.fallbackNotificationHandler = async (notification) => {
            notes.push(notification);
          };
          const created = await ops.createTask('sleep', { ms: 300, message: 'pushed' });
          const subscription = await listener.client.listen({ taskIds: [created.taskId] } as never);
          const ack = listener.received.find((message) => (message as Json).method === 'notifications/subscriptions/acknowledged') as
            Json | undefined;
          assert.ok(ack, 'the acknowledgement arrived on the socket');
          // The SDK client's honoredFilter drops taskIds (it parses the ack with its own filter schema): read the frame.
          assert.deepEqual(((ack.params as Json).notifications as Json).taskIds, [created.taskId]);
          const subscriptionId = ((ack.params as Json)._meta as Json)['io.modelcontextprotocol/subscriptionId'];
          assert.equal(typeof subscriptionId, 'string');

          const deadline = Date.now() + 5_000;
          while (!notes.some((note) => (note.params as Json).status === 'completed')) {
            if (Date.now() > deadline) assert.fail(`no completed notification: ${JSON.stringify(notes)}`);
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          for (const note of notes) {
            assert.equal(note.method, 'notifications/tasks', JSON.stringify(note));
            const params = note.params as Json;
            assert.equal(params.taskId, created.taskId);
            assert.equal((params._meta as Json)['io.modelcontextprotocol/subscriptionId'], subscriptionId);
          }
          const completed = notes.find((note) => (note.params as Json).status === 'completed')!.params as Json;
          assert.equal(textOf(completed.result as Json), 'pushed');

          await subscription.close();
          assert.equal(await subscription.closed, 'local');
        } finally {
          await listener.close();
        }
      });
    });

    describe('2025-11-25 client over WebSocket (v1 SDK WebSocketClientTransport)', () => {
      it('lists and calls tools synchronously, answers the elicitation the connection carries, and never sees a task', async () => {
        // Node 20 has no global WebSocket; the v1 transport uses the browser API, which `ws` provides.
        const globals = globalThis as { WebSocket?: unknown };
        const hadWebSocket = 'WebSocket' in globals;
        globals.WebSocket ??= WebSocket;
        const client = new V1Client({ name: 'legacy-v1-ws', version: '1.32.2' }, { capabilities: { elicitation: { form: {} } } });
        client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada' } }));
        const transport = new V1WebSocketClientTransport(new URL(url));
        const received: Json[] = [];
        const start = transport.start.bind(transport);
        transport.start = async () => {
          const inner = transport.onmessage!;
          transport.onmessage = (message) => {
            received.push(message);
            inner(message);
          };
          return start();
        };
        try {
          await client.connect(transport);
          assert.equal(client.getServerVersion()?.name, 'taskvisor-e2e');
          const capabilities = client.getServerCapabilities() as Json;
          assert.equal(capabilities.tasks, undefined);
          assert.equal((capabilities.extensions as Json | undefined)?.['io.modelcontextprotocol/tasks'], undefined);
          const { tools } = await client.listTools();
          assert.ok(tools.some((tool) => tool.name === 'sleep'));
          // Longer than the 150 ms promotion threshold: a plain result all the same.
          assert.deepEqual(await client.callTool({ name: 'sleep', arguments: { ms: 300 } }), {
            content: [{ type: 'text', text: 'Slept for 300 ms' }],
          });
          // A connection, like stdio: the SDK's legacy shim sends elicitation/create and the client answers it.
          assert.deepEqual(await client.callTool({ name: 'hello_world', arguments: {} }), {
            content: [{ type: 'text', text: 'Hello, Ada!' }],
          });
          assert.ok(received.some((message) => message.method === 'elicitation/create'));
          await assert.rejects(client.callTool({ name: 'always_task', arguments: {} }), (error: unknown) => {
            assert.ok(!JSON.stringify(error).includes('taskId'));
            return true;
          });
          for (const message of received) {
            const result = message.result as Json | undefined;
            assert.notEqual(result?.resultType, 'task', JSON.stringify(message));
            assert.equal(result?.taskId, undefined, JSON.stringify(message));
            assert.ok(!String(message.method ?? '').startsWith('notifications/tasks'), JSON.stringify(message));
          }
        } finally {
          await client.close();
          if (!hadWebSocket) delete globals.WebSocket;
        }
      });
    });
  },
);

describe('WebSocket: authentication and principal isolation (T-10, I-7)', () => {
  let runtime: TaskvisorRuntime;
  let isolatedUrl = '';
  const clients: ConnectedClient[] = [];
  const as = async (user: string | undefined) => {
    const client = await connect({ kind: 'ws', url: isolatedUrl, ...(user ? { headers: { 'x-user': user } } : {}) });
    clients.push(client);
    return taskOps(() => client);
  };

  before(async () => {
    runtime = await startE2eRuntime();
    const listener = await listenWebSocket(runtime, {
      port: 0,
      authenticate: (req) => (req.headers.get('x-user') === 'nobody' ? null : { id: req.headers.get('x-user') ?? 'anon' }),
    });
    isolatedUrl = listener.url;
  });
  after(async () => {
    for (const client of clients) await client.close();
    await runtime.close();
  });

  it('an upgrade the authenticate hook refuses is HTTP 401 with WWW-Authenticate: Bearer', async () => {
    const refused = await refusedUpgrade(isolatedUrl, { 'x-user': 'nobody' });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers['www-authenticate'], 'Bearer');
    assert.equal((JSON.parse(refused.body) as { error: { code: number } }).error.code, -32600);
  });

  it("another connection's principal gets, for A's task, exactly the error of an unknown id; A's task is unaffected", async () => {
    const alice = await as('alice');
    const bob = await as('bob');
    const anonymous = await as(undefined);

    const blocking = await alice.createTask('blocking');
    const hello = await alice.createTask('hello_world');
    await alice.waitForStatus(hello.taskId, 'input_required');
    const answer = { name: { action: 'accept', content: { name: 'Mallory' } } };

    for (const intruder of [bob, anonymous]) {
      const unknown = {
        get: error_(await intruder.get(unknownTaskId()), -32602),
        update: error_(await intruder.update(unknownTaskId(), answer), -32602),
        cancel: error_(await intruder.cancel(unknownTaskId()), -32602),
      };
      for (const taskId of [blocking.taskId, hello.taskId]) {
        assert.deepEqual(error_(await intruder.get(taskId), -32602), unknown.get);
        assert.deepEqual(error_(await intruder.update(taskId, answer), -32602), unknown.update);
        assert.deepEqual(error_(await intruder.cancel(taskId), -32602), unknown.cancel);
      }
    }

    assert.equal((await alice.task(blocking.taskId)).status, 'working');
    assert.equal((await alice.task(hello.taskId)).status, 'input_required');
    result_(await alice.update(hello.taskId, { name: { action: 'accept', content: { name: 'Luca' } } }));
    const { task } = await alice.waitForStatus(hello.taskId, 'completed');
    assert.equal(textOf(task.result), 'Hello, Luca!');
    result_(await alice.cancel(blocking.taskId));
    await alice.waitForStatus(blocking.taskId, 'cancelled');

    // The same principal on another socket sees its own tasks.
    const aliceAgain = await as('alice');
    assert.equal((await aliceAgain.task(hello.taskId)).status, 'completed');
  });

  it("a listen for another principal's task acknowledges none of it", async () => {
    const alice = await as('alice');
    const created = await alice.createTask('blocking');
    const bob = await connect({ kind: 'ws', url: isolatedUrl, headers: { 'x-user': 'bob' } });
    clients.push(bob);
    const subscription = await bob.client.listen({ taskIds: [created.taskId] } as never);
    const ack = bob.received.find((message) => (message as Json).method === 'notifications/subscriptions/acknowledged') as Json | undefined;
    assert.ok(ack, JSON.stringify(bob.received));
    assert.deepEqual(((ack.params as Json).notifications as Json).taskIds ?? [], [], 'T-10: not acknowledged for another principal');
    // Nothing about the task is pushed to bob when it changes. Alice listens too: the change is pushed to every
    // listener at once, so once hers arrived and then a reply to a later request of bob's, bob's would have come before.
    const aliceListening = await connect({ kind: 'ws', url: isolatedUrl, headers: { 'x-user': 'alice' } });
    clients.push(aliceListening);
    const aliceNotes: Json[] = [];
    aliceListening.client.fallbackNotificationHandler = async (notification) => void aliceNotes.push(notification);
    await aliceListening.client.listen({ taskIds: [created.taskId] } as never);
    result_(await alice.cancel(created.taskId));
    await waitFor(() => aliceNotes.some((note) => (note.params as Json).status === 'cancelled'), {
      what: "alice's cancelled notification",
    });
    assert.equal((await bob.raw({ method: 'tools/list', params: { _meta: envelope() } } as never)).kind, 'result');
    assert.deepEqual(
      bob.received.filter((message) => (message as Json).method === 'notifications/tasks'),
      [],
    );
    assert.equal(await subscription.closed, 'graceful', 'nothing to report: the stream ends at once with its result');
  });
});

describe('WebSocket: shutdown and keepalive', () => {
  it('closing the runtime ends open listen streams gracefully, then closes every socket with 1001', async () => {
    const runtime = await startE2eRuntime();
    const listener: WebSocketListener = await listenWebSocket(runtime, { port: 0 });
    const modern = await connect({ kind: 'ws', url: listener.url });
    const raw = await rawSocket(listener.url);
    try {
      const created = await taskOps(() => modern).createTask('blocking');
      const subscription = await modern.client.listen({ taskIds: [created.taskId] } as never);
      assert.equal(listener.connections, 2);
      await runtime.close();
      assert.equal(await subscription.closed, 'graceful', 'the listen got its result before the socket went');
      assert.deepEqual(await raw.closed, { code: 1001, reason: 'server shutting down' });
      const transport = modern.transport as WebSocketClientTransport;
      assert.equal(transport.closeInfo?.code, 1001);
      assert.equal(listener.connections, 0);
      // Nothing listens any more.
      await assert.rejects(new WebSocketClientTransport(listener.url).start());
    } finally {
      await modern.close().catch(() => {});
      await raw.close();
    }
  });

  it('a client that drops its socket releases its listen streams; a frame over maxPayloadBytes closes the socket with 1009', async () => {
    const runtime = await startE2eRuntime();
    const listener = await listenWebSocket(runtime, { port: 0, maxPayloadBytes: 1024 });
    try {
      const modern = await connect({ kind: 'ws', url: listener.url });
      const created = await taskOps(() => modern).createTask('blocking');
      await modern.client.listen({ taskIds: [created.taskId] } as never);
      assert.equal(runtime.subscriptions.size, 1);
      (modern.transport as WebSocketClientTransport).socket!.terminate();
      const deadline = Date.now() + 2_000;
      while (runtime.subscriptions.size > 0 || listener.connections > 0) {
        if (Date.now() > deadline) assert.fail(`still open: ${runtime.subscriptions.size} streams, ${listener.connections} sockets`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      // The task itself lives on: it belongs to the principal, not to the socket.
      const again = await connect({ kind: 'ws', url: listener.url });
      assert.equal((await taskOps(() => again).task(created.taskId)).status, 'working');
      result_(await taskOps(() => again).cancel(created.taskId));
      await again.close();

      const raw = await rawSocket(listener.url);
      raw.socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(2048) } }));
      assert.equal((await raw.closed).code, 1009);
    } finally {
      await runtime.close();
    }
  });

  it('a socket that stops answering pings is terminated; one that answers stays', async () => {
    const runtime = await startE2eRuntime();
    // Long enough for the answering socket's pong to come back in time on a loaded host; one round that
    // misses it ends that socket too.
    const listener = await listenWebSocket(runtime, { port: 0, keepAliveMs: 500 });
    try {
      const dead = await rawSocket(listener.url, { autoPong: false });
      const alive = await rawSocket(listener.url);
      let pings = 0;
      alive.socket.on('ping', () => void pings++);
      const { code } = await dead.closed;
      assert.equal(code, 1006, 'terminated without a close frame');
      // Three more keep-alive rounds after the silent one was ended: the answering one is still open.
      const seen = pings;
      await waitFor(() => pings >= seen + 3, { timeoutMs: 10_000, what: 'three more pings' });
      assert.equal(alive.socket.readyState, WebSocket.OPEN);
      assert.equal(listener.connections, 1);
      await alive.close();
    } finally {
      await runtime.close();
    }
  });
});
