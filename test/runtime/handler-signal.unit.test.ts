/**
 * `ctx.signal` is made only when the handler reads it (an AbortSignal costs
 * ~770 B of every live task that holds one), and behaves as documented
 * (docs/tools.md "The context") whenever it is read: a signal captured
 * before a cancel fires on it with the cancel's reason (T-24); one read
 * after comes already aborted with the same reason; every read is the same
 * signal. Then every documented member of `ctx` on one run, and a cancel
 * through a real runtime to a handler that captured its signal first.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import type { TaskEvent } from '../../machines/task/index.js';
import { createRuntime, defineTool, LOCAL_PRINCIPAL, silentLogger, type ToolContext } from '../../src/index.js';
import type { ToolCaller } from '../../src/runtime/ToolCaller.js';
import { ToolExecution, type ToolExecutionOptions } from '../../src/runtime/ToolExecution.js';
import { MemoryTaskStore } from '../../src/store/index.js';

/** A run whose handler hands out its ctx, then waits on `hold` (never on its signal); its events are collected. */
async function run(options: Partial<ToolExecutionOptions> = {}) {
  let resolveCtx: (ctx: ToolContext) => void = () => {};
  const ctx = new Promise<ToolContext>((resolve) => (resolveCtx = resolve));
  let release: (value: unknown) => void = () => {};
  const hold = new Promise((resolve) => (release = resolve));
  const tool = defineTool('hold', { inputSchema: z.object({}), resume: 'replay' }, async (_args, context) => {
    resolveCtx(context);
    await hold;
    if (context.signal.aborted) throw context.signal.reason;
    return 'done';
  });
  const execution = new ToolExecution({ tool, args: {}, principal: 'alice', inputMode: 'wait', taskId: 't', ...options });
  const events: TaskEvent[] = [];
  execution.attach((event) => events.push(event));
  return { execution, events, ctx: await ctx, release };
}

describe('ctx.signal, made when read', () => {
  it('a signal captured before the cancel fires on it with the cancel reason, and the run ends aborted (T-24)', async () => {
    const { execution, ctx, release, events } = await run();
    const { signal } = ctx;
    assert.equal(signal.aborted, false);
    const fired: unknown[] = [];
    signal.addEventListener('abort', () => fired.push(signal.reason), { once: true });
    execution.cancel();
    assert.equal(signal.aborted, true);
    assert.equal(fired.length, 1, 'the listener ran during the cancel');
    assert.ok(fired[0] instanceof DOMException && fired[0].name === 'AbortError');
    assert.equal(ctx.signal, signal, 'every read is the same signal');
    release(undefined);
    assert.deepEqual(await execution.outcome, { kind: 'aborted' });
    await Promise.resolve();
    assert.deepEqual(
      events.map((event) => event.type),
      ['WORK_ABORTED'],
    );
  });

  it('a signal first read after the cancel comes aborted with the same reason', async () => {
    const { execution, ctx, release } = await run();
    const reason = new DOMException('stop now', 'AbortError');
    execution.abort(reason);
    const late = ctx.signal;
    assert.equal(late.aborted, true);
    assert.equal(late.reason, reason);
    assert.throws(
      () => late.throwIfAborted(),
      (error) => error === reason,
    );
    release(undefined);
    await execution.outcome;
  });

  it('a run whose handler never reads the signal is still stopped: pending input and sleeps reject with the reason', async () => {
    const { execution, ctx, release } = await run({ now: () => 1_000 });
    const asked = ctx.elicit('name', { message: 'name?', requestedSchema: { type: 'object', properties: {} } });
    const slept = ctx.sleep('nap', 60_000);
    execution.cancel();
    await assert.rejects(asked, { name: 'AbortError' });
    await assert.rejects(slept, { name: 'AbortError' });
    await assert.rejects(ctx.requestInput('later', { method: 'roots/list', params: {} }), { name: 'AbortError' });
    release(undefined);
    assert.deepEqual(await execution.outcome, { kind: 'aborted' });
  });

  it('a second abort changes nothing: the first reason stays', async () => {
    const { execution, ctx, release } = await run();
    const signal = ctx.signal;
    const first = new Error('first');
    execution.abort(first);
    execution.abort(new Error('second'));
    execution.cancel();
    assert.equal(signal.reason, first);
    release(undefined);
    await execution.outcome;
  });
});

