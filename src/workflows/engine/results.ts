/**
 * The run's result when the workflow has no `output` map, and the flat
 * result names muster's templates use next to taskvisor's nested ones.
 */
import type { JsonObject } from '../../core/json.js';
import type { WorkflowDefinition, WorkflowStep, WorkflowSubStep } from '../model/definition.js';
import type { StepRecord } from './checkpoint.js';
import { runSteps, stepFlag, templateVars } from './runSteps.js';

/**
 * The result of a run without an `output` map, in muster's shape:
 * `{ workflow, status, input, results, steps, template_vars }` — `input` the
 * validated arguments, `steps` and `template_vars` as runSteps.ts builds
 * them. When the file uses muster's `output`/`store` step flags, `results`
 * holds only the steps flagged true (sub-steps by their flat names);
 * otherwise every result. As in muster, the last step's object result, when
 * that step is a tool step not flagged true, is merged into the top level
 * (its keys never replace the keys above). Every result stays referencable
 * in templates either way.
 */
export function shapeDefaultResult(
  definition: WorkflowDefinition,
  results: Record<string, unknown>,
  records: readonly StepRecord[],
  input: JsonObject,
): JsonObject {
  const all = definition.steps.flatMap((step) => [step, ...subStepsOf(step)]);
  let shown: Record<string, unknown> = results;
  if (all.some((step) => stepFlag(step) !== undefined)) {
    const flat = withFlatNames(definition, results);
    shown = {};
    for (const step of all) if (stepFlag(step) === true && Object.hasOwn(flat, step.id)) shown[step.id] = flat[step.id];
  }
  const shaped: Record<string, unknown> = {
    workflow: definition.name,
    status: 'completed',
    input,
    results: shown,
    steps: runSteps(definition, records),
    template_vars: templateVars(definition, records),
  };
  const last = definition.steps[definition.steps.length - 1];
  const lastValue = last ? results[last.id] : undefined;
  if (
    last?.tool !== undefined &&
    stepFlag(last) !== true &&
    lastValue !== null &&
    typeof lastValue === 'object' &&
    !Array.isArray(lastValue)
  ) {
    for (const [key, value] of Object.entries(lastValue)) if (!Object.hasOwn(shaped, key)) shaped[key] = value;
  }
  return shaped;
}

/** Every sub-step under a step, at any depth (loops nest). */
function subStepsOf(step: WorkflowStep | WorkflowSubStep): WorkflowSubStep[] {
  return (step.parallel ?? step.forEach?.steps ?? []).flatMap((sub) => [sub, ...subStepsOf(sub)]);
}

/**
 * muster's flat result names next to taskvisor's nested ones: a parallel
 * sub-step's result is also `results.<subId>`, a forEach sub-step's is
 * `results.<subId>_<i>` per iteration and `results.<subId>` for the last one.
 * Loops nest, and the names with them: inside iteration `i` of an outer
 * forEach, an inner forEach's sub-step is `<subId>_<i>_<j>`, `<subId>_<i>` for
 * the last `j` of that iteration, and `<subId>` for the last of all; a
 * parallel inside iteration `i` names its sub-steps `<subId>_<i>` (and
 * `<subId>`). A flat name never hides a step's own (nested) name.
 */
export function withFlatNames(definition: WorkflowDefinition, results: Record<string, unknown>): Record<string, unknown> {
  const flat: Record<string, unknown> = {};
  const put = (id: string, suffix: string, value: unknown) => {
    flat[id + suffix] = value;
    if (suffix !== '') flat[id] = value;
  };
  const visit = (step: WorkflowStep | WorkflowSubStep, value: unknown, suffix: string) => {
    if (step.parallel && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const sub of step.parallel) {
        if (!Object.hasOwn(value, sub.id)) continue;
        const subValue = (value as Record<string, unknown>)[sub.id];
        put(sub.id, suffix, subValue);
        visit(sub, subValue, suffix);
      }
    } else if (step.forEach && Array.isArray(value)) {
      value.forEach((iteration, i) => {
        if (iteration === null || typeof iteration !== 'object') return;
        for (const sub of step.forEach!.steps) {
          if (!Object.hasOwn(iteration, sub.id)) continue;
          const subValue = (iteration as Record<string, unknown>)[sub.id];
          put(sub.id, `${suffix}_${i}`, subValue);
          put(sub.id, suffix, subValue);
          visit(sub, subValue, `${suffix}_${i}`);
        }
      });
    }
  };
  for (const step of definition.steps) visit(step, results[step.id], '');
  return { ...flat, ...results };
}
