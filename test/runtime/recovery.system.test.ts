/**
 * Restart, expiry and eviction semantics through the public API, with a real
 * LowdbTaskStore in a fresh temp dir and a 2026-07-28 client over real HTTP.
 *
 * (a) graceful close → restart: a running task ends `failed` (-32603, says restart).
 * (b) `resume: 'replay'`: an answered elicitation is replayed after kill -9, the
 *     handler runs again and completes without asking again.
 * (c) kill -9 of a child process: acknowledged creates survive (T-07, I-1) and
 *     none stays `working` (they end `failed` with the restart message).
 * (d) ttl: a running task past its ttl ends `failed` (T-26); terminal tasks
 *     never change again (I-2); the reaper purges expired ones → -32602 (T-14).
 * (e) a terminal task leaves memory (I-10) and is served from the store.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createRuntime, silentLogger, type TaskRecord, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { LowdbTaskStore } from '../../src/store/index.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import {
  createTask,
  delay,
  errorOf,
  getTask,
  isTerminalTask,
  pollTask,
  resultOf,
  spawnNode,
  tempDir,
  TSX_IMPORT,
  updateTask,
  waitFor,
  type Child,
} from '../support/processes.js';

const SERVER = fileURLToPath(new URL('../fixtures/recovery-server.ts', import.meta.url));
const RESTART = /restart/i;

const untilAborted = (signal: AbortSignal) =>
  new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });

/** An in-process runtime on a lowdb store in `dir`, served over HTTP, with a connected 2026 client. */
async function serveInProcess(
  dir: string,
  register: (runtime: TaskvisorRuntime) => void,
  options: { reapIntervalMs?: number; finishedRetentionMs?: number } = {},
): Promise<{ runtime: TaskvisorRuntime; client: ConnectedClient; report: { resumed: number; failed: number }; close(): Promise<void> }> {
  const runtime = createRuntime({ store: new LowdbTaskStore({ dir }), logger: silentLogger, pollIntervalMs: 50, ...options });
  register(runtime);
  const report = await runtime.start();
  const http = await listenHttp(runtime, { port: 0 });
  const client = await connect({ kind: 'http', url: http.url });
  return {
    runtime,
    client,
    report,
    close: async () => {
      await client.close();
      await runtime.close();
    },
  };
}

/** Reads a stored record with a store of its own (only while no runtime has the dir open). */
async function storedRecord(dir: string, taskId: string): Promise<TaskRecord | undefined> {
  const store = new LowdbTaskStore({ dir });
  await store.open();
  try {
    return await store.get(taskId);
  } finally {
    await store.close();
  }
}

describe('(a) graceful close, then restart on the same store', () => {
  it('a running non-replay task ends failed -32603 with a statusMessage about the restart; nothing stays working', async () => {
    const dir = await tempDir('taskvisor-recovery-a-');
    let handlerSignal: AbortSignal | undefined;
    const registerBlocking = (runtime: TaskvisorRuntime) =>
      runtime.tool('blocking', { taskBehavior: 'always' }, async (_args, ctx) => {
        handlerSignal = ctx.signal;
        ctx.setStatus('Blocking until cancelled');
        return untilAborted(ctx.signal);
      });
    try {
      const a = await serveInProcess(dir.path, registerBlocking);
      let taskId: string;
      try {
        taskId = await createTask(a.client, 'blocking');
        await pollTask(a.client, taskId, (task) => task.statusMessage === 'Blocking until cancelled');
        assert.equal(a.runtime.liveTasks, 1);
      } finally {
        await a.close();
      }
      assert.equal(handlerSignal?.aborted, true, 'close() aborts the running handler');

      // Graceful stop writes nothing after stop (I-9): the task is stored unfinished, for the next start to recover.
      const between = await storedRecord(dir.path, taskId);
      assert.equal(between?.status, 'working');
      assert.equal(between?.error, undefined);

      const b = await serveInProcess(dir.path, registerBlocking);
      try {
        assert.deepEqual(b.report, { resumed: 0, failed: 1, quarantined: 0 });
        const task = resultOf(await getTask(b.client, taskId));
        assert.equal(task.status, 'failed');
        assert.equal(task.resultType, 'complete');
        const error = task.error as { code: number; message: string };
        assert.equal(error.code, -32603);
        assert.match(error.message, RESTART);
        assert.match(String(task.statusMessage), RESTART);
        assert.deepEqual(await b.runtime.store.listNonTerminal(), [], 'nothing stays working');
        assert.equal(b.runtime.liveTasks, 0);
        // The handler was not run again by B (it is not a replay tool): its signal is still the aborted one from A.
        assert.equal(handlerSignal?.aborted, true);
      } finally {
        await b.close();
      }
    } finally {
      await dir.remove();
    }
  });
});

