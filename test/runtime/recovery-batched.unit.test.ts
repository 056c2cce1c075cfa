/**
 * Start-up recovery writes the tasks it ends `failed` with one batched store
 * call per page (`putMany`: no fsync per task when 100k tasks recover), and
 * keeps the durability rules of every other write (durable before visible):
 * a recovered task's failure is
 * shown — by `getTask` and to change listeners — only once the batch holding
 * it is durable; a batch the store refuses is written record by record, so
 * one record the store cannot take is set aside alone and the rest end
 * `failed`. A real SQLite file behind the fault-injecting wrapper.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createActor } from 'xstate';
import { taskMachine, TASK_MACHINE_VERSION } from '../../machines/task/index.js';
import { subscribe } from '../../src/core/diagnostics.js';
import { createRuntime, LOCAL_PRINCIPAL, silentLogger, type TaskRecord, type TaskvisorRuntime } from '../../src/index.js';
import { FaultyTaskStore } from '../support/FaultyTaskStore.js';
import { SqliteTaskStore } from '../../src/store/index.js';
import { recordOf } from '../../src/tasks/project.js';
import { tempDir } from '../support/processes.js';

/** How a task of `tool` is stored right after its create (the actor built, not started), as the supervisor stores it. */
function justCreated(taskId: string, tool: string): TaskRecord {
  const actor = createActor(taskMachine, {
    input: { taskId, owner: LOCAL_PRINCIPAL.id, tool, args: {}, now: Date.now() - 1_000, ttlMs: null },
  });
  return recordOf(actor.getSnapshot(), actor.getPersistedSnapshot(), 1, TASK_MACHINE_VERSION);
}

const dirs: Array<Awaited<ReturnType<typeof tempDir>>> = [];

/** A SQLite file holding `ids` unfinished tasks of the tool `plain` (no resume: recovery ends them). */
async function seeded(ids: readonly string[]): Promise<string> {
  const dir = await tempDir('recovery-batched');
  dirs.push(dir);
  const file = join(dir.path, 'tasks.sqlite');
  const seed = new SqliteTaskStore({ file });
  await seed.open();
  await Promise.all(ids.map((taskId) => seed.create(justCreated(taskId, 'plain'))));
  await seed.close();
  return file;
}

function runtimeOver(store: FaultyTaskStore): { runtime: TaskvisorRuntime; changes: TaskRecord[] } {
  const runtime = createRuntime({ store, logger: silentLogger, reapIntervalMs: 0 });
  runtime.tool('plain', { taskBehavior: 'always' }, () => 'never runs');
  const changes: TaskRecord[] = [];
  runtime.onTaskChange((record) => changes.push(record));
  return { runtime, changes };
}

/** Lets queued callbacks and I/O run a few rounds, so a wrongly early answer would have arrived. */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('start-up recovery writes its failures in batches', () => {
  after(() => Promise.all(dirs.map((dir) => dir.remove())));

  it('one write for the page; nothing is shown failed until it is durable, then every task is', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `task-${String(i).padStart(2, '0')}`);
    const store = new FaultyTaskStore(new SqliteTaskStore({ file: await seeded(ids) }));
    const { runtime, changes } = runtimeOver(store);
    store.inject({ effect: 'hang', ops: ['putMany'] });
    // Store diagnostics (metrics, timelines) still see one put per task, reported when the batch settled.
    const reported: string[] = [];
    const unsubscribe = subscribe('taskvisor:store.operation', (message) => {
      if (message.source === runtime.store && message.op === 'put' && message.summary?.status === 'failed') reported.push(message.taskId);
    });
    await runtime.open();
    const attemptsBefore = store.writeAttempts;
    let started = false;
    const starting = runtime.start().then((report) => {
      started = true;
      return report;
    });
    try {
      while (store.hungWrites === 0 && !started) await settle();
      await settle();
      assert.equal(started, false, 'recovery wrote its failures without a batched write');
      assert.equal(store.hungWrites, 1);
      // The batch is in the store's hands but not durable: the tasks answer what is stored, no listener heard of them.
      for (const taskId of [ids[0]!, ids[39]!]) assert.equal((await runtime.getTask(taskId)).status, 'working');
      assert.equal(changes.length, 0);
      assert.equal(reported.length, 0);
      store.heal();
      assert.deepEqual(await starting, { resumed: 0, failed: 40, quarantined: 0 });
      // All 40 ended by one write (the page), not one per task.
      assert.equal(store.writeAttempts - attemptsBefore, 1);
      for (const taskId of ids) {
        const task = await runtime.getTask(taskId);
        assert.equal(task.status, 'failed');
        assert.match(task.error?.message ?? '', /restarted/);
      }
      assert.deepEqual(changes.map((record) => record.taskId).sort(), ids);
      assert.ok(changes.every((record) => record.status === 'failed'));
      assert.deepEqual(reported.sort(), ids);
    } finally {
      unsubscribe();
      store.heal();
      await runtime.close();
    }
  });

  it('a refused batch is written record by record: the one record the store refuses is set aside, the rest end failed', async () => {
    const ids = Array.from({ length: 6 }, (_, i) => `task-${i}`);
    const store = new FaultyTaskStore(new SqliteTaskStore({ file: await seeded(ids) }));
    const { runtime, changes } = runtimeOver(store);
    store.inject({ effect: 'EIO', ops: ['putMany'], times: 1 });
    store.inject({ effect: 'ENOSPC', ops: ['put'], when: (write) => write.taskId === 'task-3' });
    try {
      assert.deepEqual(await runtime.start(), { resumed: 0, failed: 5, quarantined: 1 });
      for (const taskId of ids.filter((taskId) => taskId !== 'task-3')) assert.equal((await runtime.getTask(taskId)).status, 'failed');
      await assert.rejects(runtime.getTask('task-3'), /damaged|set aside/i);
      assert.equal((await runtime.store.listQuarantined()).map((entry) => entry.taskId).join(), 'task-3');
      assert.deepEqual(
        changes.map((record) => record.taskId).sort(),
        ids.filter((taskId) => taskId !== 'task-3'),
      );
    } finally {
      store.heal();
      await runtime.close();
    }
  });
});
