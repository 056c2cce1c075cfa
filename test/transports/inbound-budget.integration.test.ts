/**
 * The inbound budget over real HTTP on 127.0.0.1 and raw sockets: a client
 * that announces bodies, sends part of each and goes silent. Past its
 * principal's budget a request is refused before its body is read (429,
 * `Retry-After`, connection closed), past the server's budget with 503; a
 * body that stops arriving is dropped with its socket and its bytes are given
 * back, so the same principal is served again.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createRuntime, type TaskvisorRuntime } from '../../src/index.js';
import { InvalidTokenError } from '../../src/auth/index.js';
import { listenHttp, type HttpListener } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { defineTool } from '../../src/tools/index.js';
import { envelope } from '../support/extTasksClient.js';

const KiB = 1024;
const PER_PRINCIPAL = 256 * KiB;
const SERVER = 384 * KiB;
/** Long enough that the refusals below come from the budgets, not the deadline; the deadline test waits for it. */
const BODY_TIMEOUT_MS = 4_000;
const ANNOUNCED = 100 * KiB;

const echo = defineTool('echo', { description: 'Echoes.' }, (args: { text?: string }) => ({
  content: [{ type: 'text', text: String(args.text ?? '') }],
}));

/** A raw socket that sent a POST head announcing `announced` bytes, and `sent` of them. */
interface HalfSent {
  socket: Socket;
  /** Everything the server sent back (latin1). */
  received(): string;
  /** Resolves when the server closed the connection. */
  closed: Promise<void>;
}

function halfSend(port: number, token: string, announced: number, sent: number): Promise<HalfSent> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', () => {});
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.once('connect', () => {
      socket.write(
        `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n` +
          `authorization: Bearer ${token}\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: echo\r\n` +
          `content-length: ${announced}\r\n\r\n{"x":"`,
      );
      socket.write(Buffer.alloc(sent, 0x20), () => resolve({ socket, received: () => text, closed }));
    });
    socket.once('error', reject);
  });
}

async function echoCall(url: string, token: string): Promise<Response> {
  const params = { name: 'echo', arguments: { text: 'hi' }, _meta: envelope() };
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'echo',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }),
  });
}

describe('inbound budget: request bodies the server buffers', () => {
  let runtime: TaskvisorRuntime;
  let http: HttpListener;
  let port: number;
  const open: Socket[] = [];

  before(async () => {
    runtime = createRuntime({
      store: new MemoryTaskStore(),
      logger: { info() {}, warn() {}, error() {} } as never,
      limits: { maxInboundBodyBytesPerPrincipal: PER_PRINCIPAL, maxInboundBodyBytes: SERVER, requestBodyTimeoutMs: BODY_TIMEOUT_MS },
    });
    runtime.use(echo);
    await runtime.start();
    http = await listenHttp(runtime, {
      port: 0,
      auth: {
        verifier: {
          verify: (token) =>
            token.endsWith('-token')
              ? Promise.resolve({ principal: { id: token.slice(0, -6) } })
              : Promise.reject(new InvalidTokenError('unknown token')),
        },
      },
    });
    port = Number(new URL(http.url).port);
  });
  after(async () => {
    for (const socket of open) socket.destroy();
    await runtime?.close();
  });

  it("refuses a principal's request past its budget with 429 before reading the body, and closes the connection", async () => {
    // Two bodies of 100 KiB fit in 256 KiB; the third does not.
    const held = [await halfSend(port, 'mallory-token', ANNOUNCED, 50 * KiB), await halfSend(port, 'mallory-token', ANNOUNCED, 50 * KiB)];
    open.push(...held.map((h) => h.socket));
    const refused = await halfSend(port, 'mallory-token', ANNOUNCED, 50 * KiB);
    open.push(refused.socket);
    await refused.closed;
    assert.match(refused.received(), /^HTTP\/1\.1 429 /);
    assert.match(refused.received(), /\r\nretry-after: \d+\r\n/i);
    assert.match(refused.received(), /"limit":"maxInboundBodyBytesPerPrincipal"/);
    // Another principal is still served meanwhile.
    const other = await echoCall(http.url, 'alice-token');
    assert.equal(other.status, 200);
    // Past the server's budget (384 KiB: mallory holds 200, trudy 100 more): 503.
    const trudy = await halfSend(port, 'trudy-token', ANNOUNCED, 10 * KiB);
    open.push(trudy.socket);
    const overServer = await halfSend(port, 'trudy-token', ANNOUNCED, 10 * KiB);
    open.push(overServer.socket);
    await overServer.closed;
    assert.match(overServer.received(), /^HTTP\/1\.1 503 /);
    assert.match(overServer.received(), /"limit":"maxInboundBodyBytes"/);
    // The held bodies stopped arriving: the deadline closes their sockets and gives their bytes back.
    await Promise.all([...held, trudy].map((h) => h.closed));
    for (const h of [...held, trudy]) assert.doesNotMatch(h.received(), /^HTTP\/1\.1 200 /);
    const again = await echoCall(http.url, 'mallory-token');
    assert.equal(again.status, 200);
    assert.match(await again.text(), /"text":"hi"/);
  });

  it('pays for unauthenticated requests from one shared budget', async () => {
    const held = [await halfSend(port, 'nobody', ANNOUNCED, 1 * KiB), await halfSend(port, 'nobody2', ANNOUNCED, 1 * KiB)];
    open.push(...held.map((h) => h.socket));
    const refused = await halfSend(port, 'nobody3', ANNOUNCED, 1 * KiB);
    open.push(refused.socket);
    await refused.closed;
    assert.match(refused.received(), /^HTTP\/1\.1 429 /);
    await Promise.all(held.map((h) => h.closed));
  });
});