describe('(b) resume: replay across a graceful restart while input is outstanding', () => {
  it('the restored run waits for the same key without issuing it again; answering it completes the task', async () => {
    const dir = await tempDir('taskvisor-replay-');
    const runs: string[] = [];
    const register = (runtime: TaskvisorRuntime) =>
      runtime.tool('ask', { taskBehavior: 'always', resume: 'replay' }, async (_args, ctx) => {
        runs.push('start');
        const answer = await ctx.elicit('color', {
          message: 'Favourite color?',
          requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
        });
        runs.push('answered');
        return `color=${String(answer.content?.color)}`;
      });
    try {
      const a = await serveInProcess(dir.path, register);
      let taskId: string;
      let asked: Record<string, unknown>;
      try {
        taskId = await createTask(a.client, 'ask');
        ({ task: asked } = await pollTask(a.client, taskId, (task) => task.status === 'input_required'));
        await a.runtime.flushed();
      } finally {
        await a.close();
      }
      const b = await serveInProcess(dir.path, register);
      try {
        assert.deepEqual(b.report, { resumed: 1, failed: 0, quarantined: 0 });
        const { task: still } = await pollTask(b.client, taskId, (task) => task.status === 'input_required');
        assert.deepEqual(still.inputRequests, asked.inputRequests, 'the same outstanding request under the same key (T-13, T-18)');
        assert.deepEqual(runs, ['start', 'start'], 'the handler ran again after the restart');
        resultOf(await updateTask(b.client, taskId, { color: { action: 'accept', content: { color: 'teal' } } }));
        const { task } = await pollTask(b.client, taskId, isTerminalTask);
        assert.equal(task.status, 'completed', JSON.stringify(task));
        assert.deepEqual((task.result as { content: unknown }).content, [{ type: 'text', text: 'color=teal' }]);
        assert.deepEqual(runs, ['start', 'start', 'answered']);
      } finally {
        await b.close();
      }
    } finally {
      await dir.remove();
    }
  });
});

