/**
 * Slow calls to an upstream without Tasks become taskvisor tasks (docs/aggregator.md
 * "Promoted calls"): server-everything (a v1 SDK server, 2025-11-25, no task
 * support on these tools) over stdio and over Streamable HTTP. A caller that
 * declared the extension (the ext-tasks client) gets a task of taskvisor's own
 * whose statusMessage follows the upstream's progress and whose input request
 * is the upstream's `elicitation/create`; a 2026-07-28 client without the
 * extension and a v1 client get the plain result, unchanged.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRequire } from 'node:module';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { GetTaskResultV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { connect, envelope, taskSession, type ConnectedClient } from '../support/extTasksClient.js';
import { callTool, freePort, getTask, rawRequest, resultOf, spawnNode, waitFor, type Child } from '../support/processes.js';
import { openHttpListen } from '../support/rawWire.js';
import { startAggregator, type Aggregator } from './harness.js';
import type { UpstreamSpec } from '../../src/upstreams/UpstreamSpec.js';

const EVERYTHING = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js');
const LONG = 'x_everything_trigger-long-running-operation';
const ELICIT = 'x_everything_trigger-elicitation-request';
const SAMPLE = 'x_everything_trigger-sampling-request';
const WITH_SAMPLING = {
  elicitation: { form: {} },
  sampling: {},
  extensions: { 'io.modelcontextprotocol/tasks': {} },
};

/** server-everything over Streamable HTTP on a free port. */
async function startHttpEverything(): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const child = spawnNode([EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) } });
  await child.waitForOutput(/listening on port/);
  return { child, url: `http://127.0.0.1:${port}/mcp` };
}

const transports: Array<[label: string, spec: () => Promise<{ spec: UpstreamSpec; stop?: () => Promise<void> }>]> = [
  ['stdio', async () => ({ spec: { name: 'everything', type: 'stdio', command: process.execPath, args: [EVERYTHING, 'stdio'] } })],
  [
    'Streamable HTTP',
    async () => {
      const { child, url } = await startHttpEverything();
      return { spec: { name: 'everything', type: 'streamable-http', url }, stop: async () => void (await child.kill()) };
    },
  ],
];

