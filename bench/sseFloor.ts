/**
 * The floors of the fan-out cell (benchmark 5): a bare `node:http` SSE server
 * that speaks just enough of the protocol for bench/fanout.ts — `bench_step`
 * makes a task, `subscriptions/listen` opens an SSE stream (acknowledgement,
 * then the task's state), `bench_poke` writes the changed task's frame to
 * every stream, `tasks/cancel` ends it. No MCP stack, no store, no checks:
 * the same bytes over the same number of sockets, written by the simplest
 * server Node has. The fan-out figures are ratios to it, so they say what
 * taskvisor adds over the sockets themselves (on this VM one loopback write
 * costs ~15–20 µs, and the listeners share the machine's two cores).
 *
 * With `websocket`, the same server is the WebSocket floor instead: the
 * listen request comes as a text frame on a socket upgraded by a bare `ws`
 * server, and `bench_poke` sends the changed task's frame on every socket
 * (`socket.send`, one frame per socket, the text built once per change up to
 * the stream's id). The other requests stay plain HTTP POSTs, as they do
 * against taskvisor in the cell.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { WebSocketServer } from 'ws';

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
/** The headers taskvisor's listen response carries. */
const SSE_HEADERS = {
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'content-type': 'text/event-stream',
  'x-accel-buffering': 'no',
};

interface Listener {
  id: string | number;
  /** Writes one frame (`head` + this stream's id + the closing braces) on the stream. */
  write(head: string): void;
}

/** `{...,"_meta":{"…subscriptionId":` — the frame up to its stream's id, serialised once per change. */
function frameHead(method: string, params: Record<string, unknown>): string {
  const json = JSON.stringify({ jsonrpc: '2.0', method, params: { ...params, _meta: {} } });
  return `${json.slice(0, -3)}${JSON.stringify(SUBSCRIPTION_ID)}:`;
}

const json = (head: string, id: string | number) => `${head}${JSON.stringify(id)}}}}`;
const sse = (head: string, id: string | number) => `event: message\ndata: ${json(head, id)}\n\n`;

interface ListenMessage {
  id: string | number;
  method: string;
  params: { name?: string; arguments?: { message?: string } };
}

/** The SSE floor; with `websocket`, the WebSocket floor (`listenUrl`: where listens go). */
export async function startSseFloor(
  options: { websocket?: boolean } = {},
): Promise<{ url: string; listenUrl: string; close(): Promise<void> }> {
  const listeners = new Set<Listener>();
  const createdAt = new Date().toISOString();
  const task = {
    taskId: randomBytes(16).toString('hex'),
    status: 'working',
    createdAt,
    lastUpdatedAt: createdAt,
    ttlMs: 3_600_000,
    pollIntervalMs: 1000,
  };
  let statusMessage: string | undefined;
  const taskParams = () => {
    const { taskId, status, ...rest } = task;
    return { taskId, status, ...(statusMessage !== undefined ? { statusMessage } : {}), ...rest };
  };
  const reply = (res: ServerResponse, id: unknown, result: Record<string, unknown>) => {
    const body = JSON.stringify({ result, jsonrpc: '2.0', id: id ?? null });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  /** A listen: the acknowledgement, then the task's state, then every change. */
  const listen = (listener: Listener) => {
    listeners.add(listener);
    listener.write(frameHead('notifications/subscriptions/acknowledged', { notifications: { taskIds: [task.taskId] } }));
    listener.write(frameHead('notifications/tasks', taskParams()));
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ListenMessage;
      if (message.method === 'subscriptions/listen') {
        const id = message.id;
        const listener: Listener = { id, write: (head) => res.write(sse(head, id)) };
        res.on('close', () => listeners.delete(listener));
        res.writeHead(200, SSE_HEADERS);
        listen(listener);
      } else if (message.method === 'tools/call' && message.params.name === 'bench_poke') {
        statusMessage = message.params.arguments?.message;
        task.lastUpdatedAt = new Date().toISOString();
        const head = frameHead('notifications/tasks', taskParams());
        for (const listener of listeners) listener.write(head);
        reply(res, message.id, { content: [{ type: 'text', text: 'ok' }] });
      } else if (message.method === 'tools/call') {
        reply(res, message.id, { resultType: 'task', ...task });
      } else {
        reply(res, message.id, {});
      }
    });
  });
  const wss = options.websocket ? new WebSocketServer({ server, path: '/mcp' }) : undefined;
  wss?.on('connection', (socket) => {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as ListenMessage;
      if (message.method !== 'subscriptions/listen') return;
      const id = message.id;
      const listener: Listener = { id, write: (head) => socket.send(json(head, id)) };
      socket.once('close', () => listeners.delete(listener));
      listen(listener);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    listenUrl: `${options.websocket ? 'ws' : 'http'}://127.0.0.1:${port}/mcp`,
    async close() {
      for (const client of wss?.clients ?? []) client.terminate();
      wss?.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
