/**
 * A workflow step's retry backoff is a durable sleep: a
 * task waiting between two attempts of a top-level step, nothing else of
 * its run working, is "waiting for a timer" and is passivated like any
 * sleeping task (its actor leaves memory, its record stays in the store);
 * at the wake time — or after a restart — the run resumes from its
 * checkpoint at the next attempt, without running the failed ones again.
 * A backoff while other work of the run is in flight (a `parallel` branch, a
 * DAG step beside another) stays a plain timer: passivation would abort the
 * siblings. Through the public interface: createRuntime with a workflow
 * folder, a real SQLite file, the ext-tasks client over real HTTP.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { z } from 'zod';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { SqliteTaskStore } from '../../src/store/index.js';
import { listenHttp } from '../../src/transports/index.js';
import type { WorkflowCheckpoint } from '../../src/workflows/index.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { delay, tempDir, waitFor } from '../support/processes.js';
import { taskOps, type Json } from '../support/taskOps.js';

/** What the tools of one test saw. */
interface Calls {
  /** When `flaky` was called (epoch ms), in order. */
  flaky: number[];
  /** How many `flaky` calls fail before one succeeds. */
  failFirst: number;
  slow: Array<'completed' | 'aborted'>;
}

const newCalls = (failFirst: number): Calls => ({ flaky: [], failFirst, slow: [] });

/** A runtime on the SQLite file in `dir`, serving `workflow` as `workflow_wf`, its tools reporting to `calls`. */
async function open(dir: string, workflow: Json, calls: Calls, passivateIdleAfterMs: number | false) {
  const workflows = join(dir, 'workflows');
  await mkdir(workflows, { recursive: true });
  await writeFile(join(workflows, 'wf.yaml'), stringify(workflow));
  const runtime: TaskvisorRuntime = createRuntime({
    store: new SqliteTaskStore({ file: join(dir, 'tasks.db') }),
    logger: silentLogger,
    reapIntervalMs: 0,
    passivateIdleAfterMs,
    workflows: { dir: workflows, watch: false },
  });
  runtime.tool('flaky', { inputSchema: z.object({}) }, () => {
    calls.flaky.push(Date.now());
    if (calls.flaky.length <= calls.failFirst) throw new Error(`flaky failure ${calls.flaky.length}`);
    return 'fine';
  });
  runtime.tool('slow', { inputSchema: z.object({ ms: z.number() }) }, async ({ ms }, ctx) => {
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, ms);
        ctx.signal.addEventListener('abort', () => (clearTimeout(timer), reject(ctx.signal.reason)), { once: true });
      });
    } catch (error) {
      calls.slow.push('aborted');
      throw error;
    }
    calls.slow.push('completed');
    return 'slept';
  });
  await runtime.start();
  const http = await listenHttp(runtime, { port: 0 });
  const client: ConnectedClient = await connect({ kind: 'http', url: http.url });
  const ops = taskOps(() => client);
  return {
    runtime,
    ops,
    /** The task's stored record: its checkpoint's step records and its machine context's sleeps. */
    async stored(taskId: string) {
      const record = await runtime.store.get(taskId);
      const steps = (record?.checkpoint as WorkflowCheckpoint | undefined)?.steps ?? [];
      const sleeps = (record?.snapshot as { context?: { sleeps?: Record<string, number> } } | undefined)?.context?.sleeps ?? {};
      return { record, steps, sleeps };
    },
    async done(taskId: string, timeoutMs = 20_000): Promise<Json> {
      return (await ops.pollUntil(taskId, (task) => task.status !== 'working', timeoutMs)).task;
    },
    async close() {
      await client.close().catch(() => {});
      await http.close();
      await runtime.close();
    },
  };
}

type Opened = Awaited<ReturnType<typeof open>>;

/** Waits until the task is passivated (no actor in memory) while working; returns what tasks/get shows then. */
async function passivated(opened: Opened, taskId: string, statusMessage: RegExp): Promise<Json> {
  return waitFor(
    async () => {
      const task = await opened.ops.task(taskId);
      const ok =
        task.status === 'working' &&
        statusMessage.test(String(task.statusMessage)) &&
        opened.runtime.liveTasks === 0 &&
        opened.runtime.passivatedTasks === 1;
      return ok ? task : undefined;
    },
    { timeoutMs: 10_000, what: `passivated with status ${statusMessage}` },
  );
}

/** A one-step workflow whose step calls `flaky`, retried `attempts` times with a fixed `backoff`. */
const retrying = (attempts: number, backoff: string): Json => ({
  taskBehavior: 'always',
  steps: [{ id: 'fetch', tool: 'flaky', retry: { attempts, initialDelay: backoff, multiplier: 1, on: ['error'] } }],
});

