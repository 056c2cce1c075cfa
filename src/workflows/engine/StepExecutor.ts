/**
 * Runs one step of any kind — a tool call, an input request, or a composite
 * (`forEach`, `parallel`) whose sub-steps come back here — with its
 * condition, its time limit and its retries, and keeps its step record.
 */
import type { JsonObject } from '../../core/json.js';
import { publish } from '../../core/diagnostics.js';
import { isInputRequiredSignal } from '../../runtime/ToolExecution.js';
import type { ElicitParams } from '../../tools/ToolDefinition.js';
import type { WorkflowSubStep } from '../model/definition.js';
import { showDuration } from '../model/duration.js';
import { render, TemplateError } from '../templates/render.js';
import type { StepRecord } from './checkpoint.js';
import type { Checkpointer } from './checkpointing.js';
import { conditionHolds } from './conditions.js';
import { runForEach, runParallel, type RunSubStep } from './expansion.js';
import { describeError, errorText, guarded, now, resultValue, StepFailure, type Outcome } from './outcome.js';
import { retries, retryDelay, type RetryWaits, type TopStep } from './retryPolicy.js';
import { siteOf, type RunEnv, type StepCall } from './RunEnv.js';
import { limited, ms, raced, TimeLimit } from './timeLimits.js';

export class StepExecutor {
  constructor(
    private readonly run: RunEnv,
    private readonly checkpoints: Checkpointer,
    private readonly waits: RetryWaits,
  ) {}

  /**
   * Runs a step to its outcome (its errors become failed outcomes; only the
   * MRTR input signal passes through). `top` is given for a top-level (or
   * onFailure) step, never for a sub-step of `forEach`/`parallel`: only a top
   * step may wait out its retry backoff durably, and only a top step is
   * resumed there.
   */
  async runStep(call: StepCall, top?: TopStep): Promise<Outcome> {
    const { step, phase, recordId, signal } = call;
    // A top step restored between two attempts goes on with its record (still `running`, its attempts counted).
    const resumed = top ? this.checkpoints.takeBackoff(phase, recordId) : undefined;
    const record: StepRecord = resumed ?? { id: recordId, phase, startedAt: now(), status: 'running' };
    if (!resumed) {
      if (step.tool !== undefined) record.tool = step.tool;
      else if (step.input !== undefined) record.tool = 'input';
    }
    const started = resumed ? Date.parse(resumed.startedAt) : Date.now();
    const end = (outcome: Outcome): Outcome => {
      // A cancel (the caller's signal) is `cancelled`; a step's own time limit is a failure.
      record.status = signal.aborted && !(signal.reason instanceof TimeLimit) && outcome.status === 'failed' ? 'cancelled' : outcome.status;
      record.endedAt = now();
      record.durationMs = Date.now() - started;
      if (outcome.status === 'completed') record.result = guarded(record, outcome.result);
      if (outcome.status === 'failed')
        record.error = { message: outcome.message, ...(outcome.code !== undefined ? { code: outcome.code } : {}) };
      publish('taskvisor:workflow.step', () => ({
        workflow: this.run.definition.name,
        step: recordId,
        outcome: record.status,
        durationMs: record.durationMs!,
      }));
      return outcome;
    };
    if (!resumed) this.checkpoints.records.push(record);
    try {
      let attempt = 1;
      if (resumed?.backoff) {
        attempt = await this.waits.resume(record, resumed.backoff, signal);
      } else if (step.condition && !(await conditionHolds(this.run, step.condition, call.scope, call.outcomes, recordId, signal))) {
        return end({ status: 'skipped' });
      }
      for (; ; attempt++) {
        const limit =
          step.timeout !== undefined
            ? limited(signal, ms(step.timeout, 0), `Step ${recordId} timed out after ${showDuration(step.timeout)}`)
            : undefined;
        let outcome: Outcome;
        try {
          outcome = await this.attempt({ ...call, signal: limit?.signal ?? signal }, record);
        } finally {
          limit?.dispose();
        }
        if (outcome.status !== 'failed' || !retries(step.retry, outcome, attempt, signal)) return end(outcome);
        // Exponential backoff between attempts; a cancel interrupts the wait.
        const delay = retryDelay(step.retry, attempt);
        await this.waits.wait(record, attempt, delay, outcome.message, this.waits.mayBeDurable(top, delay), signal);
      }
    } catch (error) {
      if (isInputRequiredSignal(error)) throw error;
      if (error instanceof StepFailure)
        return end({ status: 'failed', message: error.message, ...(error.code !== undefined ? { code: error.code } : {}) });
      return end({ status: 'failed', ...describeError(error) });
    }
  }

