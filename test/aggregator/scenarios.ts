/**
 * The aggregator scenarios every upstream transport must pass, driven by
 * the ext-tasks client (passthrough) and by clients that cannot take a task
 * (collapse): a 2026-07-28 client without the capability and the v1 SDK.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { GetTaskResultV2Schema, TaskStatusNotificationV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { connect, envelope, taskSession, type ConnectedClient } from '../support/extTasksClient.js';
import { errorOf, getTask, rawRequest, resultOf, callTool, waitFor } from '../support/processes.js';
import { DEMO_TOOLS, type Aggregator } from './harness.js';

/** Wrapped ids: `<upstream>.<base64url id>.<mac>`, header-safe. */
const WRAPPED = /^demo\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/;

export function registerAggregatorScenarios(label: string, start: () => Promise<Aggregator>): void {
  describe(`aggregator, demo upstream over ${label}`, () => {
    let aggregator: Aggregator;
    let alice: ConnectedClient;
    let bob: ConnectedClient;
    /** Alice's one ext-tasks session (one per client); it answers every elicitation with the name Ada. */
    let session: ReturnType<typeof taskSession>;
    const asked: unknown[] = [];

    before(async () => {
      aggregator = await start();
      alice = await connect({ kind: 'http', url: aggregator.url, headers: { 'x-user': 'alice' } });
      bob = await connect({ kind: 'http', url: aggregator.url, headers: { 'x-user': 'bob' } });
      session = taskSession(alice, async (request) => {
        asked.push(request);
        return { action: 'accept', content: { name: 'Ada' } } as never;
      });
    });
    after(async () => {
      await alice?.close();
      await bob?.close();
      await aggregator?.close();
    });

    it('lists the upstream tools as x_demo_<tool> with their schemas', async () => {
      const { tools } = await alice.client.listTools();
      assert.deepEqual(tools.map((tool) => tool.name).sort(), DEMO_TOOLS);
      const sleep = tools.find((tool) => tool.name === 'x_demo_sleep')!;
      assert.deepEqual(sleep.inputSchema.required, ['ms']);
      assert.match(sleep.description ?? '', /Sleeps/);
    });

    it('passthrough: the upstream task comes back under a wrapped id and settles completed', async () => {
      const execution = await session.callTool('x_demo_sleep', { ms: 400, message: 'through the aggregator' });
      const { outcome } = await execution.settle();
      assert.equal(outcome.status, 'completed');
      assert.match(outcome.task!.taskId, WRAPPED);
      assert.deepEqual(outcome.result, { resultType: 'complete', content: [{ type: 'text', text: 'through the aggregator' }] });
      // The create answer and every tasks/get are valid V2 shapes.
      const create = alice.exchanges.find(
        (exchange) =>
          exchange.method === 'tools/call' &&
          (exchange.response?.result as { taskId?: string } | undefined)?.taskId === outcome.task!.taskId,
      );
      assert.equal((create!.response!.result as { resultType: string }).resultType, 'task');
      const got = resultOf(await getTask(alice, outcome.task!.taskId));
      assert.equal(got.taskId, outcome.task!.taskId);
      assert.equal(got.resultType, 'complete');
      assert.ok(GetTaskResultV2Schema.safeParse(got).success, JSON.stringify(got));
      assert.equal(
        (got._meta as Record<string, { name: string }>)['io.modelcontextprotocol/serverInfo']!.name,
        'taskvisor',
        'our serverInfo, not the upstream one',
      );
    });

    it('input round trip: the upstream asks for a name through the task, tasks/update answers it', async () => {
      const execution = await session.callTool('x_demo_hello_world', {});
      const { outcome } = await execution.settle();
      assert.equal(outcome.status, 'completed', JSON.stringify(outcome));
      assert.deepEqual(outcome.result, { resultType: 'complete', content: [{ type: 'text', text: 'Hello, Ada!' }] });
      assert.equal(asked.length, 1);
      const update = alice.exchanges.find((exchange) => exchange.method === 'tasks/update');
      assert.match((update!.params as { taskId: string }).taskId, WRAPPED);
      // A malformed answer is the upstream's own -32602 about the answer, not a "task not found".
      const asking = String(resultOf(await callTool(alice, 'x_demo_hello_world', {})).taskId);
      await waitFor(async () => resultOf(await getTask(alice, asking)).status === 'input_required', {
        timeoutMs: 10_000,
        what: 'input_required',
      });
      const bad = errorOf(
        await rawRequest(alice, {
          method: 'tasks/update',
          params: { taskId: asking, inputResponses: { name: { action: 'maybe' } }, _meta: envelope() },
        }),
      );
      assert.equal(bad.code, -32602);
      assert.match(bad.message, /inputResponses\.name/);
      await rawRequest(alice, { method: 'tasks/cancel', params: { taskId: asking, _meta: envelope() } });
    });

    it('cancel: tasks/cancel of a wrapped id cancels the upstream task', async () => {
      const execution = await session.callTool('x_demo_sleep', { ms: 60_000 });
      await execution.cancel();
      const { outcome } = await execution.settle();
      assert.equal(outcome.status, 'cancelled');
      const taskId = (alice.exchanges.findLast((exchange) => exchange.method === 'tasks/cancel')!.params as { taskId: string }).taskId;
      assert.match(taskId, WRAPPED);
      const got = resultOf(await getTask(alice, taskId));
      assert.equal(got.status, 'cancelled', 'the upstream says so too');
    });

    it('a failing upstream task ends failed with the upstream error', async () => {
      const created = resultOf(await callTool(alice, 'x_demo_sleep', { ms: 300 }));
      assert.match(String(created.taskId), WRAPPED);
      const failing = await callTool(alice, 'x_demo_fail', { code: -32050, message: 'upstream says no' });
      assert.deepEqual(errorOf(failing), { code: -32050, message: 'upstream says no' });
    });

    it('forged, altered and other-principal wrapped ids get exactly the unknown-id -32602', async () => {
      const created = resultOf(await callTool(alice, 'x_demo_sleep', { ms: 5_000 }));
      const id = String(created.taskId);
      const unknown = errorOf(await getTask(alice, '0123456789abcdef0123456789abcdef'));
      assert.equal(unknown.code, -32602);
      const [upstream, inner, mac] = id.split('.') as [string, string, string];
      const flip = (text: string) => (text[0] === 'A' ? 'B' : 'A') + text.slice(1);
      const variants = [
        `${upstream}.${inner}.${flip(mac)}`, // altered MAC
        `${upstream}.${flip(inner)}.${mac}`, // altered upstream id
        `other.${inner}.${mac}`, // another upstream
        `demo.${Buffer.from('made-up').toString('base64url')}.AAAAAAAAAAAAAAAAAAAAAA`, // forged
      ];
      for (const variant of variants) {
        assert.deepEqual(errorOf(await getTask(alice, variant)), unknown, variant);
        assert.deepEqual(
          errorOf(await rawRequest(alice, { method: 'tasks/cancel', params: { taskId: variant, _meta: envelope() } })),
          unknown,
          variant,
        );
      }
      // Bob presents Alice's genuine id: it is not his.
      assert.deepEqual(errorOf(await getTask(bob, id)), unknown);
      assert.deepEqual(errorOf(await rawRequest(bob, { method: 'tasks/cancel', params: { taskId: id, _meta: envelope() } })), unknown);
      assert.deepEqual(
        errorOf(await rawRequest(bob, { method: 'tasks/update', params: { taskId: id, inputResponses: {}, _meta: envelope() } })),
        unknown,
      );
      // And the task is still Alice's, untouched.
      assert.equal(resultOf(await getTask(alice, id)).status, 'working');
      await rawRequest(alice, { method: 'tasks/cancel', params: { taskId: id, _meta: envelope() } });
    });

    it('listen relay: a listen naming a wrapped id gets the upstream changes as notifications/tasks with the wrapped id', async () => {
      const listener = await connect({ kind: 'http', url: aggregator.url, headers: { 'x-user': 'alice' } });
      const frames: Array<Record<string, unknown>> = [];
      listener.client.fallbackNotificationHandler = async (notification) => {
        frames.push(notification);
      };
      try {
        const id = String(resultOf(await callTool(alice, 'x_demo_hello_world', {})).taskId);
        const foreign = String(resultOf(await callTool(bob, 'x_demo_sleep', { ms: 5_000 })).taskId);
        const subscription = await listener.client.listen({ taskIds: [id, foreign] } as never);
        const frame = (status: string) =>
          waitFor(
            () =>
              frames.find((f) => f.method === 'notifications/tasks' && (f.params as { status: string }).status === status)?.params as
                Record<string, unknown> | undefined,
            {
              timeoutMs: 10_000,
              what: `a ${status} frame`,
            },
          );
        const asking = await frame('input_required');
        assert.equal(asking.taskId, id);
        assert.deepEqual(Object.keys(asking.inputRequests as object), ['name']);
        resultOf(
          await rawRequest(alice, {
            method: 'tasks/update',
            params: { taskId: id, inputResponses: { name: { action: 'accept', content: { name: 'Grace' } } }, _meta: envelope() },
          }),
        );
        const done = await frame('completed');
        assert.equal(done.taskId, id);
        assert.deepEqual(done.result, { content: [{ type: 'text', text: 'Hello, Grace!' }], resultType: 'complete' });
        await subscription.close();
        const wire = listener.received as Array<Record<string, unknown>>;
        const ack = wire.find((m) => m.method === 'notifications/subscriptions/acknowledged')!.params as {
          notifications: { taskIds: string[] };
        };
        assert.deepEqual(ack.notifications.taskIds, [id], "bob's id is left out like an unknown one");
        for (const message of wire.filter((m) => m.method === 'notifications/tasks')) {
          assert.ok(TaskStatusNotificationV2Schema.safeParse(message).success, JSON.stringify(message));
          const params = message.params as Record<string, unknown>;
          assert.equal(params.taskId, id);
          assert.equal(params.resultType, undefined);
          assert.ok((params._meta as Record<string, unknown>)['io.modelcontextprotocol/subscriptionId'] !== undefined);
        }
        await rawRequest(bob, { method: 'tasks/cancel', params: { taskId: foreign, _meta: envelope() } });
      } finally {
        await listener.close();
      }
    });

    it('collapse: a 2026-07-28 client without the capability gets the final result', async () => {
      const plain = await connect({ kind: 'http', url: aggregator.url }, { elicitation: { form: {} } });
      try {
        const result = await plain.client.callTool({ name: 'x_demo_sleep', arguments: { ms: 500, message: 'collapsed' } });
        assert.deepEqual(result.content, [{ type: 'text', text: 'collapsed' }]);
        for (const exchange of plain.exchanges) {
          assert.notEqual((exchange.response?.result as { resultType?: string } | undefined)?.resultType, 'task');
        }
      } finally {
        await plain.close();
      }
    });

    it('collapse: a v1 SDK (2025-11-25) client gets the final result', async () => {
      const client = new V1Client({ name: 'legacy', version: '1.0.0' }, { capabilities: {} });
      await client.connect(new V1HttpTransport(new URL(aggregator.url)));
      try {
        const { tools } = await client.listTools();
        assert.ok(tools.some((tool) => tool.name === 'x_demo_sleep'));
        const result = await client.callTool({ name: 'x_demo_sleep', arguments: { ms: 400, message: 'legacy collapsed' } });
        assert.deepEqual(result.content, [{ type: 'text', text: 'legacy collapsed' }]);
        const failed = client.callTool({ name: 'x_demo_fail', arguments: { message: 'legacy failure' } });
        await assert.rejects(failed, /legacy failure/);
      } finally {
        await client.close();
      }
    });

    it('-32021 naming the capability the upstream needs (elicitation.form), not the tasks extension, for a caller without it', async () => {
      const plain = await connect({ kind: 'http', url: aggregator.url }, {});
      try {
        const outcome = await rawRequest(plain, {
          method: 'tools/call',
          params: { name: 'x_demo_hello_world', arguments: {}, _meta: envelope({}) },
        });
        const error = errorOf(outcome);
        assert.equal(error.code, -32021);
        assert.match(error.message, /x_demo_hello_world needs a capability this request did not declare/);
        assert.match(error.message, /elicitation\.form/);
        assert.doesNotMatch(error.message, /io\.modelcontextprotocol\/tasks/, 'declaring the extension would not help');
      } finally {
        await plain.close();
      }
    });

    it("T-08 through the collapse: a caller with elicitation.form but no extension gets the upstream task's input request as MRTR, and its retry answers that same task", async () => {
      const caps = { elicitation: { form: {} } };
      const plain = await connect({ kind: 'http', url: aggregator.url }, caps);
      try {
        const first = resultOf(
          await rawRequest(plain, { method: 'tools/call', params: { name: 'x_demo_hello_world', arguments: {}, _meta: envelope(caps) } }),
        );
        assert.equal(first.resultType, 'input_required', JSON.stringify(first));
        assert.deepEqual(Object.keys(first.inputRequests as object), ['name']);
        assert.equal(typeof first.requestState, 'string');
        assert.ok(!('taskId' in first));
        const retry = resultOf(
          await rawRequest(plain, {
            method: 'tools/call',
            params: {
              name: 'x_demo_hello_world',
              arguments: {},
              inputResponses: { name: { action: 'accept', content: { name: 'Luca' } } },
              requestState: first.requestState,
              _meta: envelope(caps),
            },
          }),
        );
        assert.deepEqual(retry.content, [{ type: 'text', text: 'Hello, Luca!' }]);
        // The requestState is bound to its caller (I-7): bob cannot answer alice's upstream task.
        const stolen = await rawRequest(bob, {
          method: 'tools/call',
          params: {
            name: 'x_demo_hello_world',
            arguments: {},
            inputResponses: { name: { action: 'accept', content: { name: 'Mallory' } } },
            requestState: first.requestState,
            _meta: envelope(caps),
          },
        });
        assert.equal(errorOf(stolen).code, -32602);
        // A repeated retry reads the same finished upstream task: the same answer, the tool did not run twice.
        const again = resultOf(
          await rawRequest(plain, {
            method: 'tools/call',
            params: {
              name: 'x_demo_hello_world',
              arguments: {},
              inputResponses: { name: { action: 'accept', content: { name: 'Someone else' } } },
              requestState: first.requestState,
              _meta: envelope(caps),
            },
          }),
        );
        assert.deepEqual(again.content, [{ type: 'text', text: 'Hello, Luca!' }]);
      } finally {
        await plain.close();
      }
    });

    it('a v1 SDK (2025-11-25) client that cannot answer elicitation is told which capability, not to declare the tasks extension', async () => {
      const client = new V1Client({ name: 'legacy', version: '1.0.0' }, { capabilities: {} });
      await client.connect(new V1HttpTransport(new URL(aggregator.url)));
      try {
        const error = await client.callTool({ name: 'x_demo_hello_world', arguments: {} }).then(
          (result) => new Error(`expected an error, got ${JSON.stringify(result)}`),
          (error: Error) => error,
        );
        assert.match(error.message, /elicitation/);
        assert.doesNotMatch(error.message, /io\.modelcontextprotocol\/tasks/);
      } finally {
        await client.close();
      }
    });

    it("argument errors name the tool the caller called (x_demo_sleep), not the upstream's name for it", async () => {
      const error = errorOf(await callTool(alice, 'x_demo_sleep', { ms: 'soon' }));
      assert.equal(error.code, -32602);
      assert.match(error.message, /tool x_demo_sleep\b/);
      assert.doesNotMatch(error.message, /tool sleep\b/);
    });

    it('the health API reports the upstream ready with its tool count', () => {
      const [status] = aggregator.runtime.upstreams!.status();
      assert.equal(status!.state, 'ready');
      assert.equal(status!.toolCount, DEMO_TOOLS.length);
      assert.equal(status!.tasks, true);
      assert.equal(status!.protocolVersion, '2026-07-28');
    });

    it('no tasks/list fan-out: tasks/list stays -32601', async () => {
      const error = errorOf(await rawRequest(alice, { method: 'tasks/list', params: { _meta: envelope() } }));
      assert.equal(error.code, -32601);
    });
  });
}
