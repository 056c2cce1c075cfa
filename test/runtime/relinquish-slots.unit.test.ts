/**
 * A task this instance stops running without finishing it (lost lease,
 * fenced write: `relinquish`) gives its owner's live-task slot back:
 * after `relinquishAll()` a principal that was at
 * `maxLiveTasksPerPrincipal` can create tasks again without a restart.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { MemoryTaskStore } from '../../src/store/index.js';
import { silentLogger } from '../../src/index.js';
import { TaskSupervisor } from '../../src/runtime/TaskSupervisor.js';
import { defineTool } from '../../src/tools/defineTool.js';
import { ToolRegistry } from '../../src/tools/ToolRegistry.js';

const waitForAbort = defineTool('wait_for_abort', { taskBehavior: 'always', inputSchema: z.object({}) }, (_args, ctx) => {
  return new Promise<string>((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true }));
});

async function supervisorAtLimit(limit: number) {
  const store = new MemoryTaskStore();
  await store.open();
  const tools = new ToolRegistry();
  tools.add(waitForAbort.name, waitForAbort.options, waitForAbort.handler);
  const supervisor = new TaskSupervisor({
    store,
    tools,
    logger: silentLogger,
    reapIntervalMs: 0,
    limits: { maxLiveTasksPerPrincipal: limit, maxPendingInputRequestsPerTask: 4 },
  });
  await supervisor.start();
  const create = (principal: string) => supervisor.create({ tool: tools.get(waitForAbort.name)!, args: {}, principal, ttlMs: 60_000 });
  return { supervisor, store, create };
}

describe('relinquished tasks give their owner slot back', () => {
  it('after relinquishAll(), a principal that was at its limit can create again', async () => {
    const { supervisor, store, create } = await supervisorAtLimit(2);
    try {
      await create('alice');
      await create('alice');
      await assert.rejects(create('alice'), /too many unfinished tasks/);
      supervisor.relinquishAll();
      assert.equal(supervisor.liveCount, 0);
      await create('alice');
      await create('alice');
      await assert.rejects(create('alice'), /too many unfinished tasks/);
    } finally {
      await supervisor.stop();
      await store.close();
    }
  });

  it("relinquishing one task frees exactly one slot, and only its owner's", async () => {
    const { supervisor, store, create } = await supervisorAtLimit(1);
    try {
      const alices = await create('alice');
      await create('bob');
      supervisor.relinquish(alices.taskId);
      supervisor.relinquish(alices.taskId); // twice: still one slot
      await create('alice');
      await assert.rejects(create('alice'), /too many unfinished tasks/);
      await assert.rejects(create('bob'), /too many unfinished tasks/);
    } finally {
      await supervisor.stop();
      await store.close();
    }
  });
});