for (const [label, makeSpec] of transports) {
  describe(`promoted upstream calls, server-everything over ${label}`, () => {
    let aggregator: Aggregator;
    let stopUpstream: (() => Promise<void>) | undefined;
    let tasksClient: ConnectedClient;
    let plainClient: ConnectedClient;
    /** The one ext-tasks session of the tasks client (one per client); it answers every elicitation as Ada Lovelace. */
    let session: ReturnType<typeof taskSession>;
    const asked: unknown[] = [];

    before(async () => {
      const { spec, stop } = await makeSpec();
      stopUpstream = stop;
      // Quick calls get a generous threshold (the machine may be loaded); the long operation a short one, get-sum is always a task.
      aggregator = await startAggregator([
        {
          ...spec,
          promotion: {
            promoteAfterMs: 5_000,
            tools: { 'trigger-long-running-operation': { promoteAfterMs: 100 }, 'get-sum': { taskBehavior: 'always' } },
          },
        },
      ]);
      tasksClient = await connect({ kind: 'http', url: aggregator.url }, WITH_SAMPLING);
      plainClient = await connect({ kind: 'http', url: aggregator.url }, {});
      session = taskSession(tasksClient, async (request) => {
        asked.push(request);
        return { action: 'accept', content: { name: 'Ada Lovelace', check: true } } as never;
      });
    });
    after(async () => {
      await tasksClient?.close();
      await plainClient?.close();
      await aggregator?.close();
      await stopUpstream?.();
    });

    it('a slow call becomes a task of taskvisor (a local id), its progress the statusMessage, its result stored', async () => {
      const created = resultOf(await callTool(tasksClient, LONG, { duration: 1.2, steps: 4 }));
      assert.equal(created.resultType, 'task');
      assert.equal(created.status, 'working');
      assert.doesNotMatch(String(created.taskId), /^everything\./, 'a task of taskvisor, not a wrapped upstream id');
      const taskId = String(created.taskId);
      const messages = new Set<string>();
      const done = await waitFor(
        async () => {
          const task = resultOf(await getTask(tasksClient, taskId));
          if (typeof task.statusMessage === 'string') messages.add(task.statusMessage);
          return task.status === 'completed' ? task : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 50, what: 'the promoted call to complete' },
      );
      assert.ok(GetTaskResultV2Schema.safeParse(done).success, JSON.stringify(done));
      assert.match(JSON.stringify(done.result), /Long running operation completed/);
      assert.equal((done.result as { resultType?: string }).resultType, 'complete');
      assert.ok(
        [...messages].some((message) => /^[1-4]\/4$/.test(message)),
        `progress as statusMessage: ${[...messages].join(' | ')}`,
      );
      // Stored: read again, the same result.
      assert.deepEqual(resultOf(await getTask(tasksClient, taskId)).result, done.result);
    });

    it('subscriptions/listen on the promoted task pushes its progress and its completion', async () => {
      const taskId = String(resultOf(await callTool(tasksClient, LONG, { duration: 1.2, steps: 4 })).taskId);
      const listen = await openHttpListen(aggregator.url, { taskIds: [taskId] });
      try {
        assert.equal(listen.status, 200);
        assert.deepEqual((listen.first?.params as { notifications?: unknown } | undefined)?.notifications, { taskIds: [taskId] });
        const frames: Array<Record<string, unknown>> = [];
        for await (const batch of listen.rest!) {
          for (const message of batch) if (message.method === 'notifications/tasks') frames.push(message.params as Record<string, unknown>);
          if (frames.some((frame) => frame.status === 'completed')) break;
        }
        assert.ok(
          frames.some((frame) => typeof frame.statusMessage === 'string' && /\/4$/.test(frame.statusMessage)),
          JSON.stringify(frames.map((frame) => frame.statusMessage)),
        );
        assert.match(JSON.stringify(frames.find((frame) => frame.status === 'completed')!.result), /Long running operation completed/);
      } finally {
        listen.close();
      }
    });

    it("a quick call stays synchronous; a tool configured 'always' is a task even when quick", async () => {
      const answer = resultOf(await callTool(tasksClient, 'x_everything_echo', { message: 'quick' }));
      assert.equal(answer.resultType, 'complete');
      assert.match(JSON.stringify(answer.content), /quick/);
      const created = resultOf(await callTool(tasksClient, 'x_everything_get-sum', { a: 2, b: 3 }));
      assert.equal(created.resultType, 'task');
      const done = await waitFor(
        async () => {
          const task = resultOf(await getTask(tasksClient, String(created.taskId)));
          return task.status === 'completed' ? task : undefined;
        },
        { timeoutMs: 15_000, what: 'the get-sum task' },
      );
      assert.match(JSON.stringify(done.result), /5/);
    });

    it('the ext-tasks client settles a promoted call like any task', async () => {
      const execution = await session.callTool(LONG, { duration: 0.6, steps: 2 });
      const { outcome } = await execution.settle();
      assert.equal(outcome.status, 'completed', JSON.stringify(outcome));
      assert.match(JSON.stringify(outcome.result), /Duration: 0.6 seconds, Steps: 2/);
    });

    it("the upstream's elicitation/create within the call becomes the task's input request; tasks/update answers it upstream", async () => {
      const execution = await session.callTool(ELICIT, {});
      const { outcome } = await execution.settle();
      assert.equal(outcome.status, 'completed', JSON.stringify(outcome));
      assert.equal(asked.length, 1);
      assert.match(JSON.stringify(asked[0]), /Please provide inputs/);
      assert.match(JSON.stringify(outcome.result), /Ada Lovelace/);
    });

    it('an upstream sampling/createMessage within the call is the task input request too (the caller declared sampling)', async () => {
      const created = resultOf(
        await rawRequest(tasksClient, {
          method: 'tools/call',
          params: { name: SAMPLE, arguments: { prompt: 'tides', maxTokens: 20 }, _meta: envelope(WITH_SAMPLING) },
        }),
      );
      assert.equal(created.resultType, 'task', JSON.stringify(created));
      const taskId = String(created.taskId);
      const waiting = await waitFor(
        async () => {
          const task = resultOf(await getTask(tasksClient, taskId));
          return task.status === 'input_required' ? task : undefined;
        },
        { timeoutMs: 15_000, what: 'the sampling request' },
      );
      const [key, request] = Object.entries(waiting.inputRequests as Record<string, { method: string }>)[0]!;
      assert.equal(request.method, 'sampling/createMessage');
      await rawRequest(tasksClient, {
        method: 'tasks/update',
        params: {
          taskId,
          inputResponses: { [key]: { role: 'assistant', content: { type: 'text', text: 'high and low' }, model: 'test-model' } },
          _meta: envelope(WITH_SAMPLING),
        },
      });
      const done = await waitFor(
        async () => {
          const task = resultOf(await getTask(tasksClient, taskId));
          return task.status === 'completed' || task.status === 'failed' ? task : undefined;
        },
        { timeoutMs: 15_000, what: 'the sampling call to end' },
      );
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.match(JSON.stringify(done.result), /high and low/);
    });

    it('a 2026-07-28 client without the extension gets the plain result, unchanged', async () => {
      const result = await plainClient.client.callTool({ name: LONG, arguments: { duration: 0.5, steps: 2 } });
      assert.match(JSON.stringify(result.content), /Long running operation completed/);
    });

    it('a v1 client gets the plain result, unchanged', async () => {
      const v1 = new V1Client({ name: 'v1-promoted', version: '1.0.0' });
      await v1.connect(new V1HttpTransport(new URL(aggregator.url)));
      try {
        const result = await v1.callTool({ name: LONG, arguments: { duration: 0.5, steps: 2 } });
        assert.match(JSON.stringify(result.content), /Long running operation completed/);
      } finally {
        await v1.close();
      }
    });
  });
}
