/**
 * Listen streams over real transports. Over Streamable HTTP with raw fetch:
 * the SSE frames of `subscriptions/listen` (every `notifications/tasks` frame
 * valid under the ext-tasks V2 schema), an input_required task pushed,
 * answered and finished on the stream, no progress or log frames, a dropped
 * client leaving nothing behind, and `runtime.close()` ending a stream with
 * its graceful result. Then the official ext-tasks client session: with a 10 s
 * polling hint, a listen makes `settle()` resolve on the push, over HTTP and
 * over stdio.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { TaskStatusNotificationV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import demoTools from '../../examples/demo/tools.js';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, type HttpListener } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { connect, envelope, taskSession, type ConnectedClient, type Endpoint } from '../support/extTasksClient.js';
import { postJsonRpc, sseMessages, standardHeaders } from '../support/httpRaw.js';
import { TSX_IMPORT, waitFor } from '../support/processes.js';

type Message = Record<string, any>;

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const STDIO_FIXTURE = fileURLToPath(new URL('../e2e/fixtures/stdio-server.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The polling hint of these servers: a settle in well under it came from a push, not a poll. */
const LONG_POLL_MS = 10_000;

async function startRuntime(): Promise<{ runtime: TaskvisorRuntime; http: HttpListener }> {
  const runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger, pollIntervalMs: LONG_POLL_MS, reapIntervalMs: 0 });
  runtime.use(...demoTools);
  await runtime.start();
  const http = await listenHttp(runtime, { port: 0 });
  return { runtime, http };
}

let counter = 0;

/** An open listen stream read frame by frame with raw fetch. */
interface RawListen {
  id: string;
  status: number;
  contentType: string;
  frames: Message[];
  /** Resolves with the first frame (so far or to come) matching `match`. */
  next(match: (frame: Message) => boolean, timeoutMs?: number): Promise<Message>;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  /** Drops the stream as a client that goes away. */
  abort(): void;
}

async function openListen(url: string, notifications: Record<string, unknown>): Promise<RawListen> {
  const id = `raw-listen:${++counter}`;
  const params = { notifications, _meta: envelope() };
  const controller = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: standardHeaders('subscriptions/listen', params),
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params }),
    signal: controller.signal,
  });
  const frames: Message[] = [];
  const watchers = new Set<() => void>();
  const ended = (async () => {
    try {
      for await (const batch of sseMessages(response.body!)) {
        frames.push(...(batch as Message[]));
        for (const watch of watchers) watch();
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    } finally {
      for (const watch of watchers) watch();
    }
  })();
  let done = false;
  void ended.finally(() => (done = true)).catch(() => {});
  return {
    id,
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    frames,
    ended,
    abort: () => controller.abort(),
    next: (match, timeoutMs = 5_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(new Error(`no matching frame within ${timeoutMs} ms; frames: ${JSON.stringify(frames)}`));
        }, timeoutMs);
        const check = () => {
          const found = frames.find(match);
          if (found || done) {
            clearTimeout(timer);
            watchers.delete(check);
            if (found) resolve(found);
            else reject(new Error(`the stream ended without a matching frame; frames: ${JSON.stringify(frames)}`));
          }
        };
        watchers.add(check);
        check();
      }),
  };
}

function assertWireFrames(frames: Message[]): void {
  for (const frame of frames) {
    if (frame.method === 'notifications/tasks') {
      const parsed = TaskStatusNotificationV2Schema.safeParse(frame);
      assert.ok(parsed.success, `TaskStatusNotificationV2Schema: ${JSON.stringify(frame)}: ${parsed.error?.message}`);
    }
    assert.notEqual(frame.method, 'notifications/progress', 'no progress frames on a listen stream');
    assert.notEqual(frame.method, 'notifications/message', 'no log frames on a listen stream');
  }
}

