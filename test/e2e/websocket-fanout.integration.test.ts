/**
 * The listen fan-out over WebSocket, read by real `ws` clients on 127.0.0.1:
 * one change watched by several streams reaches each of them as a text frame
 * carrying that stream's own subscription id (T-31, D-07), after its
 * acknowledgement, with the rest of the frame the same for all. The frames
 * are written as bytes built once per frame and id (ListenFrame.bytesFor,
 * WebSocketServerTransport.sendBytes); this checks what arrives, not how.
 *
 * Every wait is bounded and every socket is closed in `finally`: a frame that
 * never comes fails the test instead of hanging it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { listenWebSocket } from '../../src/transports/index.js';
import type { TaskvisorRuntime } from '../../src/index.js';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { result_, taskOps, type Json } from '../support/taskOps.js';
import { startE2eRuntime } from './fixtures/runtime.js';

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const WAIT_MS = 5_000;

/** Rejects after `ms` with `what` (timer unref'd and cleared). */
async function within<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

interface Received {
  message: Json;
  binary: boolean;
}

/** A raw `ws` client recording every frame (and whether it was binary). */
async function openClient(url: string) {
  const socket = new WebSocket(url);
  const received: Received[] = [];
  let wake: (() => void) | undefined;
  socket.on('message', (data, isBinary) => {
    received.push({ message: JSON.parse(String(data)) as Json, binary: isBinary });
    wake?.();
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await within(
    new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    }),
    'websocket open',
  );
  return {
    socket,
    received,
    /** Resolves once `test` holds for what arrived so far (bounded). */
    async until(test: (received: Received[]) => boolean, what: string): Promise<void> {
      const deadline = Date.now() + WAIT_MS;
      while (!test(received)) {
        const left = deadline - Date.now();
        if (left <= 0) assert.fail(`timed out waiting for ${what}: ${JSON.stringify(received)}`);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, Math.min(left, 50)).unref();
        });
      }
    },
    async close(): Promise<void> {
      if (socket.readyState === WebSocket.CLOSED) return;
      socket.close();
      await within(closed, 'websocket close', 2_000).catch(() => socket.terminate());
    },
  };
}

type Client = Awaited<ReturnType<typeof openClient>>;

const isMethod = (method: string) => (entry: Received) => entry.message.method === method;
const subscriptionIdOf = (entry: Received) => ((entry.message.params as Json)._meta as Json)[SUBSCRIPTION_ID];

describe('WebSocket listen fan-out: one change, several streams (T-31, D-07)', () => {
  let runtime: TaskvisorRuntime;
  let url: string;
  let creator: ConnectedClient;

  before(async () => {
    runtime = await startE2eRuntime();
    url = (await listenWebSocket(runtime, { port: 0, keepAliveMs: 0 })).url;
    creator = await connect({ kind: 'ws', url });
  });

  after(async () => {
    await creator.close().catch(() => {});
    await runtime.close();
  });

  it('every stream gets its acknowledgement, then text frames stamped with its own subscription id, the same otherwise', async () => {
    const created = await taskOps(() => creator).createTask('blocking');
    const clients: Client[] = [];
    try {
      // Three connections, one of them with two streams; ids of both JSON types, and one id used on two connections.
      for (let i = 0; i < 3; i++) clients.push(await openClient(url));
      const streams: Array<{ client: Client; id: string | number }> = [
        { client: clients[0]!, id: 'listen-a' },
        { client: clients[0]!, id: 7 },
        { client: clients[1]!, id: 'listen-a' },
        { client: clients[2]!, id: 'listen-"quoted"' },
      ];
      for (const { client, id } of streams) {
        client.socket.send(
          JSON.stringify({
            jsonrpc: '2.0',
            id,
            method: 'subscriptions/listen',
            params: { notifications: { taskIds: [created.taskId] }, _meta: envelope() },
          }),
        );
      }
      const framesOf = (client: Client, id: string | number) => client.received.filter((entry) => subscriptionIdOf(entry) === id);
      // Acknowledged, and the task's current state after it.
      for (const { client, id } of streams) {
        await client.until(
          () => framesOf(client, id).filter(isMethod('notifications/tasks')).length >= 1,
          `the current state on stream ${JSON.stringify(id)}`,
        );
      }

      // One change, watched by all four streams.
      result_(await within(taskOps(() => creator).cancel(created.taskId), 'tasks/cancel'));
      const isCancelled = (entry: Received) =>
        entry.message.method === 'notifications/tasks' && (entry.message.params as Json).status === 'cancelled';
      for (const { client, id } of streams) {
        await client.until(() => framesOf(client, id).some(isCancelled), `the cancelled frame on stream ${JSON.stringify(id)}`);
      }

      const changes: Json[] = [];
      for (const { client, id } of streams) {
        const frames = framesOf(client, id);
        assert.ok(
          client.received.every((entry) => !entry.binary),
          'every frame is a text frame',
        );
        // T-31: the acknowledgement first on its stream, then only notifications/tasks for the task.
        assert.equal(frames[0]!.message.method, 'notifications/subscriptions/acknowledged', JSON.stringify(frames));
        assert.deepEqual(((frames[0]!.message.params as Json).notifications as Json).taskIds, [created.taskId]);
        for (const frame of frames.slice(1)) {
          assert.equal(frame.message.method, 'notifications/tasks', JSON.stringify(frame));
          assert.equal(frame.message.jsonrpc, '2.0');
          assert.equal('id' in frame.message, false, 'a notification has no id');
          assert.equal((frame.message.params as Json).taskId, created.taskId);
        }
        const change = frames.find(isCancelled)!.message;
        // Apart from the stream's own id, every stream got the same frame.
        const params = change.params as Json;
        const { [SUBSCRIPTION_ID]: own, ...meta } = params._meta as Json;
        assert.equal(own, id);
        changes.push({ ...change, params: { ...params, _meta: meta } });
      }
      for (const change of changes.slice(1)) assert.deepEqual(change, changes[0]);
      // The stream with a numeric id got the number, not its text.
      assert.equal(typeof subscriptionIdOf(framesOf(clients[0]!, 7)[0]!), 'number');
    } finally {
      await Promise.all(clients.map((client) => client.close()));
    }
  });
});