describe('kill -9 of a child server, then a new child on the same store', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let first: Child;
  let second: Child;
  let client: ConnectedClient;
  const sleepIds: string[] = [];
  let replayId: string;
  let killed: { code: number | null; signal: NodeJS.Signals | null };

  const startChild = async (name: string, env: NodeJS.ProcessEnv = {}) => {
    const portFile = join(dir.path, `${name}.url`);
    const child = spawnNode(['--import', TSX_IMPORT, SERVER, join(dir.path, 'store'), portFile], { env: { ...process.env, ...env } });
    const [, url] = await child.waitForOutput(/listening (\S+)\n/, { stream: 'stdout', timeoutMs: 45_000 });
    assert.equal(await readFile(portFile, 'utf8'), url, 'the port file names the URL');
    return { child, url: url! };
  };

  before(async () => {
    dir = await tempDir('taskvisor-recovery-kill-');
    const started = await startChild('first', { TV_BLOCK_AFTER_ANSWER: '1' });
    first = started.child;
    const firstClient = await connect({ kind: 'http', url: started.url });
    try {
      // (b) a replay task: elicit, answer, then the handler blocks (so it is mid-run at the kill).
      replayId = await createTask(firstClient, 'replay_elicit');
      const { task: asking } = await pollTask(firstClient, replayId, (task) => task.status === 'input_required');
      assert.deepEqual(Object.keys(asking.inputRequests as object), ['key']);
      assert.equal((asking.inputRequests as Record<string, { method: string }>).key!.method, 'elicitation/create');
      resultOf(await updateTask(firstClient, replayId, { key: { action: 'accept', content: { key: 'K-42' } } }));
      await pollTask(firstClient, replayId, (task) => task.statusMessage === 'answered K-42');
      // Make the answer durable before the kill (the point is the replay, not a lost write).
      const flushed = await fetch(new URL('/flushed', started.url), { signal: AbortSignal.timeout(30_000) });
      assert.equal(flushed.status, 200);

      // (c) three long sleeps; each CreateTaskResult means "stored durably" (T-07). Kill right after the acks.
      sleepIds.push(...(await Promise.all([1, 2, 3].map(() => createTask(firstClient, 'sleep', { ms: 60_000 })))));
      killed = await first.kill('SIGKILL');
    } catch (error) {
      // Say what the server said: its stderr is the only trace of a server-side failure.
      throw new Error(`${(error as Error).message}\n--- first server's stderr:\n${first.stderr}`, { cause: error });
    } finally {
      await firstClient.close().catch(() => undefined);
    }
    const restarted = await startChild('second');
    second = restarted.child;
    client = await connect({ kind: 'http', url: restarted.url });
  });

  after(async () => {
    await client?.close().catch(() => undefined);
    await first?.kill('SIGKILL');
    await second?.kill('SIGKILL');
    await dir?.remove();
  });

  it('the first child really died of SIGKILL', () => {
    assert.equal(killed.signal, 'SIGKILL', `stderr: ${first.stderr}`);
  });

  it('(c) all three acknowledged sleep tasks survive the kill and end failed with the restart message (T-07, I-1)', async () => {
    assert.equal(new Set(sleepIds).size, 3);
    for (const taskId of sleepIds) {
      const task = resultOf(await getTask(client, taskId));
      assert.equal(task.status, 'failed', `${taskId}: ${JSON.stringify(task)}`);
      const error = task.error as { code: number; message: string };
      assert.equal(error.code, -32603);
      assert.match(error.message, RESTART);
      assert.match(String(task.statusMessage), RESTART);
    }
    assert.match(second.stderr, /recovered \{"resumed":1,"failed":3,"quarantined":0\}/, second.stderr);
  });

  it('(b) the replay task runs again with the recorded answer and completes without asking again', async () => {
    const { task, statuses } = await pollTask(client, replayId, isTerminalTask, { timeoutMs: 5_000 });
    assert.equal(task.status, 'completed', JSON.stringify(task));
    assert.ok(!statuses.includes('input_required'), `asked again: ${statuses.join(' → ')}`);
    // The handler ran in the new process, and its elicit('key') returned the answer given before the kill.
    assert.deepEqual((task.result as { content: unknown }).content, [{ type: 'text', text: `key=K-42 pid=${second.process.pid}` }]);
    assert.equal(task.inputRequests, undefined);
  });

  it('nothing stays working after the restart', async () => {
    for (const taskId of [...sleepIds, replayId]) {
      const task = resultOf(await getTask(client, taskId));
      assert.ok(isTerminalTask(task), `${taskId} is ${task.status}`);
    }
  });
});

