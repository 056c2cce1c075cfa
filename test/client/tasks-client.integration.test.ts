/**
 * `taskvisor/client` against a real taskvisor serving the demo
 * tools over real Streamable HTTP, WebSocket and a stdio child process:
 * direct results and tasks alike, status callbacks, input answered through a
 * callback, cancel through an AbortSignal, failed and isError outcomes,
 * following and cancelling a task created elsewhere, and settling through the
 * listen stream (a task finishes long before the server's polling hint).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  JsonRpcResponseError,
  TaskCancelledError,
  TaskFailedError,
  TasksClient,
  type TaskStatusUpdate,
  type TasksEndpoint,
} from '../../src/client/index.js';
import { createRuntime, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, listenWebSocket } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import demoTools from '../../examples/demo/tools.js';
import { REPO_ROOT, TSX_IMPORT } from '../support/processes.js';

const textOf = (result: { content?: unknown }) =>
  ((result.content ?? []) as Array<{ type: string; text?: string }>).map((block) => block.text ?? '').join('');

let runtime: TaskvisorRuntime;
const endpoints: Record<'http' | 'ws', string> = { http: '', ws: '' };
const closers: Array<() => Promise<unknown>> = [];

before(async () => {
  // A 20 s polling hint: a task that settles within a second was settled by the listen stream.
  runtime = createRuntime({ store: new MemoryTaskStore(), pollIntervalMs: 20_000, poll: { minMs: 20_000, maxMs: 20_000 } });
  runtime.use(...demoTools);
  await runtime.start();
  const http = await listenHttp(runtime, { port: 0 });
  const ws = await listenWebSocket(runtime, { port: 0 });
  endpoints.http = http.url;
  endpoints.ws = ws.url;
  closers.push(
    () => ws.close(),
    () => runtime.close(),
  );
});
after(async () => {
  for (const close of closers) await close();
});

async function withClient<T>(endpoint: TasksEndpoint, body: (client: TasksClient) => Promise<T>, options = {}): Promise<T> {
  const client = await TasksClient.connect(endpoint, { elicitation: true, ...options });
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

for (const kind of ['http', 'ws'] as const) {
  describe(`TasksClient over ${kind === 'http' ? 'Streamable HTTP' : 'WebSocket'}`, () => {
    const endpoint = () => ({ url: endpoints[kind] });

    it('a direct answer and a task both resolve to the result; the task reports its status and settles by push', async () => {
      await withClient(endpoint(), async (client) => {
        let becameTask = false;
        const echoed = await client.callTool('echo', { text: 'hi' }, { onTask: () => (becameTask = true) });
        assert.equal(textOf(echoed), 'hi');
        assert.equal(becameTask, false, 'echo never becomes a task');

        const seen: TaskStatusUpdate[] = [];
        let taskId = '';
        const started = Date.now();
        const slept = await client.callTool(
          'sleep',
          { ms: 600, message: 'rested' },
          { onTask: (id) => (taskId = id), onStatus: (update) => seen.push(update) },
        );
        assert.equal(textOf(slept), 'rested');
        assert.match(taskId, /^[0-9a-f]{32}$/);
        assert.ok(
          seen.some((update) => update.status === 'working' && update.statusMessage === 'Sleeping for 600 ms'),
          JSON.stringify(seen),
        );
        assert.ok(Date.now() - started < 15_000, 'settled by the listen stream, not by the 20 s polling hint');
      });
    });

    it('input requests go to the callback; its answer finishes the task', async () => {
      const asked: string[] = [];
      await withClient(endpoint(), async (client) => {
        const result = await client.callTool(
          'hello_world',
          {},
          {
            onInputRequest: async (request, context) => {
              assert.equal(request.kind, 'elicitation');
              asked.push(`${context.inputId}:${String((request.params as { message?: string }).message)}`);
              return { action: 'accept', content: { name: 'Ada' } };
            },
          },
        );
        assert.equal(textOf(result), 'Hello, Ada!');
      });
      assert.deepEqual(asked, ['name:Please enter your name.']);
    });

    it('aborting the signal cancels the task on the server and rejects with the reason', async () => {
      await withClient(endpoint(), async (client) => {
        const controller = new AbortController();
        let taskId = '';
        const call = client.callTool(
          'sleep',
          { ms: 60_000 },
          {
            signal: controller.signal,
            onStatus: ({ taskId: id, status }) => {
              taskId = id;
              if (status === 'working') controller.abort(new Error('stop it'));
            },
          },
        );
        await assert.rejects(call, /stop it/);
        const task = await client.getTask(taskId);
        assert.equal(task.status, 'cancelled');
      });
    });

    it('a failed task rejects with its JSON-RPC error; an isError result resolves', async () => {
      await withClient(endpoint(), async (client) => {
        await assert.rejects(client.callTool('fail', { code: -32000, message: 'late boom', ms: 300 }), (error: unknown) => {
          assert.ok(error instanceof TaskFailedError || error instanceof JsonRpcResponseError, String(error));
          assert.equal((error as { code?: number }).code, -32000);
          assert.match((error as Error).message, /late boom/);
          return true;
        });
        const result = await client.callTool('tool_error', { message: 'bad input', ms: 300 });
        assert.equal(result.isError, true);
        assert.equal(textOf(result), 'bad input');
      });
    });
  });
}

describe('TasksClient: tasks created elsewhere, stdio', () => {
  it('watchTask follows a task another client started; cancelTask ends one; getTask of an unknown id rejects', async () => {
    await withClient({ url: endpoints.http }, async (starter) => {
      const controller = new AbortController();
      let taskId = '';
      const first = starter.callTool(
        'sleep',
        { ms: 800, message: 'done elsewhere' },
        { onTask: (id) => (taskId = id), signal: controller.signal },
      );
      while (!taskId) await new Promise((resolve) => setTimeout(resolve, 10));
      await withClient({ url: endpoints.http }, async (watcher) => {
        const statuses: string[] = [];
        const result = await watcher.watchTask(taskId, { onStatus: ({ status }) => statuses.push(status) });
        assert.equal(textOf(result), 'done elsewhere');
        assert.equal(statuses.at(-1), 'completed');
      });
      assert.equal(textOf(await first), 'done elsewhere');

      let longId = '';
      const long = starter.callTool('sleep', { ms: 60_000 }, { onTask: (id) => (longId = id) });
      while (!longId) await new Promise((resolve) => setTimeout(resolve, 10));
      await withClient({ url: endpoints.http }, async (other) => other.cancelTask(longId));
      await assert.rejects(long, TaskCancelledError);
      await assert.rejects(starter.getTask('0'.repeat(32)), (error: unknown) => (error as { code?: number }).code === -32602);
    });
  });

  it('over stdio: the client spawns `taskvisor serve --stdio`, calls a task and stops the child on close', async () => {
    const endpoint: TasksEndpoint = {
      command: process.execPath,
      args: [
        '--import',
        TSX_IMPORT,
        `${REPO_ROOT}bin/taskvisor.js`,
        'serve',
        '--stdio',
        '--quiet',
        '--config',
        `${REPO_ROOT}test/client/fixtures/stdio.yaml`,
      ],
      stderr: 'pipe',
    };
    await withClient(endpoint, async (client) => {
      const names = (await client.listTools()).map((tool) => tool.name).sort();
      assert.deepEqual(names, ['echo', 'fail', 'hello_world', 'sleep', 'tool_error']);
      const result = await client.callTool('sleep', { ms: 300, message: 'over stdio' });
      assert.equal(textOf(result), 'over stdio');
    });
  });
});
