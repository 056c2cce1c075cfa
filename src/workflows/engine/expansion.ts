/**
 * Composite steps: `forEach` and `parallel` both expand into branches of
 * sub-steps, run at most `maxConcurrency` at once. A `forEach` branch is one
 * item (its sub-steps in order, each seeing the earlier ones of the same
 * iteration); a `parallel` branch is one sub-step, seeing only the results
 * from before the parallel step, not its siblings'.
 */
import type { WorkflowStep, WorkflowSubStep } from '../model/definition.js';
import { render, type TemplateScope } from '../templates/render.js';
import { resultOf, StepFailure, type Failed, type Outcome } from './outcome.js';
import type { RunEnv, StepCall } from './RunEnv.js';

type ForEach = NonNullable<WorkflowStep['forEach']>;

/** Runs one sub-step: `recordId` is its id in the step records (`parent[i].sub`, `parent.sub`). */
export type RunSubStep = (
  sub: WorkflowSubStep,
  scope: TemplateScope,
  outcomes: Record<string, string>,
  recordId: string,
) => Promise<Outcome>;

interface Branches {
  count: number;
  concurrency: number;
  steps(branch: number): readonly WorkflowSubStep[];
  recordId(branch: number, sub: WorkflowSubStep): string;
  /** The scope of a sub-step, given the results of the earlier sub-steps of its branch. */
  scope(branch: number, earlier: Record<string, unknown>): TemplateScope;
  /**
   * `forEach`: after a hard failure no new branch or sub-step starts (those
   * in flight finish), and a cancel stops it before the next sub-step.
   * `parallel`: every branch runs.
   */
  stopAtFirstFailure: boolean;
}

interface BranchFailure {
  recordId: string;
  outcome: Failed;
}

/**
 * Runs the branches. Each branch's results by sub-step id, and the failure
 * that fails the composite step: the one that stopped it, or, when every
 * branch ran, the first in step order.
 */
async function runBranches(
  branches: Branches,
  outcomes: Record<string, string>,
  signal: AbortSignal,
  run: RunSubStep,
): Promise<{ values: Array<Record<string, unknown>>; failure: BranchFailure | undefined }> {
  const values: Array<Record<string, unknown>> = [];
  const failures: Array<BranchFailure | undefined> = [];
  let stopped: BranchFailure | undefined;
  const runBranch = async (branch: number): Promise<void> => {
    const local: Record<string, unknown> = {};
    values[branch] = local;
    const localOutcomes: Record<string, string> = { ...outcomes };
    for (const sub of branches.steps(branch)) {
      if (stopped) return;
      if (branches.stopAtFirstFailure) signal.throwIfAborted();
      const recordId = branches.recordId(branch, sub);
      const outcome = await run(sub, branches.scope(branch, local), localOutcomes, recordId);
      localOutcomes[sub.id] = outcome.status;
      local[sub.id] = resultOf(outcome);
      if (outcome.status === 'failed' && !sub.allowFailure) {
        failures[branch] = { recordId, outcome };
        if (branches.stopAtFirstFailure) stopped ??= failures[branch];
        return;
      }
    }
  };
  await pool(branches.count, branches.concurrency, runBranch, () => stopped !== undefined);
  return { values, failure: stopped ?? failures.find((failure) => failure !== undefined) };
}

const failedWith = (failure: BranchFailure): Failed => ({
  status: 'failed',
  message: `${failure.recordId}: ${failure.outcome.message}`,
  ...(failure.outcome.code !== undefined ? { code: failure.outcome.code } : {}),
});

/** A `forEach` step: one branch per item, sequential by default (muster's rule). Its result is the list of iterations. */
export async function runForEach(run: RunEnv, call: StepCall, forEach: ForEach, runSub: RunSubStep): Promise<Outcome> {
  const { scope, outcomes, recordId, signal } = call;
  const site = { workflow: run.definition.name, step: recordId, field: 'forEach.items' };
  const items = await render(forEach.items, scope, site, false, run.engine);
  if (!Array.isArray(items))
    throw new StepFailure(
      `workflow ${run.definition.name}, step ${recordId}, field forEach.items: expected a list (an array), got ${JSON.stringify(items)?.slice(0, 100)}`,
    );
  const as = forEach.as ?? 'item';
  const { values, failure } = await runBranches(
    {
      count: items.length,
      concurrency: forEach.maxConcurrency ?? 1,
      steps: () => forEach.steps,
      recordId: (index, sub) => `${recordId}[${index}].${sub.id}`,
      scope: (index, earlier) => ({
        input: run.input,
        results: { ...scope.results, ...earlier },
        vars: { ...scope.vars, [as]: items[index], [`${as}_index`]: index },
      }),
      stopAtFirstFailure: true,
    },
    outcomes,
    signal,
    runSub,
  );
  if (failure) {
    const kind = failure.outcome.kind !== undefined ? { kind: failure.outcome.kind } : {};
    // The iterations that started, so templates and the record see how far it got.
    return { ...failedWith(failure), ...kind, result: values.filter(Boolean) };
  }
  return { status: 'completed', result: values };
}

/** A `parallel` step: every sub-step at once (up to `maxConcurrency`). Its result maps each sub-step id to its result. */
export async function runParallel(
  call: StepCall,
  subs: readonly WorkflowSubStep[],
  maxConcurrency: number | undefined,
  runSub: RunSubStep,
): Promise<Outcome> {
  const { scope, outcomes, recordId, signal } = call;
  const { values, failure } = await runBranches(
    {
      count: subs.length,
      concurrency: maxConcurrency ?? subs.length,
      steps: (index) => [subs[index]!],
      recordId: (_, sub) => `${recordId}.${sub.id}`,
      scope: () => scope,
      stopAtFirstFailure: false,
    },
    outcomes,
    signal,
    runSub,
  );
  const result = Object.fromEntries(values.flatMap((value) => Object.entries(value)));
  // The failure of a sub-step is the parallel step's own error (its kind is not carried over to `retry.on`).
  return failure ? { ...failedWith(failure), result } : { status: 'completed', result };
}

/** Runs `task(0..count-1)` with at most `limit` at once, starting no new one once `stop()` says so. */
async function pool(count: number, limit: number, task: (index: number) => Promise<void>, stop: () => boolean): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count && !stop()) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, count)) }, worker));
}
