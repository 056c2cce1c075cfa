/**
 * Ordinary HTTP replies count against the outbound budgets, through a real
 * `taskvisor serve` process and raw sockets: a client that pipelines
 * requests with big answers (the fast lane's `tasks/get`, the SDK path's
 * `tools/call echo`) and never reads them is no longer read past the
 * pipelining bound and its budget, is closed (counted in
 * `taskvisor_backpressure_closes_total{stream="http"}`), and other clients
 * are served meanwhile. Many connections of one principal, each under its
 * own budget, are bounded by the principal's, HTTP and WebSocket alike.
 * Small budgets keep it to a few MB; every wait is for an event (a log
 * line, a close), bounded only so that a failure does not hang.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { envelope } from '../support/extTasksClient.js';
import { standardHeaders } from '../support/httpRaw.js';
import { openRawWebSocket, wsFrame } from '../support/rawSocket.js';
import { CLI, DEMO_TOOLS, spawnNode, tempDir, waitFor, type Child } from '../support/processes.js';

const STARTUP_TIMEOUT_MS = 45_000;
/** Generous bound on how long a close may take: the test waits for the event, this only stops a hang. */
const CLOSE_TIMEOUT_MS = 30_000;
const KiB = 1024;
const BUDGET = 256 * KiB;
const MAX_PIPELINED = 4;
const ANSWER_BYTES = 512 * KiB;

interface Served {
  child: Child;
  url: URL;
  /** The same runtime over WebSocket. */
  wsUrl: string;
  /** A finished task whose result is big: each tasks/get answers it whole. */
  taskId: string;
  dir: Awaited<ReturnType<typeof tempDir>>;
}

/** A `taskvisor serve` process with the demo tools and `limits`, and its big task. */
async function serve(limits: Record<string, number>): Promise<Served> {
  const dir = await tempDir('taskvisor-outbound-');
  const config = join(dir.path, 'taskvisor.yaml');
  await writeFile(
    config,
    [
      'store: { kind: memory }',
      `tools: [${JSON.stringify(DEMO_TOOLS)}]`,
      'tasks: { promoteAfterMs: 0 }',
      `limits: ${JSON.stringify(limits)}`,
      '',
    ].join('\n'),
  );
  const child = spawnNode([CLI, 'serve', '--config', config, '--http', '127.0.0.1:0', '--ws', '127.0.0.1:0', '--metrics'], {
    cwd: dir.path,
  });
  const url = new URL(
    (await child.waitForOutput(/serving MCP over Streamable HTTP at (\S+)\n/, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS }))[1]!,
  );
  const wsUrl = (
    await child.waitForOutput(/serving MCP over WebSocket at (\S+)\n/, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS })
  )[1]!;
  const created = await call(url, 'tools/call', { name: 'sleep', arguments: { ms: 0, message: 'r'.repeat(ANSWER_BYTES) } });
  const result = created.result as { taskId?: string; task?: { taskId: string } };
  const taskId = (result.task?.taskId ?? result.taskId)!;
  await waitFor(
    async () => ((await call(url, 'tasks/get', { taskId })).result as { status?: string } | undefined)?.status === 'completed',
    {
      timeoutMs: 20_000,
      what: 'the big task to complete',
    },
  );
  return { child, url, wsUrl, taskId, dir };
}

/** Connection budgets well under the principal's. */
let byConnection: Served;
/** A principal budget well under one connection's. */
let byPrincipal: Served;

before(async () => {
  [byConnection, byPrincipal] = await Promise.all([
    serve({
      maxOutboundBufferBytes: BUDGET,
      maxOutboundBytesPerPrincipal: 64 * BUDGET,
      maxPipelinedRequests: MAX_PIPELINED,
      outboundGraceMs: 200,
    }),
    serve({
      maxOutboundBufferBytes: 64 * BUDGET,
      maxOutboundBytesPerPrincipal: BUDGET,
      maxPipelinedRequests: MAX_PIPELINED,
      outboundGraceMs: 200,
    }),
  ]);
});

after(async () => {
  for (const served of [byConnection, byPrincipal]) {
    await served?.child.kill('SIGTERM');
    await served?.dir.remove();
  }
});

/** One request over fetch (a client that reads its answers). */
async function call(url: URL, method: string, params: Record<string, unknown>): Promise<{ result?: unknown; error?: unknown }> {
  const full = { ...params, _meta: envelope() };
  const response = await fetch(url, {
    method: 'POST',
    headers: standardHeaders(method, full),
    body: JSON.stringify({ jsonrpc: '2.0', id: `ok-${method}`, method, params: full }),
  });
  assert.equal(response.status, 200, method);
  return (await response.json()) as { result?: unknown; error?: unknown };
}

/** A POST as raw bytes, for pipelining on one socket. */
function rawPost(url: URL, id: string, method: string, params: Record<string, unknown>): Buffer {
  const full = { ...params, _meta: envelope() };
  const body = JSON.stringify({ jsonrpc: '2.0', id, method, params: full });
  const headers = { ...standardHeaders(method, full), 'content-length': String(Buffer.byteLength(body)) };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return Buffer.from(`POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\n${lines.join('')}\r\n${body}`);
}

/** A socket that sends `requests` at once and then never reads. */
async function attacker(url: URL, requests: Buffer[]): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port: Number(url.port) });
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.pause();
  socket.on('error', () => {});
  socket.write(Buffer.concat(requests));
  return socket;
}

