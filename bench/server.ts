/**
 * A benchmark server in its own process, so the load generator and the
 * server never share an event loop.
 *
 *   node --import tsx bench/server.ts '{"mode":"taskvisor","store":{"kind":"lowdb","dir":"/tmp/x"}}'
 *   node --import tsx bench/server.ts '{"mode":"bare"}'
 *   node --import tsx bench/server.ts '{"mode":"raw"}'
 *
 * `bare`: the protocol-stack ceiling — the v2 SDK alone (`createMcpHandler`
 * + `toNodeHandler`), a fresh `McpServer` per request with one `echo` tool
 * whose zod schema is built once at module scope.
 * `raw`: the floor — a `node:http` JSON-RPC echo (parse the body, write the
 * reply), no MCP at all.
 * `sse`: the fan-out floor — a bare `node:http` SSE server writing the same
 * frames to the same listeners (bench/sseFloor.ts); with `websocket`, the
 * WebSocket fan-out floor (listens over a bare `ws` server).
 * `taskvisor`: a runtime with the bench tools (`bench/tools.ts`) behind
 * `listenHttp`; with `websocket`, also behind `listenWebSocket` (the listens
 * of the WebSocket fan-out cell; the other requests still go over HTTP).
 *
 * Prints `READY {"url","listenUrl",…}` on stdout once listening. Reads JSON commands on
 * stdin, one per line (`{"id":1,"cmd":"stats"|"flush"|"close"}`), and
 * answers `RESULT <id> <json>`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { createRuntime, type ResumePolicy, type TaskStoreConfig, type TaskvisorRuntime } from '../src/index.js';
import { listenHttp, listenWebSocket } from '../src/transports/index.js';
import { nodeRequestHandler } from '../src/transports/nodeAdapter.js';
import { startSseFloor } from './sseFloor.js';
import { registerBenchTools } from './tools.js';

export interface ServerConfig {
  mode: 'bare' | 'raw' | 'sse' | 'taskvisor';
  /** taskvisor only: the HTTP fast lane for tasks/* (default on). */
  fastLane?: boolean;
  /** `sse` and taskvisor: listens over WebSocket (READY's `listenUrl`), for the WebSocket fan-out cell. */
  websocket?: boolean;
  /** taskvisor only: the store config (`memory`, `lowdb`, `sqlite`…) passed to `createRuntime`. */
  store?: { kind: string; [key: string]: unknown };
  resume?: ResumePolicy;
  /** Default task ttl; null = unlimited. Default 1 hour. */
  ttlMs?: number | null;
  /** taskvisor only: limits over the bench's own defaults (e.g. listen streams for the fan-out cell). */
  limits?: Record<string, number>;
  /** taskvisor only: the runtime's `passivateIdleAfterMs` (the passivation cell; default the runtime's). */
  passivateIdleAfterMs?: number | false;
}

const EchoArgs = z.object({ text: z.string() });

const config = JSON.parse(process.argv[2] ?? '{"mode":"bare"}') as ServerConfig;

const quietLogger = {
  info: () => {},
  error: (message: string, error?: unknown) =>
    process.stderr.write(`bench-server: error: ${message}${error instanceof Error ? `: ${error.message}` : ''}\n`),
};

let runtime: TaskvisorRuntime | undefined;
let closeServer: () => Promise<void>;
let url: string;
/** Where `subscriptions/listen` goes: `url`, or the WebSocket endpoint. */
let listenUrl: string | undefined;
const started = performance.now();
let startReport: unknown;

if (config.mode === 'bare') {
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: 'bare-sdk', version: '1.0.0' });
      server.registerTool('echo', { inputSchema: EchoArgs }, async ({ text }) => ({ content: [{ type: 'text' as const, text }] }));
      return server;
    },
    { legacy: 'stateless', onerror: (error) => quietLogger.error('http', error) },
  );
  const node = nodeRequestHandler(handler);
  const server = createServer((req, res) => void node(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  closeServer = async () => {
    await handler.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
} else if (config.mode === 'raw') {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let message: { id?: unknown; params?: { arguments?: { text?: unknown } } } = {};
      try {
        message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof message;
      } catch {
        // answered with id null, like any JSON-RPC server
      }
      const body = JSON.stringify({
        result: { content: [{ type: 'text', text: String(message.params?.arguments?.text ?? '') }] },
        jsonrpc: '2.0',
        id: message.id ?? null,
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  closeServer = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
} else if (config.mode === 'sse') {
  const floor = await startSseFloor({ websocket: config.websocket === true });
  url = floor.url;
  listenUrl = floor.listenUrl;
  closeServer = () => floor.close();
} else {
  runtime = createRuntime({
    name: 'taskvisor-bench',
    store: (config.store ?? { kind: 'memory' }) as TaskStoreConfig,
    ...(config.ttlMs !== undefined ? { ttlMs: config.ttlMs } : {}),
    ...(config.passivateIdleAfterMs !== undefined ? { passivateIdleAfterMs: config.passivateIdleAfterMs } : {}),
    reapIntervalMs: 0,
    // The bench measures capacity with one principal; the per-principal limit (default 1000) would cut it short.
    limits: { maxLiveTasksPerPrincipal: Number.MAX_SAFE_INTEGER, ...config.limits },
    logger: quietLogger,
  });
  registerBenchTools(runtime, config.resume ? { resume: config.resume } : {});
  startReport = await runtime.start();
  const listener = await listenHttp(runtime, { port: 0, ...(config.fastLane === false ? { fastLane: false } : {}) });
  url = listener.url;
  // No pings: the bench's raw-socket listeners do not answer them, and one ping per 30 s is not what is measured.
  if (config.websocket) listenUrl = (await listenWebSocket(runtime, { port: 0, keepAliveMs: 0 })).url;
  closeServer = () => runtime!.close();
}

process.stdout.write(
  `READY ${JSON.stringify({ url, listenUrl: listenUrl ?? url, pid: process.pid, startMs: performance.now() - started, report: startReport })}\n`,
);

const commands = createInterface({ input: process.stdin });
commands.on('line', (line) => {
  void (async () => {
    const { id, cmd } = JSON.parse(line) as { id: number; cmd: string };
    let result: unknown;
    try {
      switch (cmd) {
        case 'stats': {
          const memory = process.memoryUsage();
          const cpu = process.cpuUsage();
          result = {
            liveTasks: runtime?.liveTasks ?? 0,
            passivatedTasks: runtime?.passivatedTasks ?? 0,
            listenStreams: runtime?.subscriptions.size ?? 0,
            heapUsed: memory.heapUsed,
            rss: memory.rss,
            cpuMicros: cpu.user + cpu.system,
          };
          break;
        }
        case 'flush':
          await runtime?.flushed();
          result = { ok: true };
          break;
        case 'close':
          await closeServer();
          result = { ok: true };
          break;
        default:
          result = { error: `unknown command ${cmd}` };
      }
    } catch (error) {
      result = { error: (error as Error).message };
    }
    process.stdout.write(`RESULT ${id} ${JSON.stringify(result)}\n`);
    if (cmd === 'close') process.exit(0);
  })();
});
commands.on('close', () => void closeServer().finally(() => process.exit(0)));