describe('subscriptions/listen over Streamable HTTP (raw fetch)', () => {
  let runtime: TaskvisorRuntime;
  let http: HttpListener;
  before(async () => {
    ({ runtime, http } = await startRuntime());
  });
  after(async () => {
    await runtime?.close();
    await http?.close();
  });

  it('pushes an input_required task, then its answer’s outcome; every frame valid; no progress or log frames', async () => {
    const created = await postJsonRpc(http.url, 'tools/call', { name: 'hello_world', arguments: {} });
    const taskId = created.message?.result?.taskId as string;
    assert.equal(created.message?.result?.resultType, 'task', created.text);
    const listen = await openListen(http.url, { taskIds: [taskId] });
    try {
      assert.equal(listen.status, 200);
      assert.match(listen.contentType, /text\/event-stream/);
      const ack = await listen.next(() => true);
      assert.equal(ack.method, 'notifications/subscriptions/acknowledged');
      assert.deepEqual(ack.params.notifications, { taskIds: [taskId] });
      assert.equal(ack.params._meta[SUBSCRIPTION_ID], listen.id);

      const asking = await listen.next((frame) => frame.method === 'notifications/tasks' && frame.params.status === 'input_required');
      assert.equal(asking.params.taskId, taskId);
      assert.deepEqual(Object.keys(asking.params.inputRequests), ['name']);
      assert.equal(asking.params.inputRequests.name.method, 'elicitation/create');

      const updated = await postJsonRpc(http.url, 'tasks/update', {
        taskId,
        inputResponses: { name: { action: 'accept', content: { name: 'Luca' } } },
      });
      assert.equal(updated.status, 200, updated.text);
      const finished = await listen.next((frame) => frame.method === 'notifications/tasks' && frame.params.status === 'completed');
      assert.deepEqual(finished.params.result.content, [{ type: 'text', text: 'Hello, Luca!' }]);

      assert.equal(listen.frames[0], ack, 'the acknowledgement is the first frame');
      for (const frame of listen.frames)
        assert.equal(frame.params?._meta?.[SUBSCRIPTION_ID], listen.id, `stamped: ${JSON.stringify(frame)}`);
      const statuses = listen.frames.filter((frame) => frame.method === 'notifications/tasks').map((frame) => frame.params.status);
      assert.equal(statuses.at(-1), 'completed');
      assert.equal(statuses.filter((status) => status === 'completed').length, 1, `one terminal frame: ${statuses}`);
      assertWireFrames(listen.frames);
      assert.equal(runtime.subscriptions.watchedTasks, 0, 'the finished task left the index');
    } finally {
      listen.abort();
    }
    await waitFor(() => runtime.subscriptions.size === 0, { what: 'the dropped stream to be forgotten' });
  });

  it('a client that drops its stream (aborts the fetch) leaves no subscription behind', async () => {
    const created = await postJsonRpc(http.url, 'tools/call', { name: 'sleep', arguments: { ms: 60_000 } });
    const taskId = created.message?.result?.taskId as string;
    assert.ok(taskId, created.text);
    const streams = await Promise.all([1, 2, 3].map(() => openListen(http.url, { taskIds: [taskId], toolsListChanged: true })));
    await Promise.all(streams.map((listen) => listen.next((frame) => frame.method === 'notifications/subscriptions/acknowledged')));
    assert.equal(runtime.subscriptions.size, 3);
    assert.equal(runtime.subscriptions.watchedTasks, 1);
    for (const listen of streams) listen.abort();
    await waitFor(() => runtime.subscriptions.size === 0 && runtime.subscriptions.watchedTasks === 0, {
      what: `subscriptions to drop to 0 (size ${runtime.subscriptions.size})`,
    });
    for (const listen of streams) assertWireFrames(listen.frames);
    // The task itself is unaffected.
    const task = await postJsonRpc(http.url, 'tasks/get', { taskId });
    assert.equal(task.message?.result?.status, 'working');
    await postJsonRpc(http.url, 'tasks/cancel', { taskId });
  });

  it('runtime.close() ends an open stream with the graceful listen result', async () => {
    const own = await startRuntime();
    try {
      const created = await postJsonRpc(own.http.url, 'tools/call', { name: 'sleep', arguments: { ms: 60_000 } });
      const taskId = created.message?.result?.taskId as string;
      const listen = await openListen(own.http.url, { taskIds: [taskId] });
      await listen.next((frame) => frame.method === 'notifications/tasks');
      await own.runtime.close();
      await listen.ended;
      assert.deepEqual(listen.frames.at(-1), {
        jsonrpc: '2.0',
        id: listen.id,
        result: {
          resultType: 'complete',
          _meta: { [SUBSCRIPTION_ID]: listen.id, 'io.modelcontextprotocol/serverInfo': { name: 'taskvisor', version: '0.1.0' } },
        },
      });
      assertWireFrames(listen.frames);
      assert.equal(own.runtime.subscriptions.size, 0);
    } finally {
      await own.runtime.close();
      await own.http.close();
    }
  });
});

/** callTool('sleep'), then listen on its task: settle() resolves on the push, far sooner than the 10 s polling hint. */
async function settlesOnPush(connected: ConnectedClient): Promise<number> {
  const session = taskSession(connected);
  try {
    const started = Date.now();
    const execution = await session.callTool('sleep', { ms: 300 });
    const taskId = (execution as unknown as { handle: { taskId: string } }).handle.taskId;
    assert.match(taskId, /^[0-9a-f]{32}$/);
    const settling = execution.settle();
    const subscription = await connected.client.listen({ taskIds: [taskId] } as never);
    const { outcome } = await settling;
    const elapsed = Date.now() - started;
    assert.deepEqual((resultFromTaskOutcome(outcome) as { content?: unknown }).content, [{ type: 'text', text: 'Slept for 300 ms' }]);
    // Settled by the push, not by polling: a poll-driven settle needs a second
    // tasks/get (the first one sees `working`), which the 10 s hint would delay.
    // Counting polls instead of timing the settle keeps this true on a loaded machine.
    const polls = connected.exchanges.filter(
      (exchange) => exchange.method === 'tasks/get' && (exchange.params as { taskId?: string } | undefined)?.taskId === taskId,
    );
    assert.ok(polls.length <= 1, `settled by polling (${polls.length} tasks/get, ${elapsed} ms): ${JSON.stringify(polls)}`);
    const created = connected.received.find((message) => (message as Message).result?.taskId === taskId) as Message | undefined;
    assert.ok((created?.result?.pollIntervalMs ?? 0) >= LONG_POLL_MS, `the server asked for slow polling: ${JSON.stringify(created)}`);
    await (subscription as { close?: () => Promise<void> }).close?.();
    return elapsed;
  } finally {
    await session.close();
  }
}

describe('the ext-tasks client session settles on the listen push (polling hint 10 s)', () => {
  it('over Streamable HTTP', async () => {
    const { runtime, http } = await startRuntime();
    const connected = await connect({ kind: 'http', url: http.url });
    try {
      await settlesOnPush(connected);
    } finally {
      await connected.close();
      await runtime.close();
      await http.close();
    }
  });

  it('over stdio', async () => {
    const endpoint: Endpoint = {
      kind: 'stdio',
      command: process.execPath,
      args: ['--import', TSX_IMPORT, STDIO_FIXTURE],
      cwd: REPO_ROOT,
      env: { ...(process.env as Record<string, string>), TASKVISOR_E2E_POLL_INTERVAL_MS: String(LONG_POLL_MS) },
    };
    const connected = await connect(endpoint);
    try {
      await settlesOnPush(connected);
      assert.deepEqual(connected.transportErrors.map(String), []);
    } finally {
      await connected.close();
    }
  });
});
