/**
 * Passivated idle tasks over real HTTP: two runtimes on
 * SQLite files, one passivating tasks the moment they only wait for input,
 * one never. The same client traffic (tools/call, tasks/get, tasks/update,
 * tasks/cancel, a subscriptions/listen stream read as raw SSE) gets the same
 * answers and the same listen frames from both, ids and times aside; and the
 * official ext-tasks client session drives a passivated task to completion,
 * answering its input requests. A task whose handler sleeps (`ctx.sleep`)
 * reads the same passivated as live, wakes at its time and completes.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { z } from 'zod';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { SqliteTaskStore } from '../../src/store/index.js';
import { listenHttp, type HttpListener } from '../../src/transports/index.js';
import { connect, envelope, taskSession } from '../support/extTasksClient.js';
import { postJsonRpc, sseMessages, standardHeaders } from '../support/httpRaw.js';
import { tempDir, waitFor } from '../support/processes.js';

type Message = Record<string, any>;

const ask = (message: string) => ({ message, requestedSchema: { type: 'object' as const, properties: { v: { type: 'string' } } } });

async function serve(dir: string, passivateIdleAfterMs: number | false) {
  const runtime = createRuntime({
    store: new SqliteTaskStore({ file: join(dir, `tasks-${passivateIdleAfterMs}.db`) }),
    logger: silentLogger,
    pollIntervalMs: 50,
    // The hint's growth with task age (the clock) would differ between the two runs on a loaded machine.
    poll: { growthDivisor: 0, minSamples: Number.MAX_SAFE_INTEGER },
    reapIntervalMs: 0,
    passivateIdleAfterMs,
  });
  runtime.tool('two_questions', { taskBehavior: 'always', resume: 'replay', inputSchema: z.object({}) }, async (_args, ctx) => {
    ctx.setStatus('first question');
    const first = await ctx.elicit('first', ask('First?'));
    ctx.setStatus('second question');
    const second = await ctx.elicit('second', ask('Second?'));
    return `${String(first.content?.v)} ${String(second.content?.v)}`;
  });
  runtime.tool('nap', { taskBehavior: 'always', resume: 'replay', inputSchema: z.object({ ms: z.number() }) }, async (args, ctx) => {
    ctx.setStatus('napping');
    await ctx.sleep('nap', args.ms);
    return 'woke';
  });
  await runtime.start();
  const http = await listenHttp(runtime, { port: 0 });
  return { runtime, http };
}

/** A listen stream's frames, read as they come. */
async function listen(url: string, taskId: string) {
  const params = { notifications: { taskIds: [taskId] }, _meta: envelope() };
  const controller = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: standardHeaders('subscriptions/listen', params),
    body: JSON.stringify({ jsonrpc: '2.0', id: 'listen', method: 'subscriptions/listen', params }),
    signal: controller.signal,
  });
  const frames: Message[] = [];
  const reading = (async () => {
    try {
      for await (const batch of sseMessages(response.body!)) frames.push(...(batch as Message[]));
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
  })();
  return {
    frames,
    async close() {
      controller.abort();
      await reading;
    },
  };
}

/** What a client sees of a message, without the task id and timestamps (they differ between the two servers). */
function seen(message: unknown): unknown {
  return JSON.parse(
    JSON.stringify(message, (key, value: unknown) => (['taskId', 'createdAt', 'lastUpdatedAt', 'id'].includes(key) ? '*' : value)),
  ) as unknown;
}

