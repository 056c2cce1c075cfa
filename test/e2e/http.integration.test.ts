/**
 * The e2e conformance scenarios over real Streamable HTTP on 127.0.0.1
 * (port 0), plus what only HTTP has: status codes, the SEP-2243 header
 * ladder (T-62) and per-request authentication (T-10, I-7).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listenHttp } from '../../src/transports/index.js';
import { type TaskvisorRuntime } from '../../src/index.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { collectListen, postJsonRpc } from '../support/httpRaw.js';
import { error_, NO_TASKS_CAPABILITIES, result_, taskOps, textOf, unknownTaskId, type Json } from '../support/taskOps.js';
import { startE2eRuntime } from './fixtures/runtime.js';
import { registerScenarios, TASKS_EXTENSION_ID } from './scenarios.js';

let url = '';

registerScenarios(
  'Streamable HTTP',
  async () => {
    const runtime = await startE2eRuntime();
    const listener = await listenHttp(runtime, { port: 0 });
    url = listener.url;
    return { endpoint: { kind: 'http', url }, close: () => runtime.close() };
  },
  ({ ops }) => {
    describe('HTTP status codes and headers (T-03, T-33, T-35, T-62, D-19)', () => {
      const requiredCapabilities = { extensions: { [TASKS_EXTENSION_ID]: {} } };

      it('T-33: tasks/get|update|cancel without the extension are HTTP 400 with -32021 and data.requiredCapabilities', async () => {
        const created = await ops.createTask('blocking');
        try {
          for (const [method, params] of [
            ['tasks/get', { taskId: created.taskId }],
            ['tasks/update', { taskId: created.taskId, inputResponses: { x: { action: 'cancel' } } }],
            ['tasks/cancel', { taskId: created.taskId }],
          ] as const) {
            const reply = await postJsonRpc(url, method, params, { capabilities: NO_TASKS_CAPABILITIES });
            assert.equal(reply.status, 400, `${method}: ${reply.text}`);
            assert.equal(reply.message?.error?.code, -32021, `${method}: ${reply.text}`);
            assert.deepEqual((reply.message?.error?.data as Json | undefined)?.requiredCapabilities, requiredCapabilities);
          }
          assert.equal((await ops.task(created.taskId)).status, 'working');
        } finally {
          result_(await ops.cancel(created.taskId));
        }
      });

      it("T-03: a taskBehavior 'always' tool without the extension is HTTP 400 with -32021", async () => {
        const reply = await postJsonRpc(url, 'tools/call', { name: 'always_task', arguments: {} }, { capabilities: NO_TASKS_CAPABILITIES });
        assert.equal(reply.status, 400, reply.text);
        assert.equal(reply.message?.error?.code, -32021);
        assert.deepEqual((reply.message?.error?.data as Json | undefined)?.requiredCapabilities, requiredCapabilities);
      });

      it('T-35: tasks/list and tasks/result are HTTP 404 with -32601', async () => {
        for (const [method, params] of [
          ['tasks/list', {}],
          ['tasks/result', { taskId: unknownTaskId() }],
        ] as const) {
          const reply = await postJsonRpc(url, method, params);
          assert.equal(reply.status, 404, `${method}: ${reply.text}`);
          assert.equal(reply.message?.error?.code, -32601, `${method}: ${reply.text}`);
        }
      });

      it('T-62/T-61: a missing or mismatched Mcp-Name on tasks/get|update|cancel is HTTP 400 with -32020; the Base64 form is accepted', async () => {
        const created = await ops.createTask('always_task', { ms: 0 });
        const ok = await postJsonRpc(url, 'tasks/get', { taskId: created.taskId });
        assert.equal(ok.status, 200, ok.text);
        assert.equal(ok.message?.result?.taskId, created.taskId);
        for (const [method, params] of [
          ['tasks/get', { taskId: created.taskId }],
          ['tasks/update', { taskId: created.taskId, inputResponses: {} }],
          ['tasks/cancel', { taskId: created.taskId }],
        ] as const) {
          for (const mcpName of [null, unknownTaskId(), `${created.taskId}x`]) {
            const reply = await postJsonRpc(url, method, params, { headers: { 'mcp-name': mcpName } });
            assert.equal(reply.status, 400, `${method} with Mcp-Name ${mcpName}: ${reply.text}`);
            assert.equal(reply.message?.error?.code, -32020, `${method} with Mcp-Name ${mcpName}: ${reply.text}`);
          }
        }
        // T-61: the Base64 sentinel form of the same name is accepted.
        const sentinel = `=?base64?${Buffer.from(created.taskId).toString('base64')}?=`;
        const encoded = await postJsonRpc(url, 'tasks/get', { taskId: created.taskId }, { headers: { 'mcp-name': sentinel } });
        assert.equal(encoded.status, 200, encoded.text);
        // The refused requests did nothing.
        assert.equal((await ops.task(created.taskId)).status, 'completed');
      });

      it('T-60: a mismatched Mcp-Method or MCP-Protocol-Version is HTTP 400 with -32020', async () => {
        const created = await ops.createTask('always_task', { ms: 0 });
        const variants: Array<Record<string, string | null>> = [
          { 'mcp-method': 'tasks/cancel' },
          { 'mcp-method': null },
          { 'mcp-protocol-version': '2025-11-25' },
        ];
        for (const headers of variants) {
          const reply = await postJsonRpc(url, 'tasks/get', { taskId: created.taskId }, { headers });
          assert.equal(reply.status, 400, `${JSON.stringify(headers)}: ${reply.text}`);
          assert.ok([-32020, -32022].includes(reply.message?.error?.code ?? 0), `${JSON.stringify(headers)}: ${reply.text}`);
        }
      });

      it('T-38: a request whose _meta lacks clientCapabilities is HTTP 400 with -32602', async () => {
        const reply = await postJsonRpc(url, 'tasks/get', {
          taskId: unknownTaskId(),
          _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
        });
        assert.equal(reply.status, 400, reply.text);
        assert.equal(reply.message?.error?.code, -32602);
      });

      it('T-31/T-50: subscriptions/listen with taskIds: the acknowledgement comes first, stamped, with acknowledged taskIds ⊆ requested', async () => {
        const created = await ops.createTask('always_task', { ms: 0 });
        const requested = [created.taskId];
        const { status, messages, id } = await collectListen(url, { taskIds: requested, toolsListChanged: true });
        assert.equal(status, 200);
        const ack = messages[0];
        assert.equal(ack?.method, 'notifications/subscriptions/acknowledged', JSON.stringify(messages));
        const params = ack.params as Json;
        assert.equal((params._meta as Json)['io.modelcontextprotocol/subscriptionId'], id);
        const acknowledged = ((params.notifications as Json).taskIds as string[] | undefined) ?? [];
        for (const taskId of acknowledged) assert.ok(requested.includes(taskId));
        // Only acknowledged task ids may be reported on the stream (T-29).
        for (const message of messages.slice(1)) {
          if (message.method === 'notifications/tasks') assert.ok(acknowledged.includes(String((message.params as Json).taskId)));
        }
      });

      it('T-30: subscriptions/listen asking for taskIds without the extension is HTTP 400 with -32021', async () => {
        const { status, messages } = await collectListen(url, { taskIds: [unknownTaskId()] }, { capabilities: NO_TASKS_CAPABILITIES });
        assert.equal(status, 400, JSON.stringify(messages));
        assert.equal((messages[0]?.error as Json | undefined)?.code, -32021);
      });

      it('D-19: an unknown taskId is -32602 in the response body', async () => {
        const reply = await postJsonRpc(url, 'tasks/get', { taskId: unknownTaskId() });
        assert.equal(reply.message?.error?.code, -32602, reply.text);
        assert.ok([200, 400, 404].includes(reply.status), `status ${reply.status}`);
      });
    });
  },
);

describe('Streamable HTTP: principal isolation (T-10, I-7)', () => {
  let runtime: TaskvisorRuntime;
  let isolatedUrl = '';
  const clients: ConnectedClient[] = [];
  const as = async (user: string | undefined) => {
    const client = await connect({ kind: 'http', url: isolatedUrl, ...(user ? { headers: { 'x-user': user } } : {}) });
    clients.push(client);
    return taskOps(() => client);
  };

  before(async () => {
    runtime = await startE2eRuntime();
    const listener = await listenHttp(runtime, {
      port: 0,
      authenticate: (req) => (req.headers.get('x-user') === 'nobody' ? null : { id: req.headers.get('x-user') ?? 'anon' }),
    });
    isolatedUrl = listener.url;
  });
  after(async () => {
    for (const client of clients) await client.close();
    await runtime.close();
  });

  it("another principal's task is indistinguishable from an unknown id on get, update and cancel; the owner's task is unaffected", async () => {
    const alice = await as('alice');
    const bob = await as('bob');
    const anonymous = await as(undefined);

    const blocking = await alice.createTask('blocking');
    const hello = await alice.createTask('hello_world');
    await alice.waitForStatus(hello.taskId, 'input_required');

    for (const intruder of [bob, anonymous]) {
      const unknown = {
        get: error_(await intruder.get(unknownTaskId()), -32602),
        update: error_(await intruder.update(unknownTaskId(), { name: { action: 'accept', content: { name: 'Mallory' } } }), -32602),
        cancel: error_(await intruder.cancel(unknownTaskId()), -32602),
      };
      for (const taskId of [blocking.taskId, hello.taskId]) {
        assert.deepEqual(error_(await intruder.get(taskId), -32602), unknown.get);
        assert.deepEqual(
          error_(await intruder.update(taskId, { name: { action: 'accept', content: { name: 'Mallory' } } }), -32602),
          unknown.update,
        );
        assert.deepEqual(error_(await intruder.cancel(taskId), -32602), unknown.cancel);
      }
    }
    // Same HTTP status and body for "foreign" and "unknown" on the wire too.
    const foreign = await postJsonRpc(isolatedUrl, 'tasks/get', { taskId: blocking.taskId }, { headers: { 'x-user': 'bob' } });
    const missing = await postJsonRpc(isolatedUrl, 'tasks/get', { taskId: unknownTaskId() }, { headers: { 'x-user': 'bob' } });
    assert.equal(foreign.status, missing.status);
    assert.deepEqual(foreign.message?.error, missing.message?.error);

    // Alice's tasks are untouched: still running / still waiting for her answer.
    assert.equal((await alice.task(blocking.taskId)).status, 'working');
    const waiting = await alice.task(hello.taskId);
    assert.equal(waiting.status, 'input_required');
    result_(await alice.update(hello.taskId, { name: { action: 'accept', content: { name: 'Luca' } } }));
    const { task } = await alice.waitForStatus(hello.taskId, 'completed');
    assert.equal(textOf(task.result), 'Hello, Luca!');
    result_(await alice.cancel(blocking.taskId));
    await alice.waitForStatus(blocking.taskId, 'cancelled');

    // A finished task (served from the store, not a live actor) is just as private.
    assert.deepEqual(error_(await bob.get(hello.taskId), -32602), error_(await bob.get(unknownTaskId()), -32602));
  });

  it('T-10/§4.4: an MRTR requestState minted for one principal is refused for another, for another tool, and when tampered with', async () => {
    const alice = await as('alice');
    const bob = await as('bob');
    const first = result_(await alice.call('hello_world', {}, NO_TASKS_CAPABILITIES));
    assert.equal(first.resultType, 'input_required');
    const requestState = String(first.requestState);
    const answer = { name: { action: 'accept', content: { name: 'Mallory' } } };
    error_(
      await bob.send('tools/call', { name: 'hello_world', arguments: {}, inputResponses: answer, requestState }, NO_TASKS_CAPABILITIES),
      -32602,
      'replayed by bob',
    );
    error_(
      await alice.send('tools/call', { name: 'never_ask', arguments: {}, inputResponses: answer, requestState }, NO_TASKS_CAPABILITIES),
      -32602,
      'replayed on another tool',
    );
    const tampered = `${requestState.slice(0, -4)}${requestState.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    error_(
      await alice.send(
        'tools/call',
        { name: 'hello_world', arguments: {}, inputResponses: answer, requestState: tampered },
        NO_TASKS_CAPABILITIES,
      ),
      -32602,
      'tampered',
    );
    const retry = result_(
      await alice.send(
        'tools/call',
        { name: 'hello_world', arguments: {}, inputResponses: { name: { action: 'accept', content: { name: 'Luca' } } }, requestState },
        NO_TASKS_CAPABILITIES,
      ),
    );
    assert.equal(textOf(retry), 'Hello, Luca!');
  });

  it('a request the authenticate hook refuses is HTTP 401 and reaches no task', async () => {
    const alice = await as('alice');
    const created = await alice.createTask('blocking');
    const reply = await postJsonRpc(isolatedUrl, 'tasks/cancel', { taskId: created.taskId }, { headers: { 'x-user': 'nobody' } });
    assert.equal(reply.status, 401, reply.text);
    assert.equal((await alice.task(created.taskId)).status, 'working');
    result_(await alice.cancel(created.taskId));
  });

  it('the same principal on another connection sees its own tasks', async () => {
    const first = await as('carol');
    const second = await as('carol');
    const created = await first.createTask('always_task', { ms: 0 });
    const { task } = await second.waitForStatus(created.taskId, 'completed');
    assert.equal(textOf(task.result), 'always done');
  });
});
