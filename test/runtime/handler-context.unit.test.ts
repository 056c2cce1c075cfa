/**
 * The handler's `ctx`: one hidden class shared by every run, never
 * a dictionary-mode object. An object literal with a `get taskId()` accessor
 * was kept by V8 in dictionary mode with a closure per member, +1.0 KB per
 * live idle task (bisected to f701754); `bench/heap.ts` measures the cost,
 * this checks the shape, and that `ctx` behaves as before.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { z } from 'zod';
import { ToolExecution, type ToolExecutionOptions } from '../../src/runtime/ToolExecution.js';
import { defineTool, type ToolContext } from '../../src/index.js';
import type { TaskEvent } from '../../machines/task/index.js';

setFlagsFromString('--allow-natives-syntax');
// Compiled after the flag is set, so the intrinsic parses.
const hasFastProperties = new Function('object', 'return %HasFastProperties(object)') as (object: object) => boolean;
const haveMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

/** Runs a tool that hands out its `ctx` and waits until cancelled. */
function start(options: Pick<ToolExecutionOptions, 'taskId' | 'relay'> = {}) {
  let resolveCtx: (ctx: ToolContext) => void = () => {};
  const ctx = new Promise<ToolContext>((resolve) => (resolveCtx = resolve));
  const tool = defineTool('hold', { inputSchema: z.object({}), taskBehavior: 'auto' }, async (_args, context) => {
    resolveCtx(context);
    await new Promise((resolve) => context.signal.addEventListener('abort', resolve));
    return 'done';
  });
  const execution = new ToolExecution({ tool, args: {}, principal: 'alice', inputMode: 'wait', ...options });
  return { execution, ctx };
}

describe('handler ctx', () => {
  it('has fast properties and one hidden class for every run, before and after the call becomes a task', async () => {
    const first = start();
    const second = start({ taskId: 'task-2' });
    const [a, b] = await Promise.all([first.ctx, second.ctx]);
    assert.equal(hasFastProperties(a), true);
    assert.equal(haveMap(a, b), true);
    first.execution.becomeTask('task-1');
    assert.equal(hasFastProperties(a), true);
    assert.equal(haveMap(a, b), true);
    first.execution.abort();
    second.execution.abort();
  });

  it('shows the task id once the call is a task; taskId stays read-only', async () => {
    const { execution, ctx } = start();
    const context = await ctx;
    assert.equal(context.taskId, undefined);
    assert.equal(context.principal, 'alice');
    execution.becomeTask('task-1');
    assert.equal(context.taskId, 'task-1');
    assert.throws(() => {
      (context as { taskId: string | undefined }).taskId = 'other';
    }, TypeError);
    assert.equal(context.taskId, 'task-1');
    execution.abort();
  });

  it('relays progress and logs until the call is a task, then progress becomes the status message (T-32)', async () => {
    const progress: unknown[] = [];
    const logs: unknown[] = [];
    const { execution, ctx } = start({ relay: { progress: (update) => progress.push(update), log: (message) => logs.push(message) } });
    const events: TaskEvent[] = [];
    execution.attach((event) => events.push(event));
    const context = await ctx;
    context.progress(1, 3, 'one');
    context.log('info', { n: 1 }, 'worker');
    assert.throws(() => context.log('loud' as never, 1), TypeError);
    assert.throws(() => context.setStatus(3 as never), TypeError);
    execution.becomeTask('task-1');
    context.progress(2, 3);
    context.log('info', { n: 2 });
    assert.deepEqual(progress, [{ progress: 1, total: 3, message: 'one' }]);
    assert.deepEqual(logs, [{ level: 'info', data: { n: 1 }, logger: 'worker' }]);
    assert.deepEqual(
      events.filter((event) => event.type === 'STATUS').map((event) => event.type === 'STATUS' && event.message),
      ['1/3: one', '2/3'],
    );
    execution.abort();
  });
  it('works destructured, as the object literal did: each member is bound to its run', async () => {
    const progress: unknown[] = [];
    const first = start({ relay: { progress: (update) => progress.push(update) } });
    const second = start();
    const context = await first.ctx;
    const { progress: report, setStatus, log } = context;
    report(1, 2, 'half');
    log('info', 'x');
    assert.deepEqual(progress, [{ progress: 1, total: 2, message: 'half' }]);
    const events: TaskEvent[] = [];
    first.execution.attach((event) => events.push(event));
    first.execution.becomeTask('task-1');
    setStatus('from a destructured setStatus');
    assert.deepEqual(
      events.filter((event) => event.type === 'STATUS').map((event) => event.type === 'STATUS' && event.message),
      ['1/2: half', 'from a destructured setStatus'],
    );
    // Bound to its own run: the other run's setStatus, read later, reaches only the other run.
    const otherEvents: TaskEvent[] = [];
    second.execution.attach((event) => otherEvents.push(event));
    second.execution.becomeTask('task-2');
    const { setStatus: otherStatus } = await second.ctx;
    otherStatus('second');
    setStatus('first again');
    const statuses = (list: TaskEvent[]) => list.flatMap((event) => (event.type === 'STATUS' ? [event.message] : []));
    assert.deepEqual(statuses(otherEvents), ['second']);
    assert.deepEqual(statuses(events).at(-1), 'first again');
    first.execution.abort();
    second.execution.abort();
  });
});
