/**
 * Every limit of `limits` is hit over the real transports (Streamable HTTP
 * and WebSocket in process with two principals; stdio and the config file
 * through the CLI), the error is checked (-32000, `data.limit`, HTTP 413 /
 * 429 / 400 where the body or stream can't be accepted), and the other
 * principal's tasks and streams are untouched.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRuntime, DEFAULT_LIMITS, LIMIT_EXCEEDED, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, listenWebSocket } from '../../src/transports/index.js';
import { waitFor } from '../support/processes.js';
import { startLimitsStdioServer, type LimitsStdioServer } from './limitsStdioServer.js';
import { openHttpListen, post, RawWs, request, type Json } from '../support/rawWire.js';
import limitTools from './fixtures/limitTools.js';

const LIMITS = {
  maxRequestBodyBytes: 64 * 1024,
  maxJsonDepth: 16,
  maxLiveTasksPerPrincipal: 2,
  maxPendingInputRequestsPerTask: 2,
  maxListenStreamsPerPrincipal: 2,
  maxTaskIdsPerListen: 3,
  maxListenUriBytes: 64,
  maxListenUriBytesPerListen: 150,
  maxListenUriBytesPerPrincipal: 200,
  requestTimeoutMs: 300,
  maxTaskTtlMs: 60_000,
};

type ErrorBody = { code: number; message: string; data?: { limit?: string; max?: number } };

/** The JSON-RPC error of a reply, checked to be the limit error for `limit`. */
function limitError(message: Json | undefined, limit: keyof typeof LIMITS): ErrorBody {
  const error = message?.error as ErrorBody | undefined;
  assert.ok(error, `expected a JSON-RPC error, got ${JSON.stringify(message)}`);
  assert.equal(error.code, LIMIT_EXCEEDED, JSON.stringify(error));
  assert.deepEqual(error.data, { limit, max: LIMITS[limit] });
  assert.match(error.message, new RegExp(`^Limit exceeded: .*\\(${limit} = ${LIMITS[limit]}\\)$`));
  return error;
}

const callTool = (name: string, args: Json = {}) => request('tools/call', { name, arguments: args });
const resultOf = (message: Json | undefined): Json => {
  assert.ok(message && 'result' in message, `expected a result, got ${JSON.stringify(message)}`);
  return message.result as Json;
};

