/**
 * The floor of the fan-out cell (benchmark 5): a bare `node:http` SSE server
 * that speaks just enough of the protocol for bench/fanout.ts — `bench_step`
 * makes a task, `subscriptions/listen` opens an SSE stream (acknowledgement,
 * then the task's state), `bench_poke` writes the changed task's frame to
 * every stream, `tasks/cancel` ends it. No MCP stack, no store, no checks:
 * the same bytes over the same number of sockets, written by the simplest
 * server Node has. The fan-out figures are ratios to it, so they say what
 * taskvisor adds over the sockets themselves (on this VM one loopback write
 * costs ~15–20 µs, and the listeners share the machine's two cores).
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';

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
  res: ServerResponse;
}

/** `{...,"_meta":{"…subscriptionId":` — the frame up to its stream's id, serialised once per change. */
function frameHead(method: string, params: Record<string, unknown>): string {
  const json = JSON.stringify({ jsonrpc: '2.0', method, params: { ...params, _meta: {} } });
  return `${json.slice(0, -3)}${JSON.stringify(SUBSCRIPTION_ID)}:`;
}

const sse = (head: string, id: string | number) => `event: message\ndata: ${head}${JSON.stringify(id)}}}}\n\n`;

export async function startSseFloor(): Promise<{ url: string; close(): Promise<void> }> {
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
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        id: string | number;
        method: string;
        params: { name?: string; arguments?: { message?: string } };
      };
      if (message.method === 'subscriptions/listen') {
        const listener: Listener = { id: message.id, res };
        listeners.add(listener);
        res.on('close', () => listeners.delete(listener));
        res.writeHead(200, SSE_HEADERS);
        res.write(sse(frameHead('notifications/subscriptions/acknowledged', { notifications: { taskIds: [task.taskId] } }), message.id));
        res.write(sse(frameHead('notifications/tasks', taskParams()), message.id));
      } else if (message.method === 'tools/call' && message.params.name === 'bench_poke') {
        statusMessage = message.params.arguments?.message;
        task.lastUpdatedAt = new Date().toISOString();
        const head = frameHead('notifications/tasks', taskParams());
        for (const listener of listeners) listener.res.write(sse(head, listener.id));
        reply(res, message.id, { content: [{ type: 'text', text: 'ok' }] });
      } else if (message.method === 'tools/call') {
        reply(res, message.id, { resultType: 'task', ...task });
      } else {
        reply(res, message.id, {});
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
