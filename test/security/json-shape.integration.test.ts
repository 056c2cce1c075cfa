/**
 * limits: maxJsonKeys, maxJsonNodes, maxMetaNodes — the shape of a message,
 * judged in the same one pass as its depth, before any schema sees it.
 * CPU per request follows the shape of the JSON, not its size: 200,000 keys
 * in `_meta` (a 2.3 MB body) held the event loop for seconds. Over real
 * HTTP (the SDK path and the tasks fast lane) and WebSocket, with the
 * default limits: each such message is refused with -32600 naming the
 * limit, and the connection and the other clients carry on.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { createRuntime, DEFAULT_LIMITS, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { jsonTextOverLimit, jsonValueOverLimit, type JsonShapeLimits } from '../../src/limits/jsonShape.js';
import { listenHttp, listenWebSocket } from '../../src/transports/index.js';
import { envelope } from '../support/extTasksClient.js';
import { waitFor } from '../support/processes.js';
import { startLimitsStdioServer, type LimitsStdioServer } from './limitsStdioServer.js';
import { post, RawWs, request, type Json } from '../support/rawWire.js';
import limitTools from './fixtures/limitTools.js';

type ErrorBody = { code: number; message: string; data?: { limit?: string; max?: number } };

/** The reply's error, checked to be the -32600 refusal naming `limit`. */
function shapeError(message: Json | undefined, limit: 'maxJsonKeys' | 'maxJsonNodes' | 'maxMetaNodes'): ErrorBody {
  const error = message?.error as ErrorBody | undefined;
  assert.ok(error, `expected a JSON-RPC error, got ${JSON.stringify(message)?.slice(0, 300)}`);
  assert.equal(error.code, -32600, error.message);
  assert.deepEqual(error.data, { limit, max: DEFAULT_LIMITS[limit] });
  assert.match(error.message, new RegExp(`^Invalid Request: .*\\(${limit} = ${DEFAULT_LIMITS[limit]}\\)$`));
  return error;
}

/** An object with `count` keys. */
const manyKeys = (count: number): Json => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 0]));
const callEcho = (params: Json = {}) => request('tools/call', { name: 'echo', arguments: { value: 'x' }, ...params });

describe('JSON shape limits over real HTTP and WebSocket', () => {
  let runtime: TaskvisorRuntime;
  let httpUrl = '';
  let wsUrl = '';
  const sockets: RawWs[] = [];

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

  it('200,000 keys in _meta (2.3 MB, under the body limit) are refused before validation: HTTP 400, -32600 maxMetaNodes', async () => {
    const message = callEcho({ _meta: { ...envelope(), ...manyKeys(200_000) } });
    const reply = await post(httpUrl, message);
    assert.equal(reply.status, 400);
    shapeError(reply.message, 'maxMetaNodes');
    assert.ok('result' in (await post(httpUrl, callEcho())).message!, 'the next request is served');
  });

  it('200,000 keys in arguments: -32600 maxJsonKeys', async () => {
    const reply = await post(httpUrl, callEcho({ arguments: manyKeys(200_000) }));
    assert.equal(reply.status, 400);
    shapeError(reply.message, 'maxJsonKeys');
  });

  it('an array of more values than maxJsonNodes: -32600 maxJsonNodes', async () => {
    const reply = await post(httpUrl, callEcho({ arguments: { value: new Array<number>(DEFAULT_LIMITS.maxJsonNodes).fill(0) } }));
    assert.equal(reply.status, 400);
    shapeError(reply.message, 'maxJsonNodes');
  });

  it('a _meta key spelled with escapes is still a _meta', async () => {
    const meta = JSON.stringify({ ...envelope(), ...manyKeys(DEFAULT_LIMITS.maxMetaNodes) });
    const text = JSON.stringify(callEcho()).replace(/"_meta":\{[^]*\}\}$/, `"\\u005f\\u006deta":${meta}}}`);
    assert.match(text, /u005f/);
    const reply = await post(httpUrl, text, { 'mcp-method': 'tools/call', 'mcp-name': 'echo' });
    assert.equal(reply.status, 400);
    shapeError(reply.message, 'maxMetaNodes');
  });

  it('the tasks fast lane refuses as the SDK path does (tasks/get with a large _meta)', async () => {
    const reply = await post(httpUrl, request('tasks/get', { taskId: 'no-such-task', _meta: { ...envelope(), ...manyKeys(50_000) } }));
    assert.equal(reply.status, 400);
    shapeError(reply.message, 'maxMetaNodes');
    // Under 4 KB: the lane judges the parsed value instead of the text, with the same answer.
    const small = await post(httpUrl, request('tasks/get', { taskId: 'no-such-task', _meta: { ...envelope(), ...manyKeys(300) } }));
    assert.equal(small.status, 400);
    shapeError(small.message, 'maxMetaNodes');
  });

  it('WebSocket: the frame is answered -32600 (id null) and the connection carries on', async () => {
    const socket = await RawWs.open(wsUrl);
    sockets.push(socket);
    socket.send(callEcho({ _meta: { ...envelope(), ...manyKeys(200_000) } }));
    shapeError(await socket.waitFor((m) => m.id === null && 'error' in m), 'maxMetaNodes');
    assert.ok('result' in (await socket.call(callEcho())));
  });

  it('a message within every limit is served (a _meta of 200 keys, 5,000 argument keys)', async () => {
    const reply = await post(
      httpUrl,
      callEcho({ arguments: { value: 'x', ...manyKeys(5_000) }, _meta: { ...envelope(), ...manyKeys(200) } }),
    );
    assert.ok(reply.message && 'result' in reply.message, reply.text.slice(0, 300));
  });
});