describe('(d) ttl expiry and the reaper', () => {
  it('a task running past its ttlMs (300 ms, the tool sleeps 2 s) ends failed with an expiry message, and never changes again (T-26, I-2)', async (t) => {
    const dir = await tempDir('taskvisor-ttl-');
    t.after(() => dir.remove()); // also when an assertion fails before the restart below
    let finished!: () => void;
    const handlerFinished = new Promise<void>((resolve) => (finished = resolve));
    let handlerEndedAt = Infinity;
    const s = await serveInProcess(
      dir.path,
      (runtime) => {
        // Ignores its signal and finishes late: the late result must not undo the terminal status (I-2).
        runtime.tool('slow', { taskBehavior: 'always', ttlMs: 300 }, async () => {
          await delay(2_000);
          handlerEndedAt = Date.now();
          finished();
          return 'too late';
        });
        runtime.tool('quick', { taskBehavior: 'always', ttlMs: 1_000 }, () => 'quick result');
      },
      { reapIntervalMs: 0, finishedRetentionMs: 0 }, // nothing purges: what stays in the store can be checked
    );
    const changes: TaskRecord[] = [];
    s.runtime.onTaskChange((record) => changes.push(record));
    try {
      const slowId = await createTask(s.client, 'slow');
      const quickId = await createTask(s.client, 'quick');

      const failed = await waitFor(() => changes.find((r) => r.taskId === slowId && r.status === 'failed'), {
        timeoutMs: 3_000,
        what: 'the slow task to fail',
      });
      assert.equal(failed.error?.code, -32603);
      assert.match(failed.error.message, /expired/i);
      assert.match(failed.error.message, /300 ms/);
      assert.match(String(failed.statusMessage), /expired/i);
      assert.ok(failed.lastUpdatedAt - failed.createdAt >= 300, 'not before its ttl');
      assert.ok(failed.lastUpdatedAt < handlerEndedAt, 'before the tool finished');

      // The record of the expired terminal task: failed, with the same error, until something purges it.
      const storedFailed = await waitFor(async () => {
        const record = await s.runtime.store.get(slowId);
        return record?.status === 'failed' ? record : undefined;
      });
      assert.deepEqual(storedFailed.error, failed.error);
      // Expired and terminal: once its actor is evicted, the wire answers "not found" (T-14, T-26). So a
      // client polling at pollIntervalMs rarely sees this `failed`: only for the moments until the record is stored.
      await waitFor(() => s.runtime.liveTasks === 0, { what: 'eviction of the terminal tasks' });
      const expired = errorOf(await getTask(s.client, slowId));
      assert.equal(expired.code, -32602);

      // The handler finishes late with a result: nothing changes (I-2).
      await handlerFinished;
      // The late result reaches the runtime in the microtasks after the handler returns: a round trip through
      // the server comes after them, and the task is still unknown to the wire.
      assert.equal(errorOf(await getTask(s.client, slowId)).code, -32602);
      await s.runtime.flushed();
      assert.deepEqual(await s.runtime.store.get(slowId), storedFailed);
      const slowChanges = changes.filter((r) => r.taskId === slowId);
      assert.deepEqual(slowChanges.slice(slowChanges.indexOf(failed) + 1), [], 'no change after the terminal one');

      // A completed task whose ttl (1 s) ran out stays completed with its result: no deadline after the end (I-2, D-09).
      const quickStored = await s.runtime.store.get(quickId);
      assert.equal(quickStored?.status, 'completed');
      assert.ok(Date.now() >= quickStored.createdAt + 1_000, 'its ttl has elapsed');
      assert.deepEqual(quickStored?.result, { resultType: 'complete', content: [{ type: 'text', text: 'quick result' }] });
      assert.equal(quickStored?.error, undefined);
      assert.equal(changes.filter((r) => r.taskId === quickId).at(-1)?.status, 'completed');
      assert.equal(s.runtime.liveTasks, 0);
    } finally {
      await s.close();
    }
    // A restart does not touch terminal records either.
    try {
      const again = await serveInProcess(
        dir.path,
        (runtime) => {
          runtime.tool('slow', { taskBehavior: 'always' }, () => 'x');
          runtime.tool('quick', { taskBehavior: 'always' }, () => 'x');
        },
        { reapIntervalMs: 0 },
      );
      try {
        assert.deepEqual(again.report, { resumed: 0, failed: 0, quarantined: 0 });
        const records = await again.runtime.store.list();
        assert.deepEqual(records.map((r) => r.status).sort(), ['completed', 'failed']);
      } finally {
        await again.close();
      }
    } finally {
      await dir.remove();
    }
  });

  it('the reaper purges a completed task whose ttlMs (200 ms) ran out; tasks/get then answers -32602 (T-14)', async (t) => {
    const dir = await tempDir('taskvisor-reap-');
    t.after(() => dir.remove());
    const s = await serveInProcess(
      dir.path,
      (runtime) => runtime.tool('quick', { taskBehavior: 'always', ttlMs: 200 }, () => 'quick result'),
      { reapIntervalMs: 100, finishedRetentionMs: 0 },
    );
    const changes: TaskRecord[] = [];
    s.runtime.onTaskChange((record) => changes.push(record));
    try {
      const taskId = await createTask(s.client, 'quick');
      const first = await getTask(s.client, taskId);
      const ended = await waitFor(() => changes.find((r) => r.taskId === taskId && r.status !== 'working'), {
        what: 'the end of the task',
      });
      if (ended.status === 'completed') {
        assert.deepEqual(ended.result, { resultType: 'complete', content: [{ type: 'text', text: 'quick result' }] });
        // Within its ttl tasks/get shows it as stored (working until the completed record is durable,
        // then completed: I-1); past it, "not found" (both are right, T-14).
        if (first.kind === 'result') assert.match(String(resultOf(first).status), /^(working|completed)$/);
        else assert.ok(Date.now() >= ended.createdAt + 200, `tasks/get failed within the ttl: ${JSON.stringify(first)}`);
      } else {
        // On a heavily loaded machine the durable create alone can outlast 200 ms: then the deadline wins (T-26). Still purged below.
        assert.equal(ended.status, 'failed');
        assert.match(String(ended.error?.message), /expired/i);
        t.diagnostic(`the create took longer than the 200 ms ttl (load?): the task expired before it completed`);
      }

      await waitFor(async () => (await s.runtime.store.get(taskId)) === undefined, {
        timeoutMs: 3_000,
        what: 'the reaper to purge the task',
      });
      const gone = errorOf(await getTask(s.client, taskId));
      assert.equal(gone.code, -32602);
      assert.match(gone.message, /not found/i);
      // Purged means gone for every path, not only the wire.
      await assert.rejects(s.runtime.getTask(taskId, { id: 'anonymous' }), { code: -32602 });
    } finally {
      await s.close();
      await dir.remove();
    }
  });
});