/** Runs the same client script against one server; returns what the client saw. */
async function script(server: { runtime: TaskvisorRuntime; http: HttpListener }, passivates: boolean): Promise<unknown[]> {
  const { runtime, http } = server;
  const url = http.url;
  const seenByClient: unknown[] = [];
  const idle = async (taskId: string, key: string) => {
    await waitFor(
      async () => {
        const task: Message | undefined = (await postJsonRpc(url, 'tasks/get', { taskId })).message?.result;
        return task?.status === 'input_required' && task.inputRequests?.[key] !== undefined && (!passivates || runtime.liveTasks === 0);
      },
      { timeoutMs: 15_000, what: `${key} asked${passivates ? ' and the task passivated' : ''}` },
    );
  };
  const created = await postJsonRpc(url, 'tools/call', { name: 'two_questions', arguments: {} });
  const taskId = created.message?.result?.taskId as string;
  assert.match(taskId, /^[0-9a-f]{32}$/, created.text);
  seenByClient.push(seen(created.message));
  const stream = await listen(url, taskId);
  try {
    await idle(taskId, 'first');
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/get', { taskId })).message));
    // An answer to no outstanding key is ignored (T-22): the passivated task stays as it is.
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/update', { taskId, inputResponses: { nope: { action: 'decline' } } })).message));
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/get', { taskId })).message));
    const answer = (v: string) => ({ action: 'accept', content: { v } });
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/update', { taskId, inputResponses: { first: answer('one') } })).message));
    await idle(taskId, 'second');
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/get', { taskId })).message));
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/update', { taskId, inputResponses: { second: answer('two') } })).message));
    await waitFor(async () => (await postJsonRpc(url, 'tasks/get', { taskId })).message?.result?.status === 'completed', {
      timeoutMs: 15_000,
    });
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/get', { taskId })).message));

    // A second task, cancelled while it waits (passivated on one server): cancelled at once (T-24).
    const other = (await postJsonRpc(url, 'tools/call', { name: 'two_questions', arguments: {} })).message?.result?.taskId as string;
    await idle(other, 'first');
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/cancel', { taskId: other })).message));
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/get', { taskId: other })).message));
    // Another principal's view is unchanged too: the same -32602 for a foreign id (I-7).
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/get', { taskId: '0'.repeat(32) })).message));
    await waitFor(() => stream.frames.some((frame) => frame.params?.status === 'completed'), { timeoutMs: 15_000 });
  } finally {
    await stream.close();
  }
  seenByClient.push(stream.frames.filter((frame) => frame.method === 'notifications/tasks').map(seen));
  return seenByClient;
}

/** A sleeping task's client script: get while it sleeps, an ignored update, its end; what the client saw. */
async function napScript(server: { runtime: TaskvisorRuntime; http: HttpListener }, passivates: boolean): Promise<unknown[]> {
  const { runtime, http } = server;
  const url = http.url;
  const seenByClient: unknown[] = [];
  const created = await postJsonRpc(url, 'tools/call', { name: 'nap', arguments: { ms: 2_500 } });
  const taskId = created.message?.result?.taskId as string;
  assert.match(taskId, /^[0-9a-f]{32}$/, created.text);
  seenByClient.push(seen(created.message));
  const stream = await listen(url, taskId);
  try {
    await waitFor(
      async () =>
        (await postJsonRpc(url, 'tasks/get', { taskId })).message?.result?.statusMessage === 'napping' &&
        (!passivates || (runtime.passivatedTasks === 1 && runtime.liveTasks === 0)),
      { timeoutMs: 15_000, what: `napping${passivates ? ' and passivated' : ''}` },
    );
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/get', { taskId })).message));
    // A working task has no outstanding key (T-22): ignored, passivated or not.
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/update', { taskId, inputResponses: { nap: { action: 'accept' } } })).message));
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/get', { taskId })).message));
    await waitFor(async () => (await postJsonRpc(url, 'tasks/get', { taskId })).message?.result?.status === 'completed', {
      timeoutMs: 20_000,
    });
    seenByClient.push(seen((await postJsonRpc(url, 'tasks/get', { taskId })).message));
    await waitFor(() => stream.frames.some((frame) => frame.params?.status === 'completed'), { timeoutMs: 15_000 });
  } finally {
    await stream.close();
  }
  seenByClient.push(stream.frames.filter((frame) => frame.method === 'notifications/tasks').map(seen));
  return seenByClient;
}

