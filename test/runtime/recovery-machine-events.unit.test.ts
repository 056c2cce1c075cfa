/**
 * Recovery ends every task it cannot resume through the task machine (I-3),
 * also when the stored snapshot cannot be restored (a tool
 * that is gone, an older machine version, a synchronous run's history
 * entry): the failed record says why, keeps what the task showed (progress
 * checkpoint, trace, ttl), moves forward in time and version, and change
 * listeners hear of it. A real lowdb store in a temp dir, a real restart.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRuntime, LOCAL_PRINCIPAL, silentLogger, type TaskRecord } from '../../src/index.js';
import { LowdbTaskStore } from '../../src/store/index.js';
import { tempDir } from '../support/processes.js';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/** An unfinished task as an earlier run of the server left it. */
function unfinished(taskId: string, overrides: Partial<TaskRecord>): TaskRecord {
  return {
    taskId,
    owner: LOCAL_PRINCIPAL.id,
    tool: 'gone_tool',
    status: 'input_required',
    statusMessage: 'Waiting for a name',
    createdAt: 1_000,
    lastUpdatedAt: 5_000,
    ttlMs: null,
    pollIntervalMs: 700,
    inputRequests: {
      name: { method: 'elicitation/create', params: { message: 'name?', requestedSchema: { type: 'object', properties: {} } } },
    },
    version: 4,
    machineVersion: 1,
    checkpoint: { step: 2 },
    trace: { traceparent: TRACEPARENT },
    snapshot: { status: 'active', value: { active: 'input_required' }, context: {} },
    ...overrides,
  };
}

describe('recovery through SERVER_RESTARTED', () => {
  it('fails tasks whose snapshot is not restored with the reason, keeping what they showed', async () => {
    const dir = await tempDir('recovery-events');
    const seed = new LowdbTaskStore({ dir: dir.path });
    await seed.open();
    await seed.create(unfinished('gone-tool-task', {}));
    await seed.create(unfinished('old-machine-task', { machineVersion: 0 }));
    await seed.create(unfinished('history-task', { historyOnly: true }));
    await seed.close();

    const runtime = createRuntime({ store: new LowdbTaskStore({ dir: dir.path }), logger: silentLogger, reapIntervalMs: 0 });
    const heard: TaskRecord[] = [];
    runtime.onTaskChange((record) => heard.push(record));
    const report = await runtime.start();
    try {
      assert.equal(report.failed, 3);
      const cases = [
        ['gone-tool-task', /no longer has the tool gone_tool/],
        ['old-machine-task', /task machine version it cannot restore \(stored 0, running 1\)/],
      ] as const;
      for (const [taskId, why] of cases) {
        const task = await runtime.getTask(taskId);
        assert.equal(task.status, 'failed', taskId);
        assert.match(task.statusMessage ?? '', why);
        assert.deepEqual(task.error, { code: -32603, message: task.statusMessage });
        assert.equal(task.inputRequests, undefined, 'a failed task asks for nothing');
        assert.deepEqual(task.checkpoint, { step: 2 }, 'the progress report stays');
        assert.equal(task.trace?.traceparent, TRACEPARENT, 'the task stays findable in traces');
        assert.equal(task.ttlMs, null);
        assert.equal(task.createdAt, 1_000);
        assert.ok(task.lastUpdatedAt >= 5_000, 'time only moves forward');
        assert.equal(task.version, 5, 'one write after the stored version');
        assert.equal(task.snapshot, undefined, 'a terminal task keeps no snapshot');
        assert.ok(
          heard.some((record) => record.taskId === taskId && record.status === 'failed'),
          'listeners hear of it',
        );
      }
      // A synchronous run's history entry ends failed too, and stays unknown to tasks/* (T-14).
      await assert.rejects(runtime.getTask('history-task'), /not found|unknown/i);
      const history = heard.find((record) => record.taskId === 'history-task');
      assert.equal(history?.status, 'failed');
      assert.equal(history?.historyOnly, true);
      assert.match(history?.statusMessage ?? '', /synchronous run/);
    } finally {
      await runtime.close();
      await dir.remove();
    }
  });
});
