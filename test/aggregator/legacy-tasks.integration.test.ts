/**
 * The bridge between the two task generations: server-everything
 * (`@modelcontextprotocol/server-everything`, a v1 SDK server speaking
 * 2025-11-25) lists `simulate-research-query` with `execution.taskSupport:
 * "required"`. Through taskvisor a 2026-07-28 client with the tasks
 * extension gets a 2026-07-28 task (polled, pushed on a listen stream,
 * cancelled upstream); a client without the extension and a v1 client get
 * the final result (collapsed). The upstream is the real package, a stdio
 * child of the aggregator.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRequire } from 'node:module';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { createTask, errorOf, getTask, rawRequest, resultOf, waitFor } from '../support/processes.js';
import { startAggregator, type Aggregator } from './harness.js';

const EVERYTHING = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js');
const RESEARCH = 'x_everything_simulate-research-query';

describe('2025-11-25 task-augmented upstream tools as 2026-07-28 tasks (server-everything)', () => {
  let aggregator: Aggregator;
  let tasksClient: ConnectedClient;
  let plainClient: ConnectedClient;

  before(async () => {
    aggregator = await startAggregator([{ name: 'everything', type: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'] }]);
    tasksClient = await connect({ kind: 'http', url: aggregator.url });
    plainClient = await connect({ kind: 'http', url: aggregator.url }, {});
  });
  after(async () => {
    await tasksClient?.close();
    await plainClient?.close();
    await aggregator?.close();
  });

  it('lists the tool without the 2025-11-25 execution field; the upstream is 2025-11-25', async () => {
    const status = aggregator.runtime.upstreams!.status().find((entry) => entry.name === 'everything')!;
    assert.equal(status.protocolVersion, '2025-11-25');
    const tool = (await tasksClient.client.listTools()).tools.find((entry) => entry.name === RESEARCH);
    assert.ok(tool, 'the task-augmented tool is listed');
    assert.equal((tool as Record<string, unknown>).execution, undefined);
  });

  it('a client with the extension gets a task: wrapped id, 2026-07-28 shapes, polled to its result', async () => {
    const created = resultOf(
      await rawRequest(tasksClient, { method: 'tools/call', params: { name: RESEARCH, arguments: { topic: 'tides' }, _meta: envelope() } }),
    );
    assert.equal(created.resultType, 'task');
    assert.equal(created.status, 'working');
    assert.match(String(created.taskId), /^everything\./, 'a wrapped id');
    assert.equal(created.ttlMs, 300_000, '2025-11-25 ttl becomes ttlMs');
    assert.equal(created.pollIntervalMs, 1000, 'pollInterval becomes pollIntervalMs');
    assert.equal('task' in created, false, 'flat, not the nested 2025-11-25 shape');
    const taskId = String(created.taskId);
    const messages = new Set<string>();
    const done = await waitFor(
      async () => {
        const task = resultOf(await getTask(tasksClient, taskId));
        assert.equal(task.resultType, 'complete');
        assert.equal(task.taskId, taskId);
        if (typeof task.statusMessage === 'string') messages.add(task.statusMessage);
        return task.status === 'completed' ? task : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 300, what: 'the research task to complete' },
    );
    const result = done.result as { resultType: string; content: Array<{ type: string; text: string }>; _meta?: unknown };
    assert.equal(result.resultType, 'complete');
    assert.match(result.content[0]!.text, /# Research Report: tides/);
    assert.equal(result._meta, undefined, 'the 2025-11-25 related-task _meta is not passed on');
    assert.ok(messages.size >= 2, `the upstream's stage messages came through: ${[...messages].join(' | ')}`);
  });

  it('pushes its changes on a listen stream under the wrapped id', async () => {
    const frames: Array<Record<string, unknown>> = [];
    tasksClient.client.fallbackNotificationHandler = async (notification) => {
      if (notification.method === 'notifications/tasks') frames.push(notification.params as Record<string, unknown>);
    };
    const taskId = await createTask(tasksClient, RESEARCH, { topic: 'pushed' });
    const subscription = await tasksClient.client.listen({ taskIds: [taskId] } as never);
    try {
      const done = await waitFor(() => frames.find((frame) => frame.taskId === taskId && frame.status === 'completed'), {
        timeoutMs: 20_000,
        what: 'the completed frame',
      });
      assert.match(JSON.stringify(done.result), /Research Report: pushed/);
      assert.equal(done.resultType, undefined, 'a frame carries no resultType of its own (T-31)');
      assert.ok(frames.some((frame) => frame.status === 'working' && typeof frame.statusMessage === 'string'));
    } finally {
      await subscription.close();
      delete tasksClient.client.fallbackNotificationHandler;
    }
  });

  it('tasks/cancel goes upstream: the task ends cancelled; a second cancel is refused as the upstream refuses it', async () => {
    const taskId = await createTask(tasksClient, RESEARCH, { topic: 'cancelled' });
    resultOf(await rawRequest(tasksClient, { method: 'tasks/cancel', params: { taskId, _meta: envelope() } }));
    const task = resultOf(await getTask(tasksClient, taskId));
    assert.equal(task.status, 'cancelled');
    assert.equal(task.result, undefined);
    const again = errorOf(await rawRequest(tasksClient, { method: 'tasks/cancel', params: { taskId, _meta: envelope() } }));
    assert.equal(typeof again.code, 'number');
  });

  it("input a 2025-11-25 task asks for (elicitation/create on tasks/result) becomes the task's inputRequests; tasks/update answers it", async () => {
    const taskId = await createTask(tasksClient, RESEARCH, { topic: 'python', ambiguous: true });
    const waiting = await waitFor(
      async () => {
        const task = resultOf(await getTask(tasksClient, taskId));
        return task.status === 'input_required' ? task : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 300, what: 'the research task to ask for a clarification' },
    );
    const requests = waiting.inputRequests as Record<string, { method: string; params: Record<string, unknown> }>;
    const keys = Object.keys(requests);
    assert.equal(keys.length, 1, 'T-12: the outstanding request is shown');
    const [key] = keys as [string];
    assert.equal(requests[key]!.method, 'elicitation/create');
    assert.match(String(requests[key]!.params.message), /could have multiple interpretations/);
    assert.deepEqual(Object.keys((requests[key]!.params.requestedSchema as { properties: object }).properties), ['interpretation']);
    assert.equal(requests[key]!.params._meta, undefined, 'the 2025-11-25 related-task _meta is not passed on');
    // T-13: an unanswered request is shown again under the same key.
    const again = resultOf(await getTask(tasksClient, taskId));
    assert.deepEqual(Object.keys(again.inputRequests as object), [key]);
    // T-22: an answer under a key not outstanding is ignored; a malformed answer to an outstanding one is refused.
    resultOf(
      await rawRequest(tasksClient, {
        method: 'tasks/update',
        params: { taskId, inputResponses: { nope: { action: 'accept' } }, _meta: envelope() },
      }),
    );
    const malformed = errorOf(
      await rawRequest(tasksClient, { method: 'tasks/update', params: { taskId, inputResponses: { [key]: 'snake' }, _meta: envelope() } }),
    );
    assert.equal(malformed.code, -32602);
    const ack = resultOf(
      await rawRequest(tasksClient, {
        method: 'tasks/update',
        params: { taskId, inputResponses: { [key]: { action: 'accept', content: { interpretation: 'snake' } } }, _meta: envelope() },
      }),
    );
    assert.equal(ack.resultType, 'complete');
    const done = await waitFor(
      async () => {
        const task = resultOf(await getTask(tasksClient, taskId));
        assert.ok(task.status !== 'input_required' || Object.keys(task.inputRequests as object).length > 0, 'T-12');
        assert.ok(!Object.keys((task.inputRequests as object | undefined) ?? {}).includes(key), 'an answered key is gone (T-18)');
        return task.status === 'completed' ? task : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 300, what: 'the clarified task to complete' },
    );
    assert.match(JSON.stringify(done.result), /Research Report: python \(snake\)/, 'the upstream received the answer');
  });

  it("a collapsed call relays a 2025-11-25 task's input request as an MRTR round to a caller that declared elicitation.form", async () => {
    const asked: string[] = [];
    const formClient = await connect({ kind: 'http', url: aggregator.url }, { elicitation: { form: {} } });
    formClient.client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(String(request.params.message));
      return { action: 'accept', content: { interpretation: 'comedy' } };
    });
    try {
      const result = await formClient.client.callTool({ name: RESEARCH, arguments: { topic: 'python', ambiguous: true } });
      assert.notEqual(result.isError, true);
      assert.match((result.content as Array<{ text: string }>)[0]!.text, /Research Report: python \(comedy\)/);
      assert.equal(asked.length, 1);
      assert.match(asked[0]!, /could have multiple interpretations/);
    } finally {
      await formClient.close();
    }
  });

  it('cancelling a task that waits for input ends it cancelled upstream', async () => {
    const taskId = await createTask(tasksClient, RESEARCH, { topic: 'python', ambiguous: true });
    await waitFor(
      async () => {
        const task = resultOf(await getTask(tasksClient, taskId));
        return task.status === 'input_required' ? task : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 300, what: 'the research task to ask for a clarification' },
    );
    resultOf(await rawRequest(tasksClient, { method: 'tasks/cancel', params: { taskId, _meta: envelope() } }));
    const task = resultOf(await getTask(tasksClient, taskId));
    assert.equal(task.status, 'cancelled');
  });

  it('an elicitation/create that names no task (a synchronous upstream tool asking mid-call) is declined, shown to nobody (I-7)', async () => {
    const result = await plainClient.client.callTool({ name: 'x_everything_trigger-elicitation-request', arguments: {} });
    assert.match(JSON.stringify(result.content), /User declined to provide the requested information/);
  });

  it("another principal's use of the wrapped id is an unknown id", async () => {
    const taskId = await createTask(tasksClient, RESEARCH, { topic: 'mine' });
    const bob = await connect({ kind: 'http', url: aggregator.url, headers: { 'x-user': 'bob' } });
    try {
      const error = errorOf(await getTask(bob, taskId));
      assert.equal(error.code, -32602);
      assert.equal(error.message, 'Failed to retrieve task: Task not found');
    } finally {
      await bob.close();
      await rawRequest(tasksClient, { method: 'tasks/cancel', params: { taskId, _meta: envelope() } });
    }
  });

  it('a client without the extension gets the final result (collapsed)', async () => {
    const result = await plainClient.client.callTool({ name: RESEARCH, arguments: { topic: 'collapsed' } });
    assert.notEqual(result.isError, true);
    assert.match((result.content as Array<{ text: string }>)[0]!.text, /# Research Report: collapsed/);
  });

  it('a collapsed call whose caller gives up is cancelled upstream (2025-11-25 tasks/cancel)', async () => {
    const connection = aggregator.runtime.upstreams!.connection('everything')!;
    // Every page: earlier tests left tasks upstream.
    const upstreamTasks = async () => {
      const tasks: Array<{ taskId: string; status: string }> = [];
      let cursor: unknown;
      do {
        const outcome = await connection.request('tasks/list', cursor === undefined ? {} : { cursor }, {});
        assert.equal(outcome.kind, 'result');
        if (outcome.kind !== 'result') break;
        tasks.push(...((outcome.result.tasks as typeof tasks | undefined) ?? []));
        cursor = outcome.result.nextCursor;
      } while (typeof cursor === 'string');
      return tasks;
    };
    const before = new Set((await upstreamTasks()).map((task) => task.taskId));
    const controller = new AbortController();
    const call = plainClient.client.callTool({ name: RESEARCH, arguments: { topic: 'abandoned' } }, { signal: controller.signal });
    const mine = await waitFor(async () => (await upstreamTasks()).find((task) => !before.has(task.taskId)), {
      timeoutMs: 10_000,
      what: 'the upstream task to exist',
    });
    assert.equal(mine.status, 'working');
    controller.abort();
    await assert.rejects(call);
    await waitFor(async () => (await upstreamTasks()).find((task) => task.taskId === mine.taskId && task.status === 'cancelled'), {
      timeoutMs: 10_000,
      what: 'the upstream task to be cancelled',
    });
  });

  it('a v1 (2025-11-25) client gets the final result (collapsed)', async () => {
    const v1 = new V1Client({ name: 'v1-caller', version: '1.0.0' });
    await v1.connect(new V1HttpTransport(new URL(aggregator.url)));
    try {
      const tools = await v1.listTools();
      assert.ok(tools.tools.some((tool) => tool.name === RESEARCH));
      const result = await v1.callTool({ name: RESEARCH, arguments: { topic: 'legacy caller' } });
      assert.notEqual(result.isError, true);
      assert.match((result.content as Array<{ text: string }>)[0]!.text, /# Research Report: legacy caller/);
    } finally {
      await v1.close();
    }
  });
});
