/**
 * Passivated idle tasks (ARCHITECTURE "Passivation"): a task
 * of a re-runnable tool waiting for input leaves memory and lives in its
 * store (a real SQLite file); clients cannot tell. Through the supervisor's
 * public API: get answers the same record, update rehydrates it (the handler
 * runs again, answers replayed) and the machine takes the responses (I-3),
 * cancel ends it at once (T-24), its ttl still ends it (T-26), admission
 * slots stay counted and come back, a restart keeps it passivated and it
 * still completes. `resume: 'fail'` tasks stay live.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import type { TaskRecord } from '../../src/index.js';
import type { TaskSupervisorOptions } from '../../src/runtime/TaskSupervisor.js';
import { defineTool } from '../../src/tools/defineTool.js';
import type { ResumePolicy } from '../../src/tools/ToolDefinition.js';
import { ToolRegistry } from '../../src/tools/ToolRegistry.js';
import { tempDir, waitFor } from '../support/processes.js';
import { openSqliteSupervisor } from '../support/sqliteSupervisor.js';

const ask = { message: 'value?', requestedSchema: { type: 'object' as const, properties: { v: { type: 'string' } } } };

/** Handler runs, per task id: a rehydrated task runs its handler again. */
const runs = new Map<string, number>();

/** Asks for `a`, then `b`, and answers both. */
function askTwice(name: string, resume: ResumePolicy) {
  return defineTool(name, { taskBehavior: 'always', resume, inputSchema: z.object({}) }, async (_args, ctx) => {
    runs.set(ctx.taskId!, (runs.get(ctx.taskId!) ?? 0) + 1);
    ctx.setStatus('asking for a');
    const a = await ctx.elicit('a', ask);
    ctx.setStatus('asking for b');
    const b = await ctx.elicit('b', ask);
    return `${JSON.stringify(a)}+${JSON.stringify(b)}`;
  });
}

const replayTool = askTwice('ask_replay', 'replay');
const failTool = askTwice('ask_fail', 'fail');

function registry(): ToolRegistry {
  const tools = new ToolRegistry();
  for (const tool of [replayTool, failTool]) tools.add(tool.name, tool.options, tool.handler);
  return tools;
}

/** A supervisor on an SQLite file in `dir` (test/support/sqliteSupervisor.ts), with `create` for this file's tools. */
async function open(dir: string, options: Partial<TaskSupervisorOptions> = {}) {
  const tools = registry();
  const opened = await openSqliteSupervisor(dir, tools, 2, options);
  const { supervisor } = opened;
  const create = (tool = replayTool, principal = 'alice', ttlMs: number | null = 60_000) =>
    supervisor.create({ tool: tools.get(tool.name)!, args: {}, principal, ttlMs });
  return { ...opened, create };
}

type Opened = Awaited<ReturnType<typeof open>>;

const isFinal = (status: TaskRecord['status']) => status === 'completed' || status === 'failed' || status === 'cancelled';

/** Waits until the task asks for `key` and no task actor is left in memory. */
async function passivatedAsking(opened: Opened, taskId: string, key: string): Promise<TaskRecord> {
  return waitFor(
    async () => {
      const record = await opened.supervisor.get(taskId, 'alice');
      return record.status === 'input_required' && record.inputRequests?.[key] && opened.supervisor.liveCount === 0 ? record : undefined;
    },
    { timeoutMs: 10_000 },
  );
}

