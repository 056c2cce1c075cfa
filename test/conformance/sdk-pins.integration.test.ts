/**
 * Pins of the SDK behaviour each SDK workaround answers (see
 * docs/conformance.md, "SDK workarounds"). Each test asserts the stock SDK
 * still behaves the way the workaround assumes: when one fails after an SDK
 * upgrade, the workaround it names can probably go (or must change).
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { z } from 'zod';
import * as zv4 from 'zod/v4';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { toNodeHandler, toWebRequest, type NodeIncomingMessageLike } from '@modelcontextprotocol/node';
import * as serverSdk from '@modelcontextprotocol/server';
import { InMemoryTransport, Server, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { createRuntime, silentLogger } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { TaskvisorServer } from '../../src/protocol/TaskvisorServer.js';
import { tapInbound } from '../../src/protocol/transportTap.js';
import { nodeRequestHandler } from '../../src/transports/nodeAdapter.js';

const TASKS = 'io.modelcontextprotocol/tasks';
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'pin', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS]: {} } },
};

/** `server` connected to an in-memory pair; `ask` sends one raw request and resolves its response. */
async function rawPair(server: Server) {
  const [client, end] = InMemoryTransport.createLinkedPair();
  await server.connect(end);
  const answers = new Map<number, (message: JSONRPCMessage) => void>();
  client.onmessage = (message) => {
    if ('id' in message && typeof message.id === 'number') answers.get(message.id)?.(message);
  };
  await client.start();
  let next = 0;
  return {
    ask: (method: string, params: Record<string, unknown>) =>
      new Promise<Record<string, unknown>>((resolve) => {
        const id = ++next;
        answers.set(id, (message) => resolve(message));
        void client.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta: META } });
      }),
    close: () => server.close(),
  };
}

/** A server whose tools/call answers a flat CreateTaskResult and whose tasks/update reports what it was given. */
function taskServer<S extends Server>(server: S, seen: unknown[]): S {
  server.setRequestHandler('tools/call', async () => ({ resultType: 'task', taskId: 't1', status: 'working' }) as never);
  server.setRequestHandler('tasks/update', { params: zv4.object({ taskId: zv4.string() }).loose() }, async (_params, ctx) => {
    seen.push(ctx.mcpReq.inputResponses);
    return {};
  });
  return server;
}

const info = { name: 'pin', version: '1' };
const options = { capabilities: { tools: {}, extensions: { [TASKS]: {} } } };

describe('SDK pins', () => {
  it('P1 (taskResultPassThrough.ts): a stock Server still adds content: [] to a CreateTaskResult; TaskvisorServer does not', async () => {
    const stock = await rawPair(taskServer(new Server(info, options), []));
    const ours = await rawPair(taskServer(new TaskvisorServer(info, options), []));
    try {
      const stockResult = (await stock.ask('tools/call', { name: 'x', arguments: {} })).result as Record<string, unknown>;
      assert.deepEqual(stockResult.content, [], 'the SDK no longer adds content: [] — taskResultPassThrough.ts can go');
      const ourResult = (await ours.ask('tools/call', { name: 'x', arguments: {} })).result as Record<string, unknown>;
      assert.equal(ourResult.resultType, 'task');
      assert.equal('content' in ourResult, false);
    } finally {
      await stock.close();
      await ours.close();
    }
  });

  it('P2 / D-21 (inboundScreen.ts): a stock Server still turns inputResponses: [] into {}; TaskvisorServer answers -32602', async () => {
    const stockSeen: unknown[] = [];
    const stock = await rawPair(taskServer(new Server(info, options), stockSeen));
    const ours = await rawPair(taskServer(new TaskvisorServer(info, options), []));
    try {
      const stockAnswer = await stock.ask('tasks/update', { taskId: 't1', inputResponses: [] });
      assert.ok('result' in stockAnswer, 'the SDK refuses a malformed inputResponses itself now — inboundScreen.ts can go');
      assert.deepEqual(stockSeen, [{}], 'the handler sees an empty object, not what was sent');
      const ourAnswer = await ours.ask('tasks/update', { taskId: 't1', inputResponses: [] });
      assert.equal((ourAnswer.error as { code?: number } | undefined)?.code, -32602);
    } finally {
      await stock.close();
      await ours.close();
    }
  });

  it('P5 (transportTap.ts): the SDK Client still cannot decode resultType "task", and connect() installs onmessage', async () => {
    const runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger, reapIntervalMs: 0 });
    runtime.tool('slow', { taskBehavior: 'always', inputSchema: z.object({}) }, () => new Promise<string>(() => {}));
    await runtime.start();
    const http = await listenHttp(runtime, { port: 0 });
    const client = new Client(info, { capabilities: { extensions: { [TASKS]: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const transport = new StreamableHTTPClientTransport(new URL(http.url));
    try {
      assert.equal(transport.onmessage, undefined);
      await client.connect(transport);
      assert.equal(typeof transport.onmessage, 'function', 'connect() no longer installs onmessage: tapInbound would run too early');
      await assert.rejects(
        client.callTool({ name: 'slow', arguments: {} }),
        (error: { code?: unknown }) => error.code === 'UNSUPPORTED_RESULT_TYPE',
        'the SDK Client decodes task results now — the raw path (transportTap.ts, client/rawDispatch.ts) can go',
      );
      // And the tap sees the Client's traffic first: a response it takes never reaches the Client.
      const taken: unknown[] = [];
      tapInbound(transport, (message) => {
        taken.push(message);
        return false;
      });
      await client.listTools();
      assert.ok(taken.length > 0);
    } finally {
      await client.close();
      await http.close();
      await runtime.close();
    }
  });

  it('D-23 (transports/http.ts listen header rung): the SDK still does not export validateStandardRequestHeaders', () => {
    assert.equal('validateStandardRequestHeaders' in serverSdk, false, 'exported now: use it instead of the mirror in transports/http.ts');
  });

  it('request head (transports/requestHead.ts): the Node adapter still builds a URL from the Host header unchecked', async () => {
    const hostile: NodeIncomingMessageLike = {
      headers: { host: 'user:pass@[' },
      url: '/mcp',
      method: 'GET',
      async *[Symbol.asyncIterator]() {},
    };
    await assert.rejects(toWebRequest(hostile), 'the adapter checks the Host header now: requestHead.ts may be relaxed');
  });

  it('exactOptionalPropertyTypes (transports/nodeAdapter.ts): the Node adapter still types its request so an IncomingMessage is refused', async () => {
    const fetch = (request: Request) => Promise.resolve(new Response(`${request.method} ${new URL(request.url).pathname}`));
    const stock = toNodeHandler({ fetch });
    const viaStock = (req: IncomingMessage, res: ServerResponse) =>
      // @ts-expect-error NodeIncomingMessageLike's `method?: string` refuses IncomingMessage's `string | undefined`.
      // Once this line typechecks, the SDK's type accepts Node's request and nodeAdapter.ts can go.
      stock(req, res);
    const viaAdapter = nodeRequestHandler({ fetch });
    // At run time both serve a real request alike: the workaround only narrows the type.
    for (const handler of [viaStock, viaAdapter]) {
      const server = createServer((req, res) => void handler(req, res));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const response = await globalThis.fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/pin`, {
          method: 'POST',
          body: '{}',
        });
        assert.equal(await response.text(), 'POST /pin');
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    }
  });
});
