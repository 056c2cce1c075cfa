/**
 * The tools every benchmark server registers.
 *
 * - `bench_work` (`taskBehavior: 'always'`): the durable-create benchmark's
 *   tool. It finishes after `ms` (default 50) so every create is followed by
 *   a completion write, as in real use; a cancel ends it early.
 * - `bench_wait` (`always`): idle until cancelled. Live tasks for `tasks/get`,
 *   the heap benchmark and recovery (its `resume` policy is configurable).
 * - `bench_hold` (`always`): idle until released, never reading `ctx.signal`
 *   (a handler waiting on something of its own): the heap benchmark's live
 *   task whose run has made no AbortSignal.
 * - `bench_step` (`always`) + `bench_poke` (`never`): the fan-out benchmark.
 *   A poke sets the stepper task's `statusMessage` synchronously, so the
 *   status change happens inside the poke request.
 * - `bench_ask` (`always`, `resume: 'replay'`): asks `q0`, `q1`, … one after
 *   another, for ever: a task that waits for input after every answer (the
 *   passivation benchmark: it can be passivated, and every accepted
 *   `tasks/update` runs it on to its next question).
 * - `bench_sleep` (`always`, `resume: 'replay'`): sleeps an hour with
 *   `ctx.sleep`: a task that waits for a timer (passivated until its wake
 *   time when passivation is on).
 * - `echo` (`never`): the same tool the bare-SDK baseline serves.
 */
import { z } from 'zod';
import { ToolError, type ResumePolicy, type TaskvisorRuntime, type ToolContext } from '../src/index.js';

const WorkArgs = z.object({ ms: z.number().int().min(0).max(600_000).optional() });
const NoArgs = z.object({});
const PokeArgs = z.object({ taskId: z.string(), message: z.string() });
const EchoArgs = z.object({ text: z.string() });
const ASK = { message: 'next?', requestedSchema: { type: 'object' as const, properties: { v: { type: 'string' } } } };

/** Resolves when the call is cancelled. */
function cancelled(ctx: ToolContext): Promise<void> {
  return new Promise((resolve) => {
    if (ctx.signal.aborted) resolve();
    else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

export function registerBenchTools(runtime: TaskvisorRuntime, options: { resume?: ResumePolicy } = {}): void {
  const steppers = new Map<string, (message: string) => void>();
  const holders = new Set<() => void>();
  runtime.tool('bench_work', { inputSchema: WorkArgs, taskBehavior: 'always' }, async ({ ms }, ctx) => {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms ?? 50);
      ctx.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
    return 'done';
  });
  runtime.tool('bench_wait', { inputSchema: NoArgs, taskBehavior: 'always', resume: options.resume ?? 'fail' }, async (_args, ctx) => {
    await cancelled(ctx);
    return 'cancelled';
  });
  runtime.tool('bench_hold', { inputSchema: NoArgs, taskBehavior: 'always' }, async () => {
    // Held where something outside could release it (a queue, a callback registry): its suspended run stays reachable.
    await new Promise<void>((resolve) => holders.add(resolve));
    return 'released';
  });
  runtime.tool('bench_step', { inputSchema: NoArgs, taskBehavior: 'always' }, async (_args, ctx) => {
    const taskId = ctx.taskId;
    if (taskId === undefined) throw new ToolError(-32603, 'bench_step runs only as a task');
    steppers.set(taskId, (message) => ctx.setStatus(message));
    await cancelled(ctx);
    steppers.delete(taskId);
    return 'stopped';
  });
  runtime.tool('bench_poke', { inputSchema: PokeArgs, taskBehavior: 'never' }, ({ taskId, message }) => {
    const step = steppers.get(taskId);
    if (!step) throw new ToolError(-32602, `no stepper task ${taskId} (yet)`);
    step(message);
    return 'ok';
  });
  runtime.tool('bench_ask', { inputSchema: NoArgs, taskBehavior: 'always', resume: 'replay' }, async (_args, ctx) => {
    for (let question = 0; ; question++) await ctx.elicit(`q${question}`, ASK);
  });
  runtime.tool('bench_sleep', { inputSchema: NoArgs, taskBehavior: 'always', resume: 'replay' }, async (_args, ctx) => {
    await ctx.sleep('nap', 3_600_000);
    return 'woke';
  });
  runtime.tool('echo', { inputSchema: EchoArgs, taskBehavior: 'never' }, ({ text }) => ({ content: [{ type: 'text', text }] }));
}
