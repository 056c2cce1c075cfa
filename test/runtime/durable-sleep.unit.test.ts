/**
 * `ctx.sleep` on one handler run: a key slept for the first
 * time is recorded with its wake time (a `SLEEP` event for the task); a run
 * again that sleeps a stored key wakes at the stored time, at once when it
 * has passed; a key sleeps once per run; a bad `ms` is a `TypeError`; the
 * abort signal rejects a pending sleep with its reason. Outside a task the
 * sleep is a plain timer whose wake time the task gets if the call is promoted.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import type { TaskEvent } from '../../machines/task/index.js';
import { defineTool, type ToolContext } from '../../src/index.js';
import { ToolExecution, type ToolExecutionOptions } from '../../src/runtime/ToolExecution.js';

/** A run whose handler hands out its ctx and waits until aborted; its events are collected. */
async function run(options: Partial<ToolExecutionOptions> = {}) {
  let resolveCtx: (ctx: ToolContext) => void = () => {};
  const ctx = new Promise<ToolContext>((resolve) => (resolveCtx = resolve));
  const tool = defineTool('hold', { inputSchema: z.object({}), resume: 'replay' }, async (_args, context) => {
    resolveCtx(context);
    await new Promise((resolve) => context.signal.addEventListener('abort', resolve));
    return 'done';
  });
  const execution = new ToolExecution({ tool, args: {}, principal: 'alice', inputMode: 'wait', taskId: 't', ...options });
  const events: TaskEvent[] = [];
  execution.attach((event) => events.push(event));
  return { execution, events, ctx: await ctx };
}

const NOW = 1_000_000;

describe('ctx.sleep', () => {
  it('records a new key with its wake time, and reports the wake when it is over', async () => {
    let now = NOW;
    const { execution, events, ctx } = await run({ now: () => now });
    const slept = ctx.sleep('nap', 20);
    assert.deepEqual(events, [{ type: 'SLEEP', at: NOW, key: 'nap', wakeAt: NOW + 20, until: NOW + 20 }]);
    // The sleep's clock is the run's: it wakes once `now` reaches its wake time.
    now = NOW + 20;
    await slept;
    assert.deepEqual(events.at(-1), { type: 'WOKE', at: NOW + 20, until: null });
    execution.abort();
  });

  it('a stored key wakes at its stored time, not ms from now: at once when past, and sets no status again', async () => {
    const { execution, events, ctx } = await run({ now: () => NOW, sleeps: { past: NOW - 1, later: NOW + 5 } });
    ctx.setStatus('replayed');
    // ms an hour: the stored wake times decide.
    await ctx.sleep('past', 3_600_000);
    assert.deepEqual(events, [{ type: 'WOKE', at: NOW, until: null }], 'a replayed status is not set again');
    const later = ctx.sleep('later', 3_600_000);
    assert.deepEqual(events.at(-1), { type: 'SLEEP', at: NOW, key: 'later', wakeAt: NOW + 5, until: NOW + 5 });
    execution.abort(new Error('stop'));
    await assert.rejects(later, /stop/);
  });

  it('wakes a stored key at its stored time on the real clock', async () => {
    const wakeAt = Date.now() + 30;
    const { execution, ctx } = await run({ sleeps: { nap: wakeAt } });
    await ctx.sleep('nap', 3_600_000);
    assert.ok(Date.now() >= wakeAt);
    execution.abort();
  });

  it('rejects a bad ms or key with a TypeError, and a key slept twice in one run', async () => {
    const { execution, ctx } = await run();
    for (const ms of [-1, Number.NaN, Infinity, '5' as unknown as number, undefined as unknown as number])
      await assert.rejects(ctx.sleep('k', ms), (error: Error) => error instanceof TypeError && /finite number >= 0/.test(error.message));
    await assert.rejects(ctx.sleep('', 1), TypeError);
    await ctx.sleep('once', 0);
    await assert.rejects(ctx.sleep('once', 0), /already used/);
    execution.abort();
  });

  it('cancel rejects a pending sleep with the abort reason; a sleep after it rejects at once', async () => {
    const { execution, events, ctx } = await run();
    const slept = ctx.sleep('long', 3_600_000);
    execution.cancel();
    execution.detach();
    await assert.rejects(slept, (error: Error) => error.name === 'AbortError' && error === ctx.signal.reason);
    assert.deepEqual(
      events.map((event) => event.type),
      ['SLEEP', 'WOKE'],
      'the task no longer shows a sleep',
    );
    await assert.rejects(ctx.sleep('after', 0), (error: unknown) => error === ctx.signal.reason);
  });

  it('outside a task it is a plain timer; promoted, the task gets the wake time it was given', async () => {
    const tool = defineTool('nap', { inputSchema: z.object({}) }, async (_args, ctx) => {
      await ctx.sleep('nap', 20);
      return 'woke';
    });
    const execution = new ToolExecution({ tool, args: {}, principal: 'alice', inputMode: 'wait' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    execution.becomeTask('t');
    const events: TaskEvent[] = [];
    execution.attach((event) => events.push(event));
    assert.equal(events[0]?.type, 'SLEEP');
    const outcome = await execution.outcome;
    assert.equal(outcome.kind, 'done');
    assert.deepEqual(
      events.map((event) => event.type),
      ['SLEEP', 'WOKE', 'WORK_DONE'],
    );
  });
});
