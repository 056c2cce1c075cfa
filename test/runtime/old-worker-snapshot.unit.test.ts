/**
 * Restore safety (I-8) across the removal of the task machine's invoked
 * `worker` child: records stored by the machine that had
 * it hold `children.worker` in their snapshot. test/fixtures/old-worker-snapshots.json
 * was captured from that machine (6 Dec 2026, before the change): a `resume`
 * task with a checkpoint, and a `replay` task answered once and waiting for a
 * second answer. A supervisor on a real SQLite file recovers them: each run
 * starts again, as the restored invoke started it, and finishes; the child
 * is dropped from the next stored snapshot (nothing else changes).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { z } from 'zod';
import type { TaskRecord } from '../../src/index.js';
import { SqliteTaskStore } from '../../src/store/index.js';
import { defineTool } from '../../src/tools/defineTool.js';
import { ToolRegistry } from '../../src/tools/ToolRegistry.js';
import { tempDir, waitFor } from '../support/processes.js';
import { openSqliteSupervisor } from '../support/sqliteSupervisor.js';

const fixture = new URL('../fixtures/old-worker-snapshots.json', import.meta.url);

/** The fixture's records moved to `now` (their ttl would have run out), times kept relative. */
function storedRecords(now: number): TaskRecord[] {
  const records = JSON.parse(readFileSync(fixture, 'utf8')) as TaskRecord[];
  return records.map((record) => {
    const shift = now - 1_000 - record.createdAt;
    const context = (record.snapshot as { context: { createdAt: number; lastUpdatedAt: number } }).context;
    context.createdAt += shift;
    context.lastUpdatedAt += shift;
    return { ...record, createdAt: record.createdAt + shift, lastUpdatedAt: record.lastUpdatedAt + shift };
  });
}

const ask = { message: 'name?', requestedSchema: { type: 'object' as const, properties: { v: { type: 'string' } } } };
const runs: Array<{ tool: string; args: unknown; checkpoint: unknown }> = [];

function registry(): ToolRegistry {
  const tools = new ToolRegistry();
  const resumed = defineTool(
    'old_resume',
    { taskBehavior: 'always', resume: 'resume', inputSchema: z.object({ n: z.number() }) },
    (args, ctx) => {
      runs.push({ tool: 'old_resume', args, checkpoint: ctx.checkpoint });
      return `resumed at ${JSON.stringify(ctx.checkpoint)} of ${args.n}`;
    },
  );
  const replayed = defineTool(
    'old_replay',
    { taskBehavior: 'always', resume: 'replay', inputSchema: z.object({ greeting: z.string() }) },
    async (args, ctx) => {
      runs.push({ tool: 'old_replay', args, checkpoint: ctx.checkpoint });
      const first = (await ctx.elicit('first', ask)) as { content?: { v?: string } };
      const last = (await ctx.elicit('last', ask)) as { content?: { v?: string } };
      return `${args.greeting} ${first.content?.v} ${last.content?.v}`;
    },
  );
  for (const tool of [resumed, replayed]) tools.add(tool.name, tool.options, tool.handler);
  return tools;
}

it('restores and runs snapshots stored with an invoked worker child', { timeout: 30_000 }, async (t) => {
  const dir = await tempDir('taskvisor-old-worker-');
  t.after(() => dir.remove());
  const seed = new SqliteTaskStore({ file: join(dir.path, 'tasks.db') });
  await seed.open();
  const [resume, replay] = storedRecords(Date.now());
  for (const record of [resume!, replay!]) await seed.create(record);
  await seed.close();

  // Never passivated: the replay task is restored into a live actor at once.
  const opened = await openSqliteSupervisor(dir.path, registry(), 4, { passivateIdleAfterMs: false });
  t.after(() => opened.close());
  const { supervisor } = opened;

  const done = await waitFor(
    async () => {
      const record = await supervisor.get(resume!.taskId, 'alice');
      return record.status === 'completed' ? record : undefined;
    },
    { timeoutMs: 10_000 },
  );
  assert.deepEqual(done.result, { content: [{ type: 'text', text: 'resumed at {"step":1} of 3' }], resultType: 'complete' });
  assert.deepEqual(
    runs.find((run) => run.tool === 'old_resume'),
    { tool: 'old_resume', args: { n: 3 }, checkpoint: { step: 1 } },
    'the run started once, from the stored args and checkpoint',
  );

  // The replay run asks again for what is outstanding (its first answer is replayed), and finishes once answered.
  const waiting = await supervisor.get(replay!.taskId, 'alice');
  assert.equal(waiting.status, 'input_required');
  assert.deepEqual(Object.keys(waiting.inputRequests ?? {}), ['last']);
  await waitFor(() => runs.some((run) => run.tool === 'old_replay') || undefined, { timeoutMs: 10_000 });
  // Its next stored snapshot has the state and context it had, and no child any more (a restore skips `worker`).
  const rewritten = await waitFor(
    async () => {
      const record = await opened.store.get(replay!.taskId);
      return record && record.version > replay!.version ? record : undefined;
    },
    { timeoutMs: 10_000 },
  );
  const before = replay!.snapshot as { value: unknown; context: unknown };
  const after = rewritten.snapshot as { value: unknown; context: unknown; children: unknown };
  assert.deepEqual(after.children, {});
  assert.deepEqual([after.value, after.context], [before.value, before.context]);
  await supervisor.update(replay!.taskId, 'alice', { last: { action: 'accept', content: { v: 'Lovelace' } } });
  const answered = await waitFor(
    async () => {
      const record = await supervisor.get(replay!.taskId, 'alice');
      return record.status === 'completed' ? record : undefined;
    },
    { timeoutMs: 10_000 },
  );
  assert.deepEqual(answered.result, { content: [{ type: 'text', text: 'hello Ada Lovelace' }], resultType: 'complete' });
  assert.equal(runs.filter((run) => run.tool === 'old_replay').length, 1, 'one run: the restored one');
});
