/**
 * Step conditions: muster's `condition` with a template, a tool call, or an
 * earlier step's outcome, tested by `expect` / `expectNot`. A step whose
 * condition does not hold is skipped.
 */
import type { JsonObject } from '../../core/json.js';
import type { WorkflowCondition } from '../model/definition.js';
import { render, type TemplateScope } from '../templates/render.js';
import { resultValue, StepFailure } from './outcome.js';
import type { RunEnv } from './RunEnv.js';

/** Whether `condition` of step `stepId` holds (a bad template or a missing `fromStep` throws). */
export async function conditionHolds(
  run: RunEnv,
  condition: WorkflowCondition,
  scope: TemplateScope,
  outcomes: Record<string, string>,
  stepId: string,
  signal: AbortSignal,
): Promise<boolean> {
  const site = { workflow: run.definition.name, step: stepId };
  if ('template' in condition) {
    const value = await render(condition.template, scope, { ...site, field: 'condition.template' }, true, run.engine);
    return value === true || value === 'true';
  }
  let succeeded: boolean;
  let value: unknown;
  if ('tool' in condition) {
    // muster's tool condition: the call's success (no error, no isError) and its result value are tested.
    const args = (await render(condition.args ?? {}, scope, { ...site, field: 'condition.args' }, false, run.engine)) as JsonObject;
    try {
      const result = await run.invoker.invoke({
        name: condition.tool,
        args,
        principal: run.ctx.principal,
        grants: run.ctx.grants,
        signal,
        ...(run.ctx.trace ? { trace: run.ctx.trace } : {}),
      });
      succeeded = result.isError !== true;
      value = resultValue(result);
    } catch (error) {
      if (signal.aborted) throw error;
      succeeded = false;
      value = null;
    }
  } else {
    const from = condition.fromStep;
    if (!Object.hasOwn(outcomes, from) && !Object.hasOwn(scope.results, from)) {
      throw new StepFailure(`workflow ${run.definition.name}, step ${stepId}, field condition.fromStep: step ${from} has not run`);
    }
    succeeded = outcomes[from] === 'completed';
    value = scope.results[from];
  }
  // muster's two key forms: a dotted path into the result, or a template with the result as `.result`.
  // A key template that cannot render finds nothing (so the expectation does not match), as in muster.
  const actualAt = async (path: string, field: string): Promise<unknown> => {
    if (!path.includes('{{')) return valueAt(value, path);
    const keyScope: TemplateScope & { result: unknown } = { ...scope, result: value };
    return render(path, keyScope, { ...site, field: `${field} key` }, true, run.engine).catch(() => undefined);
  };
  const matches = async (expect: NonNullable<typeof condition.expect>, field: string): Promise<boolean> => {
    if (expect.success !== undefined && succeeded !== expect.success) return false;
    for (const [path, expected] of Object.entries(expect.jsonPath ?? {})) {
      const want = await render(expected, scope, { ...site, field: `${field}.jsonPath.${path}` }, false, run.engine);
      if (JSON.stringify(await actualAt(path, `${field}.jsonPath`)) !== JSON.stringify(want)) return false;
    }
    return true;
  };
  if (condition.expect && !(await matches(condition.expect, 'condition.expect'))) return false;
  if (condition.expectNot && (await matches(condition.expectNot, 'condition.expectNot'))) return false;
  return true;
}

/** The value at a dotted path with `[i]` indexes (`a.b[0].c`), or `undefined`. */
export function valueAt(value: unknown, path: string): unknown {
  let current = value;
  for (const part of path.split(/\.|\[(\d+)\]/).filter((p) => p !== undefined && p !== '')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = Object.hasOwn(current, part) ? (current as Record<string, unknown>)[part] : undefined;
  }
  return current;
}
