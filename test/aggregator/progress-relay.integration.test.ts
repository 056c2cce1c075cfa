/**
 * Upstream progress and log messages reach the caller:
 * server-everything's `trigger-long-running-operation` sends
 * `notifications/progress` for the progress token taskvisor sends upstream;
 * taskvisor relays each step to the caller's own `progressToken`, for a
 * 2026-07-28 client with and without the tasks extension and for a v1
 * client. With `toggle-simulated-logging` on, the upstream logs every 5 s:
 * a message that arrives while one call is in flight reaches that caller as
 * `notifications/message`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRequire } from 'node:module';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { fileURLToPath } from 'node:url';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { createTask, getTask, rawRequest, REPO_ROOT, resultOf, TSX_IMPORT, waitFor } from '../support/processes.js';
import { startAggregator, type Aggregator } from './harness.js';

const EVERYTHING = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js');
const LONG = 'x_everything_trigger-long-running-operation';

/** As the SDKs type a progress notification's params (zod: optional members may be `undefined`). */
type Progress = { progress: number; total?: number | undefined; message?: string | undefined };

describe('upstream progress and log messages are relayed to the caller (server-everything)', () => {
  let aggregator: Aggregator;
  let tasksClient: ConnectedClient;
  let plainClient: ConnectedClient;

  before(async () => {
    // Never promoted: these calls stay synchronous for a caller with the extension too (promotion: promoted-calls test).
    aggregator = await startAggregator([
      { name: 'everything', type: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'], promotion: { taskBehavior: 'never' } },
    ]);
    tasksClient = await connect({ kind: 'http', url: aggregator.url });
    plainClient = await connect({ kind: 'http', url: aggregator.url }, {});
  });
  after(async () => {
    await tasksClient?.close();
    await plainClient?.close();
    await aggregator?.close();
  });

  for (const [label, client] of [
    ['a 2026-07-28 client without the extension', () => plainClient],
    ['a 2026-07-28 client with the extension', () => tasksClient],
  ] as const) {
    it(`${label}: every progress step reaches its progressToken`, async () => {
      const steps: Progress[] = [];
      const result = await client().client.callTool(
        { name: LONG, arguments: { duration: 0.8, steps: 4 } },
        {
          onprogress: (progress: Progress) => steps.push(progress),
        },
      );
      assert.match(JSON.stringify(result.content), /Long running operation completed/);
      assert.deepEqual(
        steps.map((step) => [step.progress, step.total]),
        [
          [1, 4],
          [2, 4],
          [3, 4],
          [4, 4],
        ],
      );
    });
  }

  it('a v1 client: every progress step reaches its progressToken', async () => {
    const v1 = new V1Client({ name: 'v1-progress', version: '1.0.0' });
    await v1.connect(new V1HttpTransport(new URL(aggregator.url)));
    try {
      const steps: Progress[] = [];
      await v1.callTool({ name: LONG, arguments: { duration: 0.8, steps: 4 } }, undefined, {
        onprogress: (progress) => steps.push(progress),
      });
      assert.deepEqual(
        steps.map((step) => step.progress),
        [1, 2, 3, 4],
      );
    } finally {
      await v1.close();
    }
  });

  it('a call without a progressToken gets no progress notifications', async () => {
    const seen: string[] = [];
    plainClient.client.fallbackNotificationHandler = async (notification) => {
      seen.push(notification.method);
    };
    try {
      await plainClient.client.callTool({ name: LONG, arguments: { duration: 0.4, steps: 2 } });
      assert.equal(seen.includes('notifications/progress'), false);
    } finally {
      delete plainClient.client.fallbackNotificationHandler;
    }
  });

  it("the upstream's log messages sent while a call is the only one in flight reach that caller as notifications/message", async () => {
    const v1 = new V1Client({ name: 'v1-logs', version: '1.0.0' });
    await v1.connect(new V1HttpTransport(new URL(aggregator.url)));
    const logs: Array<{ level: string; data: unknown }> = [];
    v1.fallbackNotificationHandler = async (notification) => {
      if (notification.method === 'notifications/message') logs.push(notification.params as never);
    };
    // Simulated logging: one message every 5 s to taskvisor's upstream session.
    await v1.callTool({ name: 'x_everything_toggle-simulated-logging', arguments: {} });
    try {
      await v1.callTool({ name: LONG, arguments: { duration: 6, steps: 2 } });
      assert.ok(logs.length >= 1, 'a message sent during the 6 s call reached its caller');
      assert.match(String(logs[0]!.data), /message/);
      assert.equal(typeof logs[0]!.level, 'string');
    } finally {
      await v1.callTool({ name: 'x_everything_toggle-simulated-logging', arguments: {} }); // off again
      await v1.close();
    }
  });
});

describe("a forwarded 2025-11-25 task's upstream progress becomes its statusMessage", () => {
  let aggregator: Aggregator;
  let tasksClient: ConnectedClient;
  let plainClient: ConnectedClient;

  before(async () => {
    aggregator = await startAggregator([
      {
        name: 'counter',
        type: 'stdio',
        command: process.execPath,
        args: ['--import', TSX_IMPORT, fileURLToPath(new URL('./fixtures/v1-task-server.ts', import.meta.url))],
        cwd: REPO_ROOT,
      },
    ]);
    tasksClient = await connect({ kind: 'http', url: aggregator.url });
    plainClient = await connect({ kind: 'http', url: aggregator.url }, {});
  });
  after(async () => {
    await tasksClient?.close();
    await plainClient?.close();
    await aggregator?.close();
  });

  it('tasks/get shows "n/total: message" while it works, then the result', async () => {
    const taskId = await createTask(tasksClient, 'x_counter_count', { steps: 8, stepMs: 250 });
    const messages = new Set<string>();
    const done = await waitFor(
      async () => {
        const task = resultOf(await getTask(tasksClient, taskId));
        if (typeof task.statusMessage === 'string') messages.add(task.statusMessage);
        return task.status === 'completed' ? task : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100, what: 'the counting task to complete' },
    );
    assert.match(JSON.stringify(done.result), /counted to 8/);
    const progress = [...messages].filter((message) => /^\d\/8: step \d$/.test(message));
    assert.ok(progress.length >= 2, `progress shown as statusMessage: ${[...messages].join(' | ')}`);
  });

  it("the caller's W3C traceparent reaches the 2025-11-25 upstream with the task-augmented call", async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const created = resultOf(
      await rawRequest(tasksClient, {
        method: 'tools/call',
        params: { name: 'x_counter_count', arguments: { steps: 1, stepMs: 10 }, _meta: { ...envelope(), traceparent } },
      }),
    );
    const taskId = String(created.taskId);
    const done = await waitFor(
      async () => {
        const task = resultOf(await getTask(tasksClient, taskId));
        return task.status === 'completed' ? task : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100, what: 'the counting task to complete' },
    );
    assert.match(JSON.stringify(done.result), new RegExp(`counted to 1 under ${traceparent}`));
  });

  it("a collapsed call relays the task-long progress to the caller's progressToken", async () => {
    const steps: Progress[] = [];
    const result = await plainClient.client.callTool(
      { name: 'x_counter_count', arguments: { steps: 3, stepMs: 100 } },
      {
        onprogress: (progress: Progress) => steps.push(progress),
      },
    );
    assert.match(JSON.stringify(result.content), /counted to 3/);
    assert.deepEqual(
      steps.map((step) => step.message),
      ['step 1', 'step 2', 'step 3'],
    );
  });
});