describe('passivated tasks over Streamable HTTP', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let passivating: Awaited<ReturnType<typeof serve>>;
  let live: Awaited<ReturnType<typeof serve>>;
  before(async () => {
    dir = await tempDir('taskvisor-passivation-http-');
    passivating = await serve(dir.path, 0);
    live = await serve(dir.path, false);
  });
  after(async () => {
    for (const server of [passivating, live]) {
      await server?.runtime.close();
      await server?.http.close();
    }
    await dir?.remove();
  });

  it('get, update, cancel and listen answer the same with and without passivation', async () => {
    const withPassivation = await script(passivating, true);
    const without = await script(live, false);
    assert.deepEqual(withPassivation, without);
    const frames = withPassivation.at(-1) as Message[];
    assert.deepEqual(
      frames.map((frame) => [frame.params.status, frame.params.statusMessage]),
      [
        ['input_required', 'first question'],
        ['working', 'first question'],
        ['input_required', 'second question'],
        ['working', 'second question'],
        ['completed', undefined],
      ],
    );
  });

  it('a sleeping task reads the same passivated as live, wakes and completes; cancelled passivated, it ends at once', async () => {
    const [withPassivation, without] = await Promise.all([napScript(passivating, true), napScript(live, false)]);
    assert.deepEqual(withPassivation, without);
    assert.deepEqual(
      (withPassivation.at(-1) as Message[]).map((frame) => [frame.params.status, frame.params.statusMessage]),
      [
        ['working', 'napping'],
        ['completed', undefined],
      ],
    );

    const url = passivating.http.url;
    const taskId = (await postJsonRpc(url, 'tools/call', { name: 'nap', arguments: { ms: 600_000 } })).message?.result?.taskId as string;
    await waitFor(() => passivating.runtime.passivatedTasks === 1, { timeoutMs: 15_000, what: 'the long nap passivated' });
    await postJsonRpc(url, 'tasks/cancel', { taskId });
    const cancelled = (await postJsonRpc(url, 'tasks/get', { taskId })).message?.result as Message;
    assert.equal(cancelled.status, 'cancelled', 'nothing runs on its behalf: cancelled when cancel answers (T-24)');
    assert.equal(passivating.runtime.passivatedTasks, 0);
  });

  it('the ext-tasks client session gets the result of a task that slept passivated', async () => {
    const connected = await connect({ kind: 'http', url: passivating.http.url });
    const session = taskSession(connected, async () => ({ action: 'decline' }) as never);
    let sawPassivated = false;
    const watching = waitFor(() => (sawPassivated = passivating.runtime.passivatedTasks === 1), { timeoutMs: 15_000 });
    try {
      const execution = await session.callTool('nap', { ms: 2_000 });
      assert.equal(execution.kind, 'task');
      const result = resultFromTaskOutcome((await execution.settle()).outcome) as { content?: Array<{ text?: string }> };
      await watching;
      assert.equal(result.content?.[0]?.text, 'woke');
      assert.ok(sawPassivated, 'it slept passivated');
    } finally {
      await session.close();
      await connected.close();
    }
  });

  it('the ext-tasks client session answers a passivated task’s input requests and gets its result', async () => {
    const connected = await connect({ kind: 'http', url: passivating.http.url });
    let passivatedWhenAsked = 0;
    const session = taskSession(connected, async (request) => {
      // Give the server time to passivate the task before it is answered.
      await waitFor(() => passivating.runtime.liveTasks === 0, { timeoutMs: 15_000 });
      passivatedWhenAsked++;
      const key = (request as { inputId?: string }).inputId;
      return { action: 'accept', content: { v: key ?? 'x' } } as never;
    });
    try {
      const execution = await session.callTool('two_questions', {});
      assert.equal(execution.kind, 'task');
      const result = resultFromTaskOutcome((await execution.settle()).outcome) as { content?: Array<{ text?: string }> };
      assert.match(result.content?.[0]?.text ?? '', /^\S+ \S+$/);
      assert.equal(passivatedWhenAsked, 2, 'both questions were answered while the task was passivated');
    } finally {
      await session.close();
      await connected.close();
    }
  });
});
