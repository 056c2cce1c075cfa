/**
 * Errors that quote a client's string quote at most a short start of it,
 * with a marker of its size: a 3 MB task id with a wrong Mcp-Name header got
 * a 6 MB error (the SDK's header-mismatch answer quotes it twice). Over real
 * HTTP and WebSocket, every answer here stays under a few KB.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, listenWebSocket } from '../../src/transports/index.js';
import { post, RawWs, request, type Json } from '../support/rawWire.js';
import limitTools from './fixtures/limitTools.js';

const HUGE = 3 * 1024 * 1024;
const huge = (letter: string) => letter.repeat(HUGE);
/** The most an error quoting a client's string may weigh here, bytes. */
const SMALL = 4096;

type ErrorBody = { code: number; message: string; data?: unknown };

const withVersion = (message: Json, version: string): Json => {
  (message.params as { _meta: Json })._meta['io.modelcontextprotocol/protocolVersion'] = version;
  return message;
};

/** The error of `message`, checked to be small and to carry the size marker of the cut string. */
function boundedError(message: Json | undefined, text: string, code: number): ErrorBody {
  const error = message?.error as ErrorBody | undefined;
  assert.ok(error, `expected an error, got ${text.slice(0, 300)}`);
  assert.equal(error.code, code, error.message.slice(0, 300));
  assert.ok(text.length < SMALL, `the answer is ${text.length} bytes: ${text.slice(0, 300)}`);
  assert.match(error.message, /…\(3145728 bytes\)/);
  return error;
}

describe('errors quote a bounded part of a client string', () => {
  let runtime: TaskvisorRuntime;
  let httpUrl = '';
  let wsUrl = '';
  const sockets: RawWs[] = [];
  const ws = async () => {
    const socket = await RawWs.open(wsUrl);
    sockets.push(socket);
    return socket;
  };
  const answerTo = async (socket: RawWs, message: Json) => {
    socket.send(message);
    const reply = await socket.waitFor((m) => m.id === message.id);
    return { message: reply, text: JSON.stringify(reply) };
  };

  before(async () => {
    runtime = createRuntime({ store: { kind: 'memory' }, logger: silentLogger, reapIntervalMs: 0 });
    runtime.use(...limitTools);
    await runtime.start();
    httpUrl = (await listenHttp(runtime, { port: 0 })).url;
    wsUrl = (await listenWebSocket(runtime, { port: 0, keepAliveMs: 0 })).url;
  });
  after(async () => {
    for (const socket of sockets) socket.close();
    await runtime.close();
  });

  it('HTTP: a 3 MB taskId with a wrong Mcp-Name header (-32020)', async () => {
    const reply = await post(httpUrl, request('tasks/get', { taskId: huge('A') }), { 'mcp-name': 'wrong' });
    assert.equal(reply.status, 400);
    const error = boundedError(reply.message, reply.text, -32020);
    assert.match(error.message, /params\.taskId="A+…\(3145728 bytes\)" but the Mcp-Name header names "wrong"/);
  });

  it('HTTP: a 3 MB tool name with a wrong Mcp-Name header (-32020)', async () => {
    const reply = await post(httpUrl, request('tools/call', { name: huge('B'), arguments: {} }), { 'mcp-name': 'echo' });
    assert.equal(reply.status, 400);
    boundedError(reply.message, reply.text, -32020);
  });

  it('WebSocket: an unknown 3 MB tool name (-32602)', async () => {
    const { message, text } = await answerTo(await ws(), request('tools/call', { name: huge('C'), arguments: {} }));
    const error = boundedError(message, text, -32602);
    assert.match(error.message, /^Unknown tool: C{128}…\(3145728 bytes\)$/);
  });

  it('WebSocket: a 3 MB id already in flight (-32600)', async () => {
    const socket = await ws();
    const id = huge('D');
    socket.send(request('tools/call', { name: 'hang', arguments: {} }, id));
    const { message } = await answerTo(socket, request('tools/call', { name: 'hang', arguments: {} }, id));
    // The answer carries the id itself (JSON-RPC requires it); its message quotes only a start of it.
    const error = message.error as ErrorBody;
    assert.equal(error.code, -32600);
    boundedError({ error }, JSON.stringify(error), -32600);
  });

  it('WebSocket: a 3 MB protocol version in a listen request', async () => {
    const listen = request('subscriptions/listen', { notifications: { taskStatus: true } });
    (listen.params as { _meta: Json })._meta['io.modelcontextprotocol/protocolVersion'] = huge('E');
    const { message, text } = await answerTo(await ws(), listen);
    const error = message.error as ErrorBody;
    assert.ok(error, text.slice(0, 300));
    assert.ok(text.length < SMALL, `the answer is ${text.length} bytes: ${text.slice(0, 300)}`);
  });

  it('HTTP: a 3 MB protocol version in a listen request', async () => {
    const listen = request('subscriptions/listen', { notifications: { taskStatus: true } });
    (listen.params as { _meta: Json })._meta['io.modelcontextprotocol/protocolVersion'] = huge('F');
    const reply = await post(httpUrl, listen);
    assert.ok(reply.text.length < SMALL, `the answer is ${reply.text.length} bytes: ${reply.text.slice(0, 300)}`);
  });

  for (const [what, message] of [
    ['a 3 MB protocol version in a tools/call', () => withVersion(request('tools/call', { name: 'echo', arguments: {} }), huge('H'))],
    ['an unknown 3 MB prompt name', () => request('prompts/get', { name: huge('I') })],
    ['an unknown 3 MB resource uri', () => request('resources/read', { uri: `file:///${huge('J')}` })],
    [
      'a completion of an unknown 3 MB prompt',
      () => request('completion/complete', { ref: { type: 'ref/prompt', name: huge('K') }, argument: { name: 'a', value: '' } }),
    ],
    ['tool arguments with a 3 MB key', () => request('tools/call', { name: 'echo', arguments: { [huge('L')]: 1, value: 5 } })],
  ] as const) {
    it(`WebSocket and HTTP: ${what}`, async () => {
      const { text } = await answerTo(await ws(), message());
      assert.ok(text.length < SMALL, `WebSocket: the answer is ${text.length} bytes: ${text.slice(0, 300)}`);
      const reply = await post(httpUrl, message(), { 'mcp-name': null });
      assert.ok(reply.text.length < SMALL, `HTTP: the answer is ${reply.text.length} bytes: ${reply.text.slice(0, 300)}`);
    });
  }

  it('WebSocket: a 3 MB method name', async () => {
    const { text } = await answerTo(await ws(), request(huge('G'), {}));
    assert.ok(text.length < SMALL, `the answer is ${text.length} bytes: ${text.slice(0, 300)}`);
  });
});