describe('limits over Streamable HTTP and WebSocket (two principals)', () => {
  let runtime: TaskvisorRuntime;
  let httpUrl = '';
  let wsUrl = '';
  const as = (user: string) => ({ 'x-user': user });
  const sockets: RawWs[] = [];
  const ws = async (user: string) => {
    const socket = await RawWs.open(wsUrl, as(user));
    sockets.push(socket);
    return socket;
  };
  const get = async (user: string, taskId: string) => resultOf((await post(httpUrl, request('tasks/get', { taskId }), as(user))).message);
  const cancel = (user: string, taskId: string) => post(httpUrl, request('tasks/cancel', { taskId }), as(user));

  before(async () => {
    runtime = createRuntime({ store: { kind: 'memory' }, limits: LIMITS, logger: silentLogger, reapIntervalMs: 0 });
    runtime.use(...limitTools);
    await runtime.start();
    const authenticate = (req: Request) => ({ id: req.headers.get('x-user') ?? 'anonymous' });
    httpUrl = (await listenHttp(runtime, { port: 0, authenticate })).url;
    wsUrl = (await listenWebSocket(runtime, { port: 0, authenticate, keepAliveMs: 0 })).url;
  });
  after(async () => {
    for (const socket of sockets) socket.close();
    await runtime.close();
  });

  it('maxLiveTasksPerPrincipal: the third unfinished task of alice is refused on HTTP and WebSocket; bob still creates his; alice gets a slot back when one finishes', async () => {
    const first = resultOf((await post(httpUrl, callTool('hold'), as('alice'))).message);
    const second = resultOf((await post(httpUrl, callTool('hold'), as('alice'))).message);
    assert.equal(first.resultType, 'task');
    const refused = await post(httpUrl, callTool('hold'), as('alice'));
    limitError(refused.message, 'maxLiveTasksPerPrincipal');
    // A handler's JSON-RPC error travels in an HTTP 200 body, like every other handler error (D-19).
    assert.equal(refused.status, 200);
    const socket = await ws('alice');
    limitError(await socket.call(callTool('hold')), 'maxLiveTasksPerPrincipal');

    // Another principal is not affected by alice's count.
    const bobs = resultOf((await post(httpUrl, callTool('hold'), as('bob'))).message);
    assert.equal(bobs.resultType, 'task');
    // Alice's tasks are untouched by the refusals.
    for (const task of [first, second]) assert.equal((await get('alice', task.taskId as string)).status, 'working');

    // A finished task frees its slot.
    await cancel('alice', first.taskId as string);
    await waitFor(async () => (await get('alice', first.taskId as string)).status === 'cancelled', { what: 'the cancel' });
    const third = await waitFor(
      async () => {
        const reply = await post(httpUrl, callTool('hold'), as('alice'));
        return reply.message && 'result' in reply.message ? (reply.message.result as Json) : undefined;
      },
      { what: 'a free slot' },
    );
    assert.equal(third.resultType, 'task');
    for (const taskId of [second.taskId, third.taskId]) await cancel('alice', taskId as string);
    await cancel('bob', bobs.taskId as string);
  });

  it('maxPendingInputRequestsPerTask: a task asking for a third input at once fails with the limit error', async () => {
    const created = resultOf((await post(httpUrl, callTool('ask3'), as('carol'))).message);
    const task = await waitFor(
      async () => {
        const current = await get('carol', created.taskId as string);
        return current.status === 'failed' ? current : undefined;
      },
      { what: 'the task to fail' },
    );
    limitError({ error: task.error }, 'maxPendingInputRequestsPerTask');
    assert.match(String(task.statusMessage), /maxPendingInputRequestsPerTask/);
  });

  it("maxListenStreamsPerPrincipal: the third stream of alice is 429 on HTTP and an error on WebSocket; bob opens his; alice's open streams keep working", async () => {
    const open = [
      await openHttpListen(httpUrl, { toolsListChanged: true }, as('alice')),
      await openHttpListen(httpUrl, { toolsListChanged: true }, as('alice')),
    ];
    try {
      for (const stream of open) assert.equal(stream.status, 200);
      const third = await openHttpListen(httpUrl, { toolsListChanged: true }, as('alice'));
      assert.equal(third.status, 429);
      // As the sessions' 429: the client is told when to try again.
      assert.equal(third.headers.get('retry-after'), '5');
      limitError(third.first, 'maxListenStreamsPerPrincipal');
      const socket = await ws('alice');
      limitError(
        await socket.call(request('subscriptions/listen', { notifications: { toolsListChanged: true } })),
        'maxListenStreamsPerPrincipal',
      );
      const bobs = await openHttpListen(httpUrl, { toolsListChanged: true }, as('bob'));
      assert.equal(bobs.status, 200);
      bobs.close();
    } finally {
      for (const stream of open) stream.close();
    }
    // Closed streams give their slots back.
    await waitFor(
      async () => {
        const again = await openHttpListen(httpUrl, { toolsListChanged: true }, as('alice'));
        again.close();
        return again.status === 200;
      },
      { what: 'the streams to be released' },
    );
  });

  it('maxListenUriBytes, maxListenUriBytesPerListen: a listen naming too long a URI, or too many URI bytes, is refused (HTTP 400, and on WebSocket), not cut', async () => {
    const long = `file:///${'u'.repeat(LIMITS.maxListenUriBytes)}`;
    const tooLong = await openHttpListen(httpUrl, { resourceSubscriptions: ['file:///ok', long] }, as('alice'));
    assert.equal(tooLong.status, 400);
    assert.match(limitError(tooLong.first, 'maxListenUriBytes').message, /resourceSubscriptions\[1\] is \d+ bytes long/);
    const socket = await ws('alice');
    limitError(
      await socket.call(request('subscriptions/listen', { notifications: { resourceSubscriptions: [long] } })),
      'maxListenUriBytes',
    );
    const many = Array.from({ length: 3 }, (_, i) => `file:///${String(i).repeat(52)}`);
    const tooMany = await openHttpListen(httpUrl, { resourceSubscriptions: many }, as('alice'));
    assert.equal(tooMany.status, 400);
    limitError(tooMany.first, 'maxListenUriBytesPerListen');
  });

  it("maxListenUriBytesPerPrincipal: carol's listens together may watch so many URI bytes (429 with Retry-After past it); dave's are his own; a closed listen gives its bytes back", async () => {
    const uris = (tag: string) => Array.from({ length: 2 }, (_, i) => `file:///${tag}/${String(i).repeat(50)}`);
    const first = await openHttpListen(httpUrl, { resourceSubscriptions: uris('a') }, as('carol'));
    try {
      assert.equal(first.status, 200);
      assert.deepEqual((first.first?.params as Json).notifications, { resourceSubscriptions: uris('a') });
      const second = await openHttpListen(httpUrl, { resourceSubscriptions: uris('b') }, as('carol'));
      assert.equal(second.status, 429);
      assert.equal(second.headers.get('retry-after'), '5');
      limitError(second.first, 'maxListenUriBytesPerPrincipal');
      const socket = await ws('carol');
      limitError(
        await socket.call(request('subscriptions/listen', { notifications: { resourceSubscriptions: uris('c') } })),
        'maxListenUriBytesPerPrincipal',
      );
      const daves = await openHttpListen(httpUrl, { resourceSubscriptions: uris('b') }, as('dave'));
      assert.equal(daves.status, 200);
      daves.close();
    } finally {
      first.close();
    }
    await waitFor(
      async () => {
        const again = await openHttpListen(httpUrl, { resourceSubscriptions: uris('b') }, as('carol'));
        again.close();
        return again.status === 200;
      },
      { what: "carol's URI bytes to be released" },
    );
  });

  it('maxTaskIdsPerListen: a listen naming more task ids is refused (HTTP 400, and on WebSocket)', async () => {
    const ids = ['a', 'b', 'c', 'd'].map((c) => c.repeat(32));
    const refused = await openHttpListen(httpUrl, { taskIds: ids }, as('alice'));
    assert.equal(refused.status, 400);
    limitError(refused.first, 'maxTaskIdsPerListen');
    const socket = await ws('alice');
    limitError(await socket.call(request('subscriptions/listen', { notifications: { taskIds: ids } })), 'maxTaskIdsPerListen');
    // At the limit it opens.
    const fine = await openHttpListen(httpUrl, { taskIds: ids.slice(0, 3) }, as('alice'));
    fine.close();
    assert.notEqual(fine.status, 400);
  });

  it('requestTimeoutMs: a synchronous call that runs too long is answered with the limit error (HTTP and WebSocket)', async () => {
    limitError((await post(httpUrl, callTool('hang'), as('dave'))).message, 'requestTimeoutMs');
    const socket = await ws('dave');
    limitError(await socket.call(callTool('hang')), 'requestTimeoutMs');
    // The connection carries on.
    assert.equal(resultOf(await socket.call(callTool('echo', { value: 1 }))).content instanceof Array, true);
  });

  it('maxTaskTtlMs: an unlimited ttl is cut to the cap (T-26)', async () => {
    const created = resultOf((await post(httpUrl, callTool('hold'), as('erin'))).message);
    assert.equal(created.ttlMs, LIMITS.maxTaskTtlMs);
    await cancel('erin', created.taskId as string);
  });

  it('maxRequestBodyBytes: an HTTP body over the limit is 413 with the limit error; a WebSocket frame over it closes that socket (1009) only', async () => {
    const big = callTool('echo', { value: 'x'.repeat(LIMITS.maxRequestBodyBytes) });
    const reply = await post(httpUrl, big, as('frank'));
    assert.equal(reply.status, 413);
    limitError(reply.message, 'maxRequestBodyBytes');
    // The same for a listen request, which taskvisor serves itself.
    const listen = request('subscriptions/listen', {
      notifications: { toolsListChanged: true },
      padding: 'x'.repeat(LIMITS.maxRequestBodyBytes),
    });
    assert.equal((await post(httpUrl, listen, as('frank'))).status, 413);

    const victim = await ws('frank');
    const bystander = await ws('grace');
    victim.send(big);
    assert.equal((await victim.closed).code, 1009);
    assert.ok(bystander.isOpen);
    assert.ok('result' in (await bystander.call(callTool('echo', { value: 'still here' }))));
  });

  it('maxJsonDepth: a too deeply nested message is refused (HTTP 400; WebSocket answers and stays open)', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < LIMITS.maxJsonDepth + 5; i++) deep = [deep];
    const message = callTool('echo', { value: deep });
    const reply = await post(httpUrl, message, as('heidi'));
    assert.equal(reply.status, 400);
    limitError(reply.message, 'maxJsonDepth');
    const socket = await ws('heidi');
    socket.send(message);
    limitError(await socket.waitFor((m) => m.id === null && 'error' in m), 'maxJsonDepth');
    assert.ok('result' in (await socket.call(callTool('echo', { value: [[['fine']]] }))));
  });
});

