/**
 * The generic durable-progress mechanism under workflows, for any tool:
 * `ctx.saveCheckpoint` stores JSON with the task (TaskRecord.checkpoint), a
 * `resume: 'resume'` tool gets it back as `ctx.checkpoint` after a restart,
 * a `replay` tool starts over without it. Real lowdb store in a temp dir;
 * graceful close leaves the tasks unfinished in the store, like a crash would.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { z } from 'zod';
import { ANONYMOUS_PRINCIPAL, createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { LowdbTaskStore } from '../../src/store/index.js';
import { connect } from '../support/extTasksClient.js';
import { taskOps } from '../support/taskOps.js';
import { tempDir, waitFor } from '../support/processes.js';

const untilAborted = (signal: AbortSignal) =>
  new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));

function runtimeOn(dir: string, seen: unknown[], blockAt: number | undefined): TaskvisorRuntime {
  const runtime = createRuntime({ store: new LowdbTaskStore({ dir }), logger: silentLogger, reapIntervalMs: 0 });
  for (const resume of ['resume', 'replay'] as const) {
    runtime.tool(`count_${resume}`, { taskBehavior: 'always', resume, inputSchema: z.object({ to: z.number() }) }, async ({ to }, ctx) => {
      seen.push({ resume, checkpoint: ctx.checkpoint });
      let done = (ctx.checkpoint as { done?: number } | undefined)?.done ?? 0;
      while (done < to) {
        if (done === blockAt) await untilAborted(ctx.signal);
        done++;
        await ctx.saveCheckpoint({ done });
      }
      return `counted to ${done}`;
    });
  }
  return runtime;
}

it("saveCheckpoint is stored with the task; resume: 'resume' continues from it after a restart, 'replay' starts over", async (t) => {
  const dir = await tempDir('taskvisor-checkpoint-');
  t.after(() => dir.remove());
  const seen: unknown[] = [];
  const first = runtimeOn(dir.path, seen, 2);
  await first.start();
  const listener = await listenHttp(first, { port: 0 });
  const client = await connect({ kind: 'http', url: listener.url });
  const ops = taskOps(() => client);
  const resumed = (await ops.createTask('count_resume', { to: 4 })).taskId;
  const replayed = (await ops.createTask('count_replay', { to: 4 })).taskId;
  await client.close();
  // Both block after two durable steps; the store holds their checkpoints.
  await waitFor(async () => ((await first.store.get(resumed))?.checkpoint as { done?: number } | undefined)?.done === 2, {
    what: 'checkpoint 2',
  });
  await waitFor(async () => ((await first.store.get(replayed))?.checkpoint as { done?: number } | undefined)?.done === 2, {
    what: 'checkpoint 2',
  });
  await first.close();

  const second = runtimeOn(dir.path, seen, undefined);
  const report = await second.start();
  assert.deepEqual(report, { resumed: 2, failed: 0, quarantined: 0 });
  const finished = async (taskId: string) =>
    waitFor(
      async () => {
        const task = await second.getTask(taskId, ANONYMOUS_PRINCIPAL);
        return task.status === 'completed' ? task : undefined;
      },
      { what: `task ${taskId}` },
    );
  assert.deepEqual((await finished(resumed)).result?.content, [{ type: 'text', text: 'counted to 4' }]);
  assert.deepEqual((await finished(replayed)).result?.content, [{ type: 'text', text: 'counted to 4' }]);
  // After the restart the resume tool got its checkpoint, the replay tool did not.
  assert.deepEqual(
    seen.slice(2).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    [
      { resume: 'replay', checkpoint: undefined },
      { resume: 'resume', checkpoint: { done: 2 } },
    ],
  );
  // The final record keeps the last checkpoint (durable progress report).
  assert.deepEqual((await second.store.get(resumed))?.checkpoint, { done: 4 });
  await second.close();
});