/**
 * Reads what the server had written before it closed the socket, and
 * resolves with the answers' ids once the close arrives (the event, not a timer).
 */
function drainToClose(socket: Socket, prefix: string): Promise<Set<string>> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.once('close', () => resolve(new Set(text.match(new RegExp(`"${prefix}-\\d+"`, 'g')) ?? [])));
    socket.resume();
  });
}

async function httpCloses(served: Served): Promise<number> {
  const text = await (await fetch(new URL('/metrics', served.url))).text();
  const line = /^taskvisor_backpressure_closes_total\{stream="http"\} (\d+)/m.exec(text);
  return line ? Number(line[1]) : 0;
}

/** Waits for the log line of the server closing a connection that does not read. */
const closeLogged = (served: Served, from: number, reason: RegExp) =>
  waitFor(() => reason.test(served.child.stderr.slice(from)), { timeoutMs: CLOSE_TIMEOUT_MS, what: `a log line matching ${reason}` });

const bigTaskServed = async (served: Served) =>
  assert.equal(((await call(served.url, 'tasks/get', { taskId: served.taskId })).result as { status?: string }).status, 'completed');

describe('HTTP replies count against the outbound budget', () => {
  it('stops reading and closes a client that pipelines big tasks/get answers and never reads them; others are served', async () => {
    const served = byConnection;
    const closesBefore = await httpCloses(served);
    const logsFrom = served.child.stderr.length;
    const sent = 40;
    // Small requests: all 40 reach the server in one read, each asking for half a MB (the fast lane answers them).
    const requests = Array.from({ length: sent }, (_, i) => rawPost(served.url, `get-${i}`, 'tasks/get', { taskId: served.taskId }));
    const socket = await attacker(served.url, requests);
    try {
      await closeLogged(served, logsFrom, /http: closing a connection of anonymous: outbound buffer/);
      // A bystander is served while the attacker is held and after it is gone.
      await bigTaskServed(served);
      const answered = await drainToClose(socket, 'get');
      // Not read past the pipelining bound and the budget: most requests were never answered.
      assert.ok(answered.size < sent, `all ${sent} pipelined requests were answered`);
      assert.ok((await httpCloses(served)) > closesBefore, 'the close is not counted in taskvisor_backpressure_closes_total');
    } finally {
      socket.destroy();
    }
  });

  it('closes a client that pipelines big tools/call echo answers and never reads them; others are served', async () => {
    const served = byConnection;
    const closesBefore = await httpCloses(served);
    const logsFrom = served.child.stderr.length;
    const sent = 12;
    const text = 'e'.repeat(ANSWER_BYTES);
    // Big requests answered by the SDK path (echo is a `never` tool).
    const requests = Array.from({ length: sent }, (_, i) =>
      rawPost(served.url, `echo-${i}`, 'tools/call', { name: 'echo', arguments: { text } }),
    );
    const socket = await attacker(served.url, requests);
    try {
      await closeLogged(served, logsFrom, /http: closing a connection of anonymous: outbound buffer/);
      const echoed = await call(served.url, 'tools/call', { name: 'echo', arguments: { text: 'still served' } });
      assert.match(JSON.stringify(echoed.result), /still served/);
      const answered = await drainToClose(socket, 'echo');
      assert.ok(answered.size < sent, `all ${sent} pipelined echoes were answered`);
      assert.ok((await httpCloses(served)) > closesBefore, 'the close is not counted in taskvisor_backpressure_closes_total');
    } finally {
      socket.destroy();
    }
  });

  it('bounds what one principal may leave unread over all its connections; a client that reads is still served', async () => {
    const served = byPrincipal;
    const closesBefore = await httpCloses(served);
    const logsFrom = served.child.stderr.length;
    // 6 MB asked on each connection: some of it sits in the kernel's buffers, the rest stays far under the
    // connection's own budget (16 MiB); together they are far over the principal's.
    const sockets = await Promise.all(
      Array.from({ length: 8 }, (_, s) =>
        attacker(
          served.url,
          Array.from({ length: 12 }, (_, i) => rawPost(served.url, `p${s}-${i}`, 'tasks/get', { taskId: served.taskId })),
        ),
      ),
    );
    try {
      await closeLogged(served, logsFrom, /http: closing a connection of anonymous: outbound bytes of the principal/);
      // The same (anonymous) principal, on a connection that reads: served.
      await bigTaskServed(served);
      assert.ok((await httpCloses(served)) > closesBefore, 'the close is not counted in taskvisor_backpressure_closes_total');
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it('counts WebSocket connections towards the same principal total', async () => {
    const served = byPrincipal;
    const logsFrom = served.child.stderr.length;
    const port = Number(new URL(served.wsUrl).port);
    // As over HTTP: each socket far under its own budget, together far over the principal's.
    const sockets = await Promise.all(
      Array.from({ length: 8 }, async (_, s) => {
        const socket = await openRawWebSocket(port);
        socket.pause(); // never reads
        socket.on('error', () => {});
        for (let i = 0; i < 12; i++) {
          const message = { jsonrpc: '2.0', id: `w${s}-${i}`, method: 'tasks/get', params: { taskId: served.taskId, _meta: envelope() } };
          socket.write(wsFrame(0x1, JSON.stringify(message)));
        }
        return socket;
      }),
    );
    try {
      await closeLogged(served, logsFrom, /websocket: closing a connection of anonymous \(1008\): outbound bytes of the principal/);
      await bigTaskServed(served);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });
});