describe('JSON shape limits from the config file, over stdio (CLI)', () => {
  const CONFIGURED = { maxJsonKeys: 50, maxJsonNodes: 300, maxMetaNodes: 16 };
  let server: LimitsStdioServer;

  before(async () => {
    server = await startLimitsStdioServer(CONFIGURED, 'taskvisor-shape-');
  });
  after(async () => {
    await server?.close();
  });

  const refusal = (limit: keyof typeof CONFIGURED) =>
    waitFor(() => server.lines.find((line) => line.id === null && (line.error as ErrorBody | undefined)?.data?.limit === limit), {
      timeoutMs: 45_000,
      what: `the ${limit} answer`,
    });

  it('each configured limit refuses its line with -32600 naming it; the connection carries on', async () => {
    const send = (message: Json) => server.send(JSON.stringify(message));
    send(callEcho({ arguments: { value: 'x', ...manyKeys(60) } }));
    send(callEcho({ arguments: { value: new Array<number>(400).fill(1) } }));
    send(callEcho({ _meta: { ...envelope(), ...manyKeys(20) } }));
    for (const limit of ['maxJsonKeys', 'maxJsonNodes', 'maxMetaNodes'] as const) {
      const error = (await refusal(limit)).error as ErrorBody;
      assert.equal(error.code, -32600, error.message);
      assert.deepEqual(error.data, { limit, max: CONFIGURED[limit] });
      assert.match(error.message, new RegExp(`\\(${limit} = ${CONFIGURED[limit]}\\)$`));
    }
    const fine = callEcho();
    send(fine);
    const answer = await waitFor(() => server.lines.find((line) => line.id === fine.id), { timeoutMs: 45_000, what: 'the echo' });
    assert.ok('result' in answer, JSON.stringify(answer));
  });
});

/** JSON values with `_meta` keys at any depth, and strings full of quotes, escapes and brackets. */
const shapedJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.string({ unit: fc.constantFrom('{', '[', ':', ',', '"', '\\', 'a') })),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('_meta', 'k', '"', '\\', ':', '_met'), tie('value'), { maxKeys: 4 }),
  ),
}));
const smallLimits = fc.record<JsonShapeLimits>({
  maxJsonDepth: fc.integer({ min: 0, max: 6 }),
  maxJsonKeys: fc.integer({ min: 0, max: 12 }),
  maxJsonNodes: fc.integer({ min: 1, max: 30 }),
  maxMetaNodes: fc.integer({ min: 1, max: 8 }),
});

describe('JSON shape judges', () => {
  it('the parsed-value walk and the text scan refuse exactly the same values (compact and pretty)', () => {
    fc.assert(
      fc.property(shapedJson.value, smallLimits, fc.boolean(), (value, limits, pretty) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        assert.equal(jsonValueOverLimit(JSON.parse(text), limits) !== undefined, jsonTextOverLimit(text, limits) !== undefined, text);
      }),
      { numRuns: 3_000 },
    );
  });

  it('counts keys, values and _meta values exactly', () => {
    const limits = { maxJsonDepth: 64, maxJsonKeys: 3, maxJsonNodes: 6, maxMetaNodes: 3 };
    // 3 keys; 6 values: the message, [1,2] and its two items, _meta's object and its 1.
    assert.equal(jsonTextOverLimit('{"a":[1,2],"_meta":{"x":1}}', limits), undefined);
    assert.equal(jsonTextOverLimit('{"a":[1,2,3],"_meta":{"x":1}}', limits), 'maxJsonNodes');
    assert.equal(jsonTextOverLimit('{"a":1,"b":2,"c":3,"d":4}', limits), 'maxJsonKeys');
    assert.equal(jsonTextOverLimit('{"_meta":{"x":[1,2]}}', limits), 'maxMetaNodes');
    assert.equal(jsonTextOverLimit('{"_meta":{"x":"[1,2,3,4,5]"}}', limits), undefined);
    // Seven values: empty containers count once each; an escaped quote does not end a key.
    assert.equal(jsonTextOverLimit('{"_meta":{"\\"x":1},"y":[[],{},[]]}', { ...limits, maxJsonNodes: 7 }), undefined);
    assert.equal(jsonTextOverLimit('{"_meta":{"\\"x":1},"y":[[],{},[]]}', limits), 'maxJsonNodes');
    assert.equal(jsonTextOverLimit('{"\\u005fmeta":{"x":[1,2]}}', limits), 'maxMetaNodes');
  });
});
