/**
 * What a WebSocket connection may have the server run, over real sockets on
 * 127.0.0.1: at most `maxInflightRequestsPerConnection` requests at once (the
 * rest wait unread until one is answered), and once a connection is over its
 * outbound budget the requests it already sent are not run — answered with a
 * limit error, or dropped when it is closed. A frame still arriving is paid
 * for from the inbound budget, and dropped when it stops arriving.
 */
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { createRuntime, type TaskvisorRuntime } from '../../src/index.js';
import { listenWebSocket, type WebSocketListener } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { defineTool } from '../../src/tools/index.js';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { WebSocketClientTransport as V1WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { WebSocket } from 'ws';
import { subscribe } from '../../src/core/diagnostics.js';
import { envelope } from '../support/extTasksClient.js';
import { RawWs } from '../support/rawWire.js';
import { openRawWebSocket, wsFrame } from '../support/rawSocket.js';

const MAX_INFLIGHT = 4;
const MiB = 1024 * 1024;
/** Larger than what the kernel buffers of a loopback socket take, so most of it waits in the server: over budget at once. */
const BIG_RESULT = 16 * MiB;
const SENT = 40;

/** `hold`: runs until the test releases it. */
const started = new EventEmitter();
let holdsStarted = 0;
const releases: (() => void)[] = [];
const hold = defineTool('hold', { description: 'Waits for the test.' }, async () => {
  holdsStarted += 1;
  await new Promise<void>((resolve) => {
    releases.push(resolve);
    started.emit('started');
  });
  return { content: [{ type: 'text', text: 'released' }] };
});

/** `big`: answers 16 MiB. */
const big = defineTool('big', { description: 'A large answer.' }, () => ({ content: [{ type: 'text', text: 'x'.repeat(BIG_RESULT) }] }));

/** `count`: a small answer; counts its runs. */
let countRuns = 0;
const count = defineTool('count', { description: 'Counts.' }, () => {
  countRuns += 1;
  return { content: [{ type: 'text', text: String(countRuns) }] };
});

/** A synchronous call (no tasks extension declared). */
const syncCall = (id: string, name: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {}, _meta: envelope({}) },
});

describe('WebSocket requests in flight and after the outbound budget', () => {
  let runtime: TaskvisorRuntime;
  let ws: WebSocketListener;

  before(async () => {
    runtime = createRuntime({
      store: new MemoryTaskStore(),
      logger: { info() {}, warn() {}, error() {} } as never,
      limits: { maxInflightRequestsPerConnection: MAX_INFLIGHT, maxOutboundBufferBytes: MiB, outboundGraceMs: 500 },
    });
    runtime.use(hold);
    runtime.use(big);
    runtime.use(count);
    await runtime.start();
    ws = await listenWebSocket(runtime, { port: 0 });
  });
  after(async () => {
    for (const release of releases) release();
    await runtime?.close();
  });

  it(`runs at most ${MAX_INFLIGHT} requests of one connection at once; the rest wait and are then served`, async () => {
    const client = await RawWs.open(ws.url);
    try {
      for (let index = 0; index < 8; index += 1) client.send(syncCall(`h${index}`, 'hold'));
      while (holdsStarted < MAX_INFLIGHT) await once(started, 'started');
      releases[0]!();
      await client.waitFor((message) => message.id === 'h0' && 'result' in message);
      // One answered, so at most one more started: never all eight at once.
      assert.ok(holdsStarted <= MAX_INFLIGHT + 1, `${holdsStarted} hold calls started with ${MAX_INFLIGHT} allowed in flight`);
      // The waiting ones are served as places free up.
      for (let index = 1; index < 8; index += 1) {
        while (releases.length <= index) await once(started, 'started');
        releases[index]!();
      }
      for (let index = 0; index < 8; index += 1) await client.waitFor((message) => message.id === `h${index}` && 'result' in message);
      assert.equal(holdsStarted, 8);
    } finally {
      client.close();
    }
  });

  it('does not run the requests a client sent before it went over its outbound budget', async () => {
    const port = Number(new URL(ws.url).port);
    const socket = await openRawWebSocket(port);
    socket.on('error', () => {});
    // A client that does not read never sees its socket close: the server's own signal says it closed it.
    const closed = new Promise<void>((resolve) => {
      const unsubscribe = subscribe('taskvisor:backpressure.close', () => (unsubscribe(), resolve()));
    });
    // Never read. One request with a 16 MiB answer, then 40 small ones, in one write: the server has them all
    // before the first answer puts the connection over its budget.
    socket.pause();
    const frames = [syncCall('big', 'big'), ...Array.from({ length: SENT }, (_, index) => syncCall(`c${index}`, 'count'))];
    socket.write(Buffer.concat(frames.map((frame) => wsFrame(0x1, JSON.stringify(frame)))));
    await closed;
    socket.destroy();
    // Only those already in flight beside `big` ran; each of the others was answered with a limit error or dropped.
    assert.ok(countRuns < MAX_INFLIGHT, `${countRuns} of ${SENT} requests ran on a connection over its outbound budget`);
  });
});