describe('limits from the config file, over stdio (CLI)', () => {
  let server: LimitsStdioServer;
  let lines: Json[] = [];

  before(async () => {
    server = await startLimitsStdioServer({ ...LIMITS, maxTaskTtlMs: 300, maxLiveTasksPerPrincipal: 1 }, 'taskvisor-limits-');
    lines = server.lines;
  });
  after(async () => {
    await server?.close();
  });

  const send = (text: string) => server.send(text);
  const answerTo = (id: unknown) =>
    waitFor(() => lines.find((line) => line.id === id && ('result' in line || 'error' in line)), {
      timeoutMs: 45_000,
      what: `the answer to ${String(id)}`,
    });
  const call = async (message: Json) => {
    send(JSON.stringify(message));
    return answerTo(message.id);
  };

  it('a line over maxRequestBodyBytes and a too deep message get the limit error; the connection carries on', async () => {
    send(JSON.stringify(callTool('echo', { value: 'y'.repeat(LIMITS.maxRequestBodyBytes + 10) })));
    const tooLong = await waitFor(
      () => lines.find((line) => line.id === null && (line.error as ErrorBody | undefined)?.data?.limit === 'maxRequestBodyBytes'),
      { timeoutMs: 45_000, what: 'the too-long answer' },
    );
    limitError(tooLong, 'maxRequestBodyBytes');
    let deep: unknown = 0;
    for (let i = 0; i < 40; i++) deep = { d: deep };
    send(JSON.stringify(callTool('echo', { value: deep })));
    limitError(
      await waitFor(() => lines.find((line) => line.id === null && (line.error as ErrorBody | undefined)?.data?.limit === 'maxJsonDepth'), {
        what: 'the depth answer',
      }),
      'maxJsonDepth',
    );
    assert.ok('result' in (await call(callTool('echo', { value: 'ok' }))));
  });

  it('maxLiveTasksPerPrincipal and maxTaskTtlMs from the file: a second task is refused; the capped task fails at its deadline', async () => {
    const created = resultOf(await call(callTool('hold')));
    assert.equal(created.ttlMs, 300);
    const refused = (await call(callTool('hold'))).error as ErrorBody;
    assert.equal(refused.code, LIMIT_EXCEEDED);
    assert.deepEqual(refused.data, { limit: 'maxLiveTasksPerPrincipal', max: 1 });
    const failed = await waitFor(
      async () => {
        const task = resultOf(await call(request('tasks/get', { taskId: created.taskId })));
        return task.status === 'failed' ? task : undefined;
      },
      { what: 'the deadline' },
    );
    assert.equal((failed.error as ErrorBody).code, -32603);
    assert.match(String(failed.statusMessage), /ttl|deadline|expired|time/i);
    // Its slot is free again.
    assert.equal(resultOf(await call(callTool('hold'))).resultType, 'task');
  });

  it('a bad line on stdio is answered, not skipped: not JSON -32700, a batch -32600, a malformed request -32600 with its id', async () => {
    send('{not json');
    assert.equal(
      ((await waitFor(() => lines.find((l) => l.id === null && (l.error as ErrorBody | undefined)?.code === -32700))).error as ErrorBody)
        .code,
      -32700,
    );
    send(JSON.stringify([callTool('echo', { value: 1 })]));
    await waitFor(() => lines.find((l) => l.id === null && /batch/.test(String((l.error as ErrorBody | undefined)?.message))), {
      what: 'the batch answer',
    });
    send(JSON.stringify({ jsonrpc: '2.0', id: 'bad-1', method: 42 }));
    assert.equal(((await answerTo('bad-1')).error as ErrorBody).code, -32600);
  });
});