const structured = (task: Json) => (task.result as { structuredContent?: Json } | undefined)?.structuredContent;

describe('a workflow retry backoff is a durable sleep', () => {
  it('a step failing twice is passivated during each backoff, then completes after exactly 3 calls', async (t) => {
    const dir = await tempDir('taskvisor-wf-backoff-a-');
    t.after(() => dir.remove());
    const calls = newCalls(2);
    const opened = await open(dir.path, retrying(3, '1500ms'), calls, 50);
    try {
      const { taskId } = await opened.ops.createTask('workflow_wf');
      const first = await passivated(
        opened,
        taskId,
        /^Step 1\/1: fetch — attempt 1 failed \(Tool flaky failed: flaky failure 1\); retrying in 1500 ms$/,
      );
      assert.equal(calls.flaky.length, 1);
      const during = await opened.stored(taskId);
      assert.deepEqual(
        during.steps.map((step) => [step.id, step.status, step.attempts, step.backoff?.failed]),
        [['fetch', 'running', 2, 1]],
        'the record says: running, waiting to make attempt 2 after attempt 1 failed',
      );
      const key = during.steps[0]!.backoff!.key;
      assert.equal(typeof during.sleeps[key], 'number', 'the sleep is the task\u2019s own (stored wake time)');
      assert.equal(first.status, 'working');

      await passivated(opened, taskId, /attempt 2 failed \(Tool flaky failed: flaky failure 2\); retrying in 1500 ms$/);
      assert.equal(calls.flaky.length, 2, 'woken once: attempt 2 ran, attempt 1 did not run again');

      const done = await opened.done(taskId);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.deepEqual(structured(done)?.results, { fetch: 'fine' });
      assert.equal(calls.flaky.length, 3, 'the failing tool was called exactly 3 times');
      for (const [i, gap] of [calls.flaky[1]! - calls.flaky[0]!, calls.flaky[2]! - calls.flaky[1]!].entries())
        assert.ok(gap >= 1_450, `backoff ${i + 1} waited ${gap} ms, not less than its 1500 ms`);
      t.diagnostic(`attempt gaps ${calls.flaky[1]! - calls.flaky[0]!} ms, ${calls.flaky[2]! - calls.flaky[1]!} ms (backoff 1500 ms)`);
      const after = await opened.stored(taskId);
      assert.deepEqual(
        after.steps.map((step) => ({ id: step.id, status: step.status, attempts: step.attempts, backoff: step.backoff })),
        [{ id: 'fetch', status: 'completed', attempts: 3, backoff: undefined }],
        'one record, never interrupted, 3 attempts',
      );
      assert.equal(opened.runtime.passivatedTasks, 0);
    } finally {
      await opened.close();
    }
  });

  it('closed during the backoff and opened again on the same store: wakes at the stored time, no attempt again', async (t) => {
    const dir = await tempDir('taskvisor-wf-backoff-b-');
    t.after(() => dir.remove());
    const calls = newCalls(1);
    const workflow = retrying(2, '4s');
    // Passivated in the first runtime; the second keeps tasks live, so the resumed run waits in memory.
    const first = await open(dir.path, workflow, calls, 0);
    const { taskId } = await first.ops.createTask('workflow_wf');
    await passivated(first, taskId, /attempt 1 failed/);
    const { steps, sleeps } = await first.stored(taskId);
    const wakeAt = sleeps[steps[0]!.backoff!.key]!;
    assert.ok(
      wakeAt - calls.flaky[0]! >= 3_900 && wakeAt - calls.flaky[0]! < 5_000,
      `wakes 4 s after attempt 1 (${wakeAt - calls.flaky[0]!} ms)`,
    );
    // Half the backoff passes before the restart: a fresh full delay would end 2 s after the stored time.
    await delay(2_000);
    await first.close();

    const reopenedAt = Date.now();
    const second = await open(dir.path, workflow, calls, false);
    try {
      const resumed = await second.ops.task(taskId);
      assert.equal(resumed.status, 'working');
      assert.match(String(resumed.statusMessage), /attempt 1 failed \(Tool flaky failed: flaky failure 1\); retrying in 4000 ms$/);
      const done = await second.done(taskId);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.equal(calls.flaky.length, 2, 'attempt 1 did not run again');
      const late = calls.flaky[1]! - wakeAt;
      t.diagnostic(`attempt 2 ran ${late} ms after the stored wake time`);
      assert.ok(late >= 0, `attempt 2 ran ${late} ms after the stored wake time, not before it`);
      // A fresh full delay would start at the reopen: 4 s after it, where the stored time is 2 s after it.
      const sinceReopen = calls.flaky[1]! - reopenedAt;
      assert.ok(sinceReopen < 4_000, `attempt 2 ran ${sinceReopen} ms after the reopen (a fresh delay: >= 4000)`);
      const after = await second.stored(taskId);
      assert.deepEqual(
        after.steps.map((step) => [step.id, step.status, step.attempts, step.error]),
        [['fetch', 'completed', 2, undefined]],
        'kept running across the restart (not interrupted), 2 attempts',
      );
    } finally {
      await second.close();
    }
  });

  it('cancel during a passivated backoff ends the task at once, nothing run again', async (t) => {
    const dir = await tempDir('taskvisor-wf-backoff-c-');
    t.after(() => dir.remove());
    const calls = newCalls(5);
    const opened = await open(dir.path, retrying(3, '1m'), calls, 0);
    try {
      const { taskId } = await opened.ops.createTask('workflow_wf');
      await passivated(opened, taskId, /attempt 1 failed/);
      const started = Date.now();
      const answer = await opened.ops.cancel(taskId);
      assert.equal(answer.kind, 'result', JSON.stringify(answer));
      const task = await opened.ops.task(taskId);
      assert.equal(task.status, 'cancelled', 'cancelled when cancel returns');
      assert.ok(Date.now() - started < 2_000);
      assert.equal(opened.runtime.passivatedTasks, 0);
      assert.equal(opened.runtime.liveTasks, 0);
      // The run history shows the waiting step cancelled, as a live cancel records it.
      const history = await opened.ops.call('core_workflow_execution_get', { execution_id: taskId });
      assert.ok(history.kind === 'result', JSON.stringify(history));
      // Nothing is left to wake it (neither passivated nor live), and a later request came and went without an attempt.
      assert.equal(calls.flaky.length, 1, 'no attempt ran after the cancel');
      const run = history.result.structuredContent as Json;
      assert.equal(run.status, 'cancelled');
      assert.deepEqual(
        (run.steps as Json[]).map((step) => [step.step_id, step.status, step.attempts]),
        [['fetch', 'cancelled', 2]],
      );
    } finally {
      await opened.close();
    }
  });

  for (const { name, workflow } of [
    {
      name: 'a parallel branch retrying beside a running sibling',
      workflow: {
        taskBehavior: 'always',
        steps: [
          {
            id: 'both',
            parallel: [
              { id: 'fetch', tool: 'flaky', retry: { attempts: 2, initialDelay: '1500ms', on: ['error'] } },
              { id: 'work', tool: 'slow', args: { ms: 2_500 } },
            ],
          },
        ],
      },
    },
    {
      name: 'a DAG step retrying beside another in flight',
      workflow: {
        taskBehavior: 'always',
        steps: [
          { id: 'fetch', tool: 'flaky', retry: { attempts: 2, initialDelay: '1500ms', on: ['error'] }, needs: [] },
          { id: 'work', tool: 'slow', args: { ms: 2_500 }, needs: [] },
        ],
      },
    },
  ]) {
    it(`${name}: a plain timer, never passivated, the sibling not aborted`, async (t) => {
      const dir = await tempDir('taskvisor-wf-backoff-d-');
      t.after(() => dir.remove());
      const calls = newCalls(1);
      const opened = await open(dir.path, workflow, calls, 0);
      try {
        const { taskId } = await opened.ops.createTask('workflow_wf');
        await waitFor(() => calls.flaky.length === 1, { what: 'attempt 1' });
        // Through the whole backoff (1.5 s), until attempt 2 starts: the task stays in memory, with nothing of it in the passivated set.
        const ceiling = Date.now() + 30_000;
        while (calls.flaky.length < 2) {
          assert.ok(Date.now() < ceiling, 'attempt 2 within 30 s');
          assert.equal(opened.runtime.passivatedTasks, 0, 'not passivated while a sibling works');
          assert.equal(opened.runtime.liveTasks, 1);
          await delay(25);
        }
        const done = await opened.done(taskId);
        assert.equal(done.status, 'completed', JSON.stringify(done));
        assert.deepEqual(calls.slow, ['completed'], 'the sibling ran once, to its end');
        assert.equal(calls.flaky.length, 2);
        const { steps, sleeps } = await opened.stored(taskId);
        assert.deepEqual(sleeps, {}, 'no durable sleep');
        assert.equal(steps.find((step) => step.id.endsWith('fetch'))?.attempts, 2);
      } finally {
        await opened.close();
      }
    });
  }
});