describe('(e) eviction (I-10)', () => {
  it('after a task completes liveTasks returns to 0 and tasks/get answers from the store', async (t) => {
    const dir = await tempDir('taskvisor-evict-');
    t.after(() => dir.remove());
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const s = await serveInProcess(dir.path, (runtime) =>
      runtime.tool('gated', { taskBehavior: 'always' }, async () => {
        await gate;
        return { content: [{ type: 'text', text: 'released' }], structuredContent: { ok: true } };
      }),
    );
    try {
      const ids = await Promise.all([1, 2, 3].map(() => createTask(s.client, 'gated')));
      assert.equal(s.runtime.liveTasks, 3, 'non-terminal tasks live in memory');
      release();
      await waitFor(() => s.runtime.liveTasks === 0, { what: 'eviction of the terminal actors' });
      for (const taskId of ids) {
        const task = resultOf(await getTask(s.client, taskId));
        assert.equal(task.status, 'completed');
        assert.deepEqual(task.result, {
          resultType: 'complete',
          content: [{ type: 'text', text: 'released' }],
          structuredContent: { ok: true },
        });
        const stored = await s.runtime.store.get(taskId);
        assert.equal(stored?.status, 'completed');
        assert.equal(stored?.snapshot, undefined, 'a terminal record keeps no actor snapshot');
      }
      assert.equal(s.runtime.liveTasks, 0, 'reading terminal tasks does not bring actors back');
    } finally {
      await s.close();
      await dir.remove();
    }
  });
});
