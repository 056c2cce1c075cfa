/**
 * Durable sleeps (`ctx.sleep`) and passivated sleeping tasks:
 * a task of a re-runnable tool whose handler sleeps leaves memory and
 * lives in its store (a real SQLite file) until its wake time, then runs
 * again from the start, its sleep over. Through the supervisor's public API:
 * get shows what a live sleeping task shows, it wakes and completes, cancel
 * ends it at once (T-24), its ttl ends it (T-26), answers are ignored (T-22),
 * a restart keeps it passivated and wakes it at its stored time, a
 * `resume: 'fail'` task stays live, a bad `ms` fails the task.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import type { TaskRecord } from '../../src/index.js';
import type { TaskSupervisorOptions } from '../../src/runtime/TaskSupervisor.js';
import { SqliteTaskStore } from '../../src/store/index.js';
import { defineTool } from '../../src/tools/defineTool.js';
import type { ResumePolicy } from '../../src/tools/ToolDefinition.js';
import { ToolRegistry } from '../../src/tools/ToolRegistry.js';
import { tempDir, waitFor } from '../support/processes.js';
import { openSqliteSupervisor } from '../support/sqliteSupervisor.js';

/** Handler runs, per task id: a woken task runs its handler again. */
const runs = new Map<string, number>();

/** How long `nap` sleeps when its arguments say 0 (a test changes it between runs of one task). */
let defaultNapMs = 0;

/** Sets a status, sleeps `ms` under key "nap", answers "woke". */
function napper(name: string, resume: ResumePolicy) {
  return defineTool(name, { taskBehavior: 'always', resume, inputSchema: z.object({ ms: z.number() }) }, async (args, ctx) => {
    runs.set(ctx.taskId!, (runs.get(ctx.taskId!) ?? 0) + 1);
    ctx.setStatus('napping');
    await ctx.sleep('nap', args.ms === 0 ? defaultNapMs : args.ms);
    return 'woke';
  });
}

const replayTool = napper('nap_replay', 'replay');
const failTool = napper('nap_fail', 'fail');
const badTool = defineTool(
  'nap_bad',
  { taskBehavior: 'always', resume: 'replay', inputSchema: z.object({ ms: z.number() }) },
  async (_args, ctx) => {
    await ctx.sleep('nap', -1);
    return 'never';
  },
);

function registry(): ToolRegistry {
  const tools = new ToolRegistry();
  for (const tool of [replayTool, failTool, badTool]) tools.add(tool.name, tool.options, tool.handler);
  return tools;
}

/** A supervisor on an SQLite file in `dir` (test/support/sqliteSupervisor.ts), with `create` for this file's tools. */
async function open(dir: string, options: Partial<TaskSupervisorOptions> = {}) {
  const tools = registry();
  const opened = await openSqliteSupervisor(dir, tools, 4, options);
  const { supervisor } = opened;
  const create = (ms: number, tool = replayTool, ttlMs: number | null = 60_000) =>
    supervisor.create({ tool: tools.get(tool.name)!, args: { ms }, principal: 'alice', ttlMs });
  return { ...opened, create };
}

type Opened = Awaited<ReturnType<typeof open>>;

/** The stored machine context of a task (where its sleeps are kept). */
async function storedContext(opened: Opened, taskId: string): Promise<{ sleeps?: Record<string, number>; sleepingUntil?: number }> {
  const record = await opened.store.get(taskId);
  return (record?.snapshot as { context: { sleeps?: Record<string, number>; sleepingUntil?: number } }).context;
}

/** The wake time of the "nap" sleep in a stored record's snapshot. */
function storedWake(record: TaskRecord): number {
  return (record.snapshot as { context: { sleeps: Record<string, number> } }).context.sleeps.nap!;
}

/** Waits until the task's sleep is stored and no task actor is left in memory. */
async function passivatedSleeping(opened: Opened, taskId: string): Promise<TaskRecord> {
  return waitFor(
    async () => {
      const record = await opened.supervisor.get(taskId, 'alice');
      return record.status === 'working' && opened.supervisor.liveCount === 0 && opened.supervisor.passivatedCount > 0 ? record : undefined;
    },
    { timeoutMs: 10_000 },
  );
}

async function finished(opened: Opened, taskId: string): Promise<TaskRecord> {
  return waitFor(
    async () => {
      const record = await opened.supervisor.get(taskId, 'alice');
      return record.status === 'working' ? undefined : record;
    },
    { timeoutMs: 20_000 },
  );
}

