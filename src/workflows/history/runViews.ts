/**
 * muster's views of one recorded run for `core_workflow_execution_get`:
 * the full record, the summary without step data, or one step.
 */
import type { RunDetail } from './RunHistory.js';

/**
 * muster's `include_steps` / `step_id` views of one run: without steps; or
 * reduced to one step (the run's `result` and `error` dropped, as muster
 * does: a completed step of a failed run shows no error).
 */
export function viewOf(detail: RunDetail, options: { includeSteps?: boolean; stepId?: string }): RunDetail | undefined {
  if (options.stepId !== undefined) {
    const steps = (detail.steps ?? []).filter((step) => step.step_id === options.stepId);
    if (steps.length === 0) return undefined;
    const { result: _result, error: _error, ...rest } = detail;
    return { ...rest, steps };
  }
  if (options.includeSteps === false) {
    const { steps: _steps, ...rest } = detail;
    return { ...rest, result: withoutStepData(rest.result) };
  }
  return detail;
}

/**
 * muster's summary view also takes the step data (`steps`, `template_vars`,
 * and taskvisor's per-step `results`) out of the run's answer: from its structured content and from each text
 * block holding it as JSON.
 */
function withoutStepData(result: unknown): unknown {
  if (result === null || typeof result !== 'object' || Array.isArray(result)) return result;
  const answer = result as Record<string, unknown>;
  const strip = (value: unknown): unknown => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    const { steps: _steps, template_vars: _vars, results: _results, ...rest } = value as Record<string, unknown>;
    return rest;
  };
  const content = Array.isArray(answer.content)
    ? (answer.content as unknown[]).map((block) => {
        const text = (block as { type?: unknown; text?: unknown }).text;
        if (typeof text !== 'string' || !text.startsWith('{')) return block;
        try {
          return { ...(block as object), text: JSON.stringify(strip(JSON.parse(text))) };
        } catch {
          return block;
        }
      })
    : answer.content;
  return {
    ...answer,
    ...(content !== undefined ? { content } : {}),
    ...(answer.structuredContent !== undefined ? { structuredContent: strip(answer.structuredContent) } : {}),
  };
}