describe('every documented member of ctx', () => {
  it('taskId, principal, checkpoint, trace, setStatus, progress, log, elicit, requestInput, sleep, saveCheckpoint', async () => {
    const trace = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    const clientCapabilities = { elicitation: { form: {} }, roots: {} };
    const { execution, ctx, events, release } = await run({ now: () => 5, checkpoint: { step: 1 }, trace, clientCapabilities });
    assert.equal(ctx.taskId, 't');
    assert.equal(ctx.principal, 'alice');
    assert.deepEqual(ctx.checkpoint, { step: 1 });
    assert.deepEqual(ctx.trace, trace);
    ctx.setStatus('working on it');
    ctx.progress(1, 4, 'a quarter');
    ctx.log('info', 'dropped: the call is a task');
    const answer = ctx.elicit('name', { message: 'name?', requestedSchema: { type: 'object', properties: { n: { type: 'string' } } } });
    const roots = ctx.requestInput('roots', { method: 'roots/list', params: {} });
    execution.deliver({ name: { action: 'accept', content: { n: 'Ada' } }, roots: { roots: [] } });
    assert.deepEqual(await answer, { action: 'accept', content: { n: 'Ada' } });
    assert.deepEqual(await roots, { roots: [] });
    await ctx.saveCheckpoint({ step: 2 });
    await ctx.sleep('zero', 0);
    assert.deepEqual(
      events.map((event) => event.type),
      ['STATUS', 'STATUS', 'INPUT_NEEDED', 'INPUT_NEEDED', 'CHECKPOINT', 'SLEEP', 'WOKE'],
    );
    const inputs = events.flatMap((event) => (event.type === 'INPUT_NEEDED' ? [event.request.method] : []));
    assert.deepEqual(inputs, ['elicitation/create', 'roots/list']);
    assert.deepEqual(
      events.flatMap((event) => (event.type === 'STATUS' ? [event.message] : [])),
      ['working on it', '1/4: a quarter'],
    );
    release(undefined);
    assert.deepEqual((await execution.outcome).kind, 'done');
  });
});

describe('tasks/cancel through the runtime (T-24)', () => {
  it('a handler that captured ctx.signal before the cancel sees it aborted, and its task ends cancelled', async () => {
    const runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger, reapIntervalMs: 0 });
    let captured: AbortSignal | undefined;
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => (started = resolve));
    runtime.tool('captures', { inputSchema: z.object({}), taskBehavior: 'always' }, async (_args, ctx) => {
      captured = ctx.signal;
      started();
      // Waits on something else first; the captured signal is read again only after the cancel.
      await new Promise((resolve) => captured!.addEventListener('abort', resolve, { once: true }));
      throw captured.reason;
    });
    await runtime.start();
    try {
      // The call path a tools/call takes once the SDK has parsed it (as bench/heap.ts drives it).
      const caller = (runtime as unknown as { parts: { caller: ToolCaller } }).parts.caller;
      const outcome = await caller.call({
        name: 'captures',
        args: {},
        principal: LOCAL_PRINCIPAL.id,
        declaresTasks: true,
        clientCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
      });
      assert.equal(outcome.kind, 'task');
      const taskId = outcome.kind === 'task' ? outcome.task.taskId : '';
      await running;
      assert.equal(captured!.aborted, false);
      const ended = new Promise<void>((resolve) => {
        const off = runtime.onTaskChange((record) => {
          if (record.taskId === taskId && record.status === 'cancelled') (off(), resolve());
        });
      });
      await runtime.cancelTask(taskId);
      await ended;
      assert.equal(captured!.aborted, true);
      assert.equal((captured!.reason as Error).name, 'AbortError');
      assert.equal((await runtime.getTask(taskId)).status, 'cancelled');
    } finally {
      await runtime.close();
    }
  });
});