  /** One attempt of a step (after its condition held); errors become failed outcomes with their kind. */
  private async attempt(call: StepCall, record: StepRecord): Promise<Outcome> {
    const { step, signal } = call;
    try {
      const runSub: RunSubStep = (sub, scope, outcomes, recordId) => this.runStep({ ...call, step: sub, scope, outcomes, recordId });
      if ('forEach' in step && step.forEach) return await runForEach(this.run, call, step.forEach, runSub);
      if ('parallel' in step && step.parallel) return await runParallel(call, step.parallel, step.maxConcurrency, runSub);
      if (step.input) return await this.askInput(call, step.input, record);
      return await this.callTool(call, record);
    } catch (error) {
      if (isInputRequiredSignal(error)) throw error;
      if (signal.aborted && signal.reason instanceof TimeLimit)
        return { status: 'failed', message: signal.reason.message, kind: 'timeout' };
      // A bad template or item list fails the same way every time: never retried.
      if (error instanceof StepFailure)
        return { status: 'failed', message: error.message, kind: 'invalid', ...(error.code !== undefined ? { code: error.code } : {}) };
      if (error instanceof TemplateError) return { status: 'failed', message: error.message, kind: 'invalid' };
      return { status: 'failed', kind: 'error', ...describeError(error) };
    }
  }

  /** An input step: asks the client (T-12, T-18); decline or cancel fails the step. */
  private async askInput(call: StepCall, input: NonNullable<WorkflowSubStep['input']>, record: StepRecord): Promise<Outcome> {
    const { run } = this;
    const site = siteOf(run, call.recordId);
    const params: ElicitParams = {
      message: String(await render(input.message, call.scope, { ...site, field: 'input.message' }, false, run.engine)),
      requestedSchema: {
        type: 'object',
        properties: input.requestedSchema.properties,
        ...(input.requestedSchema.required !== undefined ? { required: input.requestedSchema.required } : {}),
      },
    };
    record.input = guarded(record, params);
    // The start record is stored before anything runs (and before the client is asked).
    await this.checkpoints.persist();
    const answer = await raced(run.ctx.elicit(`${call.keyPrefix}${input.key ?? call.recordId}`, params), call.signal);
    const result = { action: answer.action, ...(answer.content !== undefined ? { content: answer.content } : {}) };
    // Documented rule: decline or cancel fails the step (allowFailure lets the run go on and branch on it).
    if (answer.action !== 'accept')
      return { status: 'failed', message: `The input request was ${answer.action === 'decline' ? 'declined' : 'cancelled'}`, result };
    return { status: 'completed', result };
  }

  /** A tool step: its rendered arguments are stored before the call; an `isError` result fails it. */
  private async callTool(call: StepCall, record: StepRecord): Promise<Outcome> {
    const { run } = this;
    const { step, recordId, keyPrefix, signal } = call;
    let args: JsonObject;
    try {
      args = (await render(step.args ?? {}, call.scope, { ...siteOf(run, recordId), field: 'args' }, false, run.engine)) as JsonObject;
    } catch (error) {
      // muster's wording for a step whose arguments cannot be rendered; bad input is never retried.
      if (error instanceof TemplateError) throw new StepFailure(`failed to render arguments: ${error.message}`);
      throw error;
    }
    record.input = guarded(record, args);
    await this.checkpoints.persist();
    const result = await raced(
      run.invoker.invoke({
        name: step.tool!,
        args,
        principal: run.ctx.principal,
        grants: run.ctx.grants,
        signal,
        requestInput: (key, request) => run.ctx.requestInput(`${keyPrefix}${recordId}/${key}`, request),
        onStatus: (message) => run.ctx.setStatus(`${run.stepStatus} — ${message}`),
        // Every step joins the run's trace.
        ...(run.ctx.trace ? { trace: run.ctx.trace } : {}),
      }),
      signal,
    );
    if (result.isError === true)
      return {
        status: 'failed',
        message: `Tool ${step.tool} returned an error: ${errorText(result)}`,
        result: resultValue(result),
        kind: 'isError',
      };
    return { status: 'completed', result: resultValue(result) };
  }
}
