/**
 * The caller's scopes and groups are kept with its task (tool policy: a
 * task's own calls run with the caller's rights): a replayable task waiting
 * for input survives a restart on a durable store, and its run after the
 * restart still holds the grants of the principal that created it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRuntime, defineTool, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { TASKS_CAPABILITIES } from '../support/extTasksClient.js';
import { tempDir } from '../support/processes.js';

const whoami = defineTool('whoami', { taskBehavior: 'always', resume: 'replay' }, async (_args, ctx) => {
  await ctx.elicit('go', {
    message: 'Go on?',
    requestedSchema: { type: 'object', properties: { go: { type: 'boolean' } }, required: ['go'] },
  });
  return JSON.stringify(ctx.grants ?? null);
});

async function open(dir: string): Promise<TaskvisorRuntime> {
  const runtime = createRuntime({ store: { kind: 'lowdb', dir }, logger: silentLogger, reapIntervalMs: 0, passivateIdleAfterMs: false });
  runtime.use(whoami);
  await runtime.start();
  return runtime;
}

async function until(runtime: TaskvisorRuntime, taskId: string, status: string) {
  for (;;) {
    const task = await runtime.getTask(taskId, { id: 'alice' });
    if (task.status === status) return task;
    assert.ok(!['completed', 'failed', 'cancelled'].includes(task.status) || task.status === status, JSON.stringify(task));
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("a task keeps its creator's grants across a restart", () => {
  it('the replayed run after the restart sees the scopes and groups of the creating call', async () => {
    const dir = await tempDir('taskvisor-grants-');
    try {
      const first = await open(dir.path);
      const created = await first.toolCalls.answer({
        name: 'whoami',
        args: {},
        principal: 'alice',
        grants: { scopes: ['admin'], groups: ['ops'] },
        era: 'modern',
        clientCapabilities: TASKS_CAPABILITIES,
      });
      const taskId = String(created.taskId);
      await until(first, taskId, 'input_required');
      await first.close();

      const second = await open(dir.path);
      try {
        await until(second, taskId, 'input_required');
        await second.taskRequests.update(
          taskId,
          'alice',
          { accepted: { go: { action: 'accept', content: { go: true } } }, dropped: [] },
          TASKS_CAPABILITIES,
        );
        const done = await until(second, taskId, 'completed');
        const text = (done.result?.content as { text: string }[] | undefined)?.[0]?.text;
        assert.deepEqual(JSON.parse(String(text)), { scopes: ['admin'], groups: ['ops'] });
      } finally {
        await second.close();
      }
    } finally {
      await dir.remove();
    }
  });
});