/** What a client reads of a task that does not depend on when it ran. */
const shape = (record: TaskRecord) => ({
  keys: Object.keys(record).sort(),
  status: record.status,
  statusMessage: record.statusMessage,
  ttlMs: record.ttlMs,
  pollIntervalMs: record.pollIntervalMs,
  updatedWithCreation: record.lastUpdatedAt === record.createdAt,
});

describe('ctx.sleep and passivated sleeping tasks', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  before(async () => {
    dir = await tempDir('taskvisor-sleep-passivation-');
  });
  after(async () => {
    await dir.remove();
  });

  it('a sleeping replay task leaves memory, reads as a live one, wakes at its time and completes', async () => {
    const opened = await open(join(dir.path, 'a'));
    const live = await open(join(dir.path, 'a-live'), { passivateIdleAfterMs: false });
    try {
      const { taskId } = await opened.create(1_500);
      const liveTask = await live.create(60_000);
      const passivated = await passivatedSleeping(opened, taskId);
      assert.equal(runs.get(taskId), 1);
      const { sleeps, sleepingUntil } = await storedContext(opened, taskId);
      assert.equal(typeof sleeps?.nap, 'number');
      assert.equal(sleepingUntil, sleeps?.nap, 'stored as the sleep it waits for');

      // Differential: a live sleeping task (passivation off) reads the same.
      const liveRecord = await waitFor(async () => {
        const record = await live.supervisor.get(liveTask.taskId, 'alice');
        return record.statusMessage === 'napping' && (await storedContext(live, liveTask.taskId)).sleepingUntil ? record : undefined;
      });
      assert.equal(live.supervisor.liveCount, 1);
      assert.deepEqual(shape(passivated), shape(liveRecord));
      assert.equal(passivated.snapshot, undefined, 'shown without the machine snapshot, as a live task is');

      const done = await finished(opened, taskId);
      assert.equal(done.status, 'completed');
      assert.deepEqual(done.result?.content, [{ type: 'text', text: 'woke' }]);
      assert.equal(runs.get(taskId), 2, 'woken: the handler ran again, its sleep over');
      assert.ok(done.lastUpdatedAt >= sleeps!.nap!, 'not before its wake time');
      assert.deepEqual(
        opened.changes.filter((change) => change.taskId === taskId).map((change) => [change.status, change.statusMessage]),
        [
          ['working', 'napping'],
          ['completed', undefined],
        ],
        'the replayed run set no status again',
      );
      assert.equal(opened.supervisor.passivatedCount, 0);
    } finally {
      await opened.close();
      await live.close();
    }
  });

  it('cancel ends a passivated sleeping task at once; answers change nothing; its slot comes back', async () => {
    const opened = await open(join(dir.path, 'b'), { limits: { maxLiveTasksPerPrincipal: 1, maxPendingInputRequestsPerTask: 4 } });
    try {
      const { taskId } = await opened.create(600_000);
      const sleeping = await passivatedSleeping(opened, taskId);
      // A working task takes no answers (T-22): passivated, as live, nothing changes and nothing runs.
      await opened.supervisor.update(taskId, 'alice', { nap: 'wake up' });
      assert.deepEqual(await opened.supervisor.get(taskId, 'alice'), sleeping);
      assert.equal(opened.supervisor.passivatedCount, 1);
      await assert.rejects(opened.create(10), /too many unfinished tasks/i, 'a passivated task holds its slot');

      await opened.supervisor.cancel(taskId, 'alice');
      const cancelled = await opened.supervisor.get(taskId, 'alice');
      assert.equal(cancelled.status, 'cancelled', 'cancelled when cancel returns: nothing runs on its behalf (T-24)');
      assert.equal(cancelled.statusMessage, 'The task was cancelled');
      assert.equal(opened.changes.at(-1)?.status, 'cancelled');
      assert.equal(runs.get(taskId), 1, 'cancel did not run the handler again');
      assert.equal(opened.supervisor.passivatedCount, 0);
      await opened.supervisor.cancel((await opened.create(600_000)).taskId, 'alice');
    } finally {
      await opened.close();
    }
  });

  it('the ttl of a passivated sleeping task still ends it (T-26)', async () => {
    const opened = await open(join(dir.path, 'c'));
    try {
      const { taskId } = await opened.create(600_000, replayTool, 800);
      await passivatedSleeping(opened, taskId);
      const failed = await finished(opened, taskId);
      assert.equal(failed.status, 'failed');
      assert.match(failed.error?.message ?? '', /ttlMs of 800 ms elapsed/);
      assert.equal(runs.get(taskId), 1);
    } finally {
      await opened.close();
    }
  });

  it('after a restart a sleeping task stays passivated and wakes at its stored time, not a new one', async () => {
    const path = join(dir.path, 'd');
    let opened = await open(path);
    defaultNapMs = 2_000;
    const { taskId } = await opened.create(0);
    await passivatedSleeping(opened, taskId);
    const stored = await storedContext(opened, taskId);
    await opened.close();

    // Had the run after the restart slept its `ms` again from then, it would not wake within this test.
    defaultNapMs = 3_600_000;
    opened = await open(path);
    try {
      assert.equal(opened.supervisor.liveCount, 0, 'recovered without building its actor');
      assert.equal(opened.supervisor.passivatedCount, 1);
      assert.ok(opened.supervisor.isLive(taskId));
      const done = await finished(opened, taskId);
      assert.equal(done.status, 'completed');
      assert.ok(done.lastUpdatedAt >= stored.sleeps!.nap!);
      assert.equal(runs.get(taskId), 2);
    } finally {
      defaultNapMs = 0;
      await opened.close();
    }
  });

  it('graceful stop leaves a passivated sleeping task as stored; adopted by another instance it stays passivated and wakes', async () => {
    const first = await open(join(dir.path, 'adopt-a'));
    const { taskId } = await first.create(2_000);
    await passivatedSleeping(first, taskId);
    const before = await first.store.get(taskId);
    await first.close();
    // Stopping wrote nothing (I-9): the task is in the store exactly as it was passivated, still working.
    const reopened = new SqliteTaskStore({ file: join(dir.path, 'adopt-a', 'tasks.db') });
    await reopened.open();
    const record = (await reopened.get(taskId))!;
    await reopened.close();
    assert.deepEqual(record, before);
    assert.equal(record.status, 'working');

    // Another instance takes it over (cluster adoption's path: resumeAll, cause 'adopted').
    const second = await open(join(dir.path, 'adopt-b'));
    try {
      await second.store.create(record);
      const outcome = await second.supervisor.resumeAll([record], 'adopted');
      assert.equal(outcome.resumed, 1);
      assert.equal(second.supervisor.liveCount, 0, 'held passivated, no actor built');
      assert.equal(second.supervisor.passivatedCount, 1);
      const done = await finished(second, taskId);
      assert.equal(done.status, 'completed');
      assert.ok(done.lastUpdatedAt >= storedWake(record));
    } finally {
      await second.close();
    }
  });

  it('a resume: fail task sleeps live (its handler cannot be run again); cancel rejects its sleep', async () => {
    const opened = await open(join(dir.path, 'e'));
    try {
      const { taskId } = await opened.create(600_000, failTool);
      await waitFor(async () => ((await storedContext(opened, taskId)).sleepingUntil ? true : undefined), { timeoutMs: 10_000 });
      // A replay task that starts sleeping after it is passivated after it: by then the fail task had its turn.
      const witness = await opened.create(600_000);
      await waitFor(() => opened.supervisor.passivatedCount === 1, { timeoutMs: 10_000, what: 'the replay task to passivate' });
      assert.equal(opened.supervisor.liveCount, 1, 'the fail task is still in memory');
      await opened.supervisor.cancel(witness.taskId, 'alice');
      await opened.supervisor.cancel(taskId, 'alice');
      const cancelled = await finished(opened, taskId);
      assert.equal(cancelled.status, 'cancelled', 'the aborted sleep ended the handler, which acknowledged the cancel');
    } finally {
      await opened.close();
    }
  });

  it('a sleep shorter than the threshold keeps the task live; it still wakes and completes', async () => {
    const opened = await open(join(dir.path, 'f'), { passivateIdleAfterMs: 60_000 });
    try {
      const { taskId } = await opened.create(50);
      const done = await finished(opened, taskId);
      assert.equal(done.status, 'completed');
      assert.equal(runs.get(taskId), 1, 'never passivated: one run');
    } finally {
      await opened.close();
    }
  });

  it('a bad ms fails the task with a clear TypeError message', async () => {
    const opened = await open(join(dir.path, 'g'));
    try {
      const { taskId } = await opened.create(0, badTool);
      const failed = await finished(opened, taskId);
      assert.equal(failed.status, 'failed');
      assert.match(failed.error?.message ?? '', /sleep\(key, ms\): ms must be a finite number >= 0, got -1/);
    } finally {
      await opened.close();
    }
  });
});