describe('limits as library options', () => {
  it('missing limits take the defaults; runtime.limits shows the values in force', () => {
    const runtime = createRuntime({ store: { kind: 'memory' }, limits: { maxJsonDepth: 7 }, logger: silentLogger });
    assert.deepEqual(runtime.limits, { ...DEFAULT_LIMITS, maxJsonDepth: 7 });
    assert.ok(Object.isFrozen(runtime.limits));
  });

  it('a bad value or an unknown limit throws a RangeError naming it, before anything opens', () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ maxJsonDepth: 0 }, /^limits\.maxJsonDepth: expected a positive integer, got 0$/],
      [{ maxLiveTasksPerPrincipal: 1.5 }, /^limits\.maxLiveTasksPerPrincipal: expected a positive integer, got 1\.5$/],
      [{ requestTimeoutMs: 2 ** 31 }, /^limits\.requestTimeoutMs: at most 2147483647 ms$/],
      [{ maxRequestBodyBytes: null }, /^limits\.maxRequestBodyBytes: expected a positive integer, got null$/],
      [{ maxBody: 1 }, /^limits\.maxBody: unknown limit \(known: maxRequestBodyBytes, /],
    ];
    for (const [limits, message] of bad) {
      assert.throws(
        () => createRuntime({ store: { kind: 'memory' }, limits: limits, logger: silentLogger }),
        (error: Error) => error instanceof RangeError && message.test(error.message),
      );
    }
    // null is allowed where it means "no cap".
    assert.equal(
      createRuntime({ store: { kind: 'memory' }, limits: { maxTaskTtlMs: null }, logger: silentLogger }).limits.maxTaskTtlMs,
      null,
    );
  });
});