describe('WebSocket frames still arriving', () => {
  const KiB = 1024;
  let runtime: TaskvisorRuntime;
  let ws: WebSocketListener;
  let port: number;

  before(async () => {
    runtime = createRuntime({
      store: new MemoryTaskStore(),
      logger: { info() {}, warn() {}, error() {} } as never,
      limits: { maxInboundBodyBytesPerPrincipal: 256 * KiB, requestBodyTimeoutMs: 2_000 },
    });
    await runtime.start();
    ws = await listenWebSocket(runtime, { port: 0 });
    port = Number(new URL(ws.url).port);
  });
  after(async () => {
    await runtime?.close();
  });

  /** A raw WebSocket that announced a 1 MiB frame and sent `sent` bytes of it; `closed` resolves when the server drops it. */
  async function halfSentFrame(sent: number) {
    const socket = await openRawWebSocket(port);
    socket.on('error', () => {});
    socket.on('data', () => {});
    // A drop may reach the client as a reset: only the close matters.
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await new Promise<void>((resolve) => socket.write(wsFrame(0x1, Buffer.alloc(sent, 0x20), { length: 1024 * KiB }), () => resolve()));
    return { socket, closed };
  }

  it("drops a connection whose partial frame goes past its principal's budget, and one whose frame stops arriving", async () => {
    const held = await halfSentFrame(200 * KiB);
    // 200 KiB held of 256: the next 100 KiB of the same principal do not fit.
    const over = await halfSentFrame(100 * KiB);
    await over.closed;
    assert.equal(held.socket.destroyed, false, 'the connection within the budget is still open');
    // The held frame never completes: dropped at the deadline, its bytes given back.
    await held.closed;
    const client = await RawWs.open(ws.url);
    try {
      const answer = await client.call({ jsonrpc: '2.0', id: 'after', method: 'tools/list', params: { _meta: envelope() } });
      assert.ok('result' in answer, JSON.stringify(answer));
    } finally {
      client.close();
    }
  });
});

describe('WebSocket requests waiting while the server waits for the client', () => {
  let runtime: TaskvisorRuntime;
  let ws: WebSocketListener;

  before(async () => {
    runtime = createRuntime({
      store: new MemoryTaskStore(),
      logger: { info() {}, warn() {}, error() {} } as never,
      limits: { maxInflightRequestsPerConnection: 1 },
    });
    runtime.use(
      defineTool('ask', { description: 'Asks for a name.' }, async (_args, ctx) => {
        const answer = await ctx.elicit('name', {
          message: 'Name?',
          requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        });
        return `Hello, ${String(answer.content?.name)}!`;
      }),
    );
    await runtime.start();
    ws = await listenWebSocket(runtime, { port: 0 });
  });
  after(async () => {
    await runtime?.close();
  });

  it("reads the client's answer to an elicitation while its next request waits for the running one", async () => {
    // Node 20 has no global WebSocket; the v1 transport uses the browser API, which `ws` provides.
    const globals = globalThis as { WebSocket?: unknown };
    const hadWebSocket = 'WebSocket' in globals;
    globals.WebSocket ??= WebSocket;
    const client = new V1Client({ name: 'legacy-ws', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    let listed: Promise<unknown> | undefined;
    client.setRequestHandler(ElicitRequestSchema, () => {
      // A second request while `ask` (the one allowed in flight) waits for this answer: it must wait, the answer not.
      listed = client.listTools();
      return Promise.resolve({ action: 'accept' as const, content: { name: 'Ada' } });
    });
    try {
      await client.connect(new V1WebSocketClientTransport(new URL(ws.url)));
      assert.deepEqual(await client.callTool({ name: 'ask', arguments: {} }), { content: [{ type: 'text', text: 'Hello, Ada!' }] });
      assert.ok(listed, 'the elicitation was asked');
      assert.ok(((await listed) as { tools: unknown[] }).tools.length > 0);
    } finally {
      await client.close();
      if (!hadWebSocket) delete globals.WebSocket;
    }
  });
});