describe('passivated idle tasks', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  before(async () => {
    dir = await tempDir('taskvisor-passivation-');
  });
  after(async () => {
    await dir.remove();
  });

  it('a waiting replay task leaves memory; get, update and the handler replay work as on a live task', async () => {
    const opened = await open(join(dir.path, 'a'));
    try {
      const { taskId } = await opened.create();
      const waiting = await passivatedAsking(opened, taskId, 'a');
      assert.equal(opened.supervisor.liveCount, 0, 'no actor in memory');
      assert.ok(opened.supervisor.isLive(taskId), 'still this process’s task (cluster routing, recovery)');
      assert.equal(waiting.statusMessage, 'asking for a');
      assert.equal(waiting.snapshot, undefined, 'shown without the machine snapshot, as a live task is');
      assert.equal(runs.get(taskId), 1);

      await opened.supervisor.update(taskId, 'alice', { a: { action: 'accept', content: { v: 'x' } } });
      const second = await passivatedAsking(opened, taskId, 'b');
      assert.equal(runs.get(taskId), 2, 'rehydration ran the handler again');
      assert.deepEqual(Object.keys(second.inputRequests ?? {}), ['b']);

      await opened.supervisor.update(taskId, 'alice', { b: { action: 'accept', content: { v: 'y' } } });
      const done = await waitFor(
        async () => {
          const record = await opened.supervisor.get(taskId, 'alice');
          return record.status === 'completed' ? record : undefined;
        },
        { timeoutMs: 10_000 },
      );
      assert.deepEqual(done.result?.content, [
        { type: 'text', text: '{"action":"accept","content":{"v":"x"}}+{"action":"accept","content":{"v":"y"}}' },
      ]);
      assert.deepEqual(
        opened.changes.filter((change) => change.taskId === taskId).map((change) => change.status),
        ['input_required', 'working', 'input_required', 'working', 'completed'].filter((status, index, all) => status !== all[index - 1]),
      );
    } finally {
      await opened.close();
    }
  });

  it('cancel ends a passivated task at once and publishes it; its slot comes back', async () => {
    const opened = await open(join(dir.path, 'b'));
    try {
      const first = await opened.create();
      const second = await opened.create();
      await passivatedAsking(opened, first.taskId, 'a');
      await passivatedAsking(opened, second.taskId, 'a');
      // Passivated tasks still hold their owner's slots (maxLiveTasksPerPrincipal 2).
      await assert.rejects(opened.create(), /too many unfinished tasks/i);
      await opened.create(replayTool, 'bob').then(({ taskId }) => opened.supervisor.cancel(taskId, 'bob'));

      await opened.supervisor.cancel(first.taskId, 'alice');
      const cancelled = await opened.supervisor.get(first.taskId, 'alice');
      assert.equal(cancelled.status, 'cancelled', 'cancelled when cancel returns, as a live input_required task is');
      assert.equal(cancelled.statusMessage, 'The task was cancelled');
      assert.deepEqual(cancelled.inputRequests ?? {}, {});
      assert.equal(opened.changes.at(-1)?.status, 'cancelled');
      assert.equal(opened.changes.at(-1)?.snapshot, undefined);
      assert.equal(runs.get(first.taskId), 1, 'cancel did not run the handler again');
      // Terminal absorbs (I-2): a later update or cancel changes nothing.
      await opened.supervisor.update(first.taskId, 'alice', { a: 'late' });
      await opened.supervisor.cancel(first.taskId, 'alice');
      assert.deepEqual(await opened.supervisor.get(first.taskId, 'alice'), cancelled);
      // Another principal gets "not found" for a passivated task as for any foreign one (I-7).
      await assert.rejects(opened.supervisor.get(second.taskId, 'bob'), /not found|unknown/i);
      await assert.rejects(opened.supervisor.cancel(second.taskId, 'bob'), /not found|unknown/i);
      assert.equal((await opened.supervisor.get(second.taskId, 'alice')).status, 'input_required');

      const third = await opened.create();
      await opened.supervisor.cancel(second.taskId, 'alice');
      await opened.supervisor.cancel(third.taskId, 'alice');
      await waitFor(async () => ((await opened.supervisor.get(third.taskId, 'alice')).status === 'cancelled' ? true : undefined), {
        timeoutMs: 10_000,
      });
      // Every slot is back: alice can hold two unfinished tasks again.
      await opened.create();
      await opened.create();
    } finally {
      await opened.close();
    }
  });

  it('the ttl of a passivated task still ends it (T-26)', async () => {
    const opened = await open(join(dir.path, 'c'));
    try {
      const { taskId } = await opened.create(replayTool, 'alice', 800);
      await passivatedAsking(opened, taskId, 'a');
      const failed = await waitFor(
        async () => {
          const record = await opened.supervisor.get(taskId, 'alice');
          return record.status === 'failed' ? record : undefined;
        },
        { timeoutMs: 10_000 },
      );
      assert.match(failed.error?.message ?? '', /ttlMs of 800 ms elapsed/);
      assert.equal(opened.changes.at(-1)?.status, 'failed');
      assert.equal(runs.get(taskId), 1);
    } finally {
      await opened.close();
    }
  });

  it('passivated tasks end at their own deadlines, earliest first, once each; one that left is not ended by its old queue item', async () => {
    const opened = await open(join(dir.path, 'c2'), { limits: { maxLiveTasksPerPrincipal: 8, maxPendingInputRequestsPerTask: 4 } });
    try {
      // Deadlines a second apart (generous on a loaded machine), created out of deadline order.
      const late = await opened.create(replayTool, 'alice', 6_000);
      const early = await opened.create(replayTool, 'alice', 4_000);
      const cancelled = await opened.create(replayTool, 'alice', 5_000);
      // Passivated, rehydrated by an answer, passivated again: two items in the deadline queue, one task.
      const twice = await opened.create(replayTool, 'alice', 5_000);
      for (const { taskId } of [late, early, cancelled, twice]) await passivatedAsking(opened, taskId, 'a');
      await opened.supervisor.update(twice.taskId, 'alice', { a: { action: 'accept', content: { v: 'x' } } });
      await passivatedAsking(opened, twice.taskId, 'b');
      await opened.supervisor.cancel(cancelled.taskId, 'alice');

      const ended = [late, early, twice];
      await waitFor(
        async () => {
          const records = await Promise.all(ended.map(({ taskId }) => opened.supervisor.get(taskId, 'alice')));
          return records.every((record) => record.status === 'failed') || undefined;
        },
        { timeoutMs: 20_000 },
      );
      const finals = opened.changes.filter((change) => change.status === 'failed');
      // Earliest first, each once (a task queued twice gets one DEADLINE); the cancelled one only its cancel.
      assert.deepEqual(
        finals.map((change) => change.taskId),
        [early.taskId, twice.taskId, late.taskId],
      );
      for (const change of finals) {
        assert.ok(change.lastUpdatedAt >= change.createdAt + change.ttlMs!, `ended before its deadline: ${JSON.stringify(change)}`);
        assert.match(change.error?.message ?? '', /ttlMs of \d+ ms elapsed/);
      }
      assert.deepEqual(
        opened.changes.filter((change) => change.taskId === cancelled.taskId && isFinal(change.status)).map((change) => change.status),
        ['cancelled'],
      );
      assert.equal(runs.get(twice.taskId), 2);
      assert.equal(opened.supervisor.passivatedCount, 0);
    } finally {
      await opened.close();
    }
  });

  it('a resume: fail task is never passivated (its suspended handler cannot be run again)', async () => {
    const opened = await open(join(dir.path, 'd'));
    try {
      const { taskId } = await opened.create(failTool);
      await waitFor(async () => ((await opened.supervisor.get(taskId, 'alice')).status === 'input_required' ? true : undefined), {
        timeoutMs: 10_000,
      });
      // A replay task that starts waiting after it is passivated after it: by then the fail task had its turn.
      await opened.create(replayTool);
      await waitFor(() => opened.supervisor.passivatedCount === 1, { timeoutMs: 10_000, what: 'the replay task to passivate' });
      assert.equal(opened.supervisor.liveCount, 1, 'the fail task is still in memory');
    } finally {
      await opened.close();
    }
  });

  it('passivation off keeps the task live', async () => {
    const opened = await open(join(dir.path, 'e'), { passivateIdleAfterMs: false });
    // A twin with passivation on (after 0 ms): once its task, started waiting later, has left memory,
    // this one would have too had passivation been on.
    const twin = await open(join(dir.path, 'e-twin'));
    try {
      const { taskId } = await opened.create();
      await waitFor(async () => ((await opened.supervisor.get(taskId, 'alice')).status === 'input_required' ? true : undefined), {
        timeoutMs: 10_000,
      });
      await twin.create();
      await waitFor(() => twin.supervisor.passivatedCount === 1, { timeoutMs: 10_000, what: "the twin's task to passivate" });
      assert.equal(opened.supervisor.liveCount, 1);
      assert.equal(opened.supervisor.passivatedCount, 0);
    } finally {
      await twin.close();
      await opened.close();
    }
  });

  it('after a restart a passivated task stays passivated, counted, and completes with its answers replayed', async () => {
    const path = join(dir.path, 'f');
    let opened = await open(path);
    const { taskId } = await opened.create();
    await passivatedAsking(opened, taskId, 'a');
    await opened.supervisor.update(taskId, 'alice', { a: { action: 'accept', content: { v: 'x' } } });
    await passivatedAsking(opened, taskId, 'b');
    await opened.close();

    opened = await open(path);
    try {
      assert.equal(opened.supervisor.liveCount, 0, 'recovered without building its actor');
      assert.ok(opened.supervisor.isLive(taskId));
      const before = runs.get(taskId);
      const other = await opened.create();
      await assert.rejects(opened.create(), /too many unfinished tasks/i, 'the recovered passivated task holds a slot');
      await opened.supervisor.cancel(other.taskId, 'alice');
      await opened.supervisor.update(taskId, 'alice', { b: { action: 'accept', content: { v: 'y' } } });
      const done = await waitFor(
        async () => {
          const record = await opened.supervisor.get(taskId, 'alice');
          return record.status === 'completed' ? record : undefined;
        },
        { timeoutMs: 10_000 },
      );
      assert.equal(runs.get(taskId), (before ?? 0) + 1);
      assert.match(JSON.stringify(done.result), /"v\\":\\"x\\".*"v\\":\\"y\\"/);
    } finally {
      await opened.close();
    }
  });
});
