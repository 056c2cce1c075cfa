/**
 * The `steps` list of a run's result, built as muster builds it: one entry per
 * executed tool step in execution order, so a client written against muster
 * can read `steps.N.id` / `steps.N.status` from either.
 */
import type { WorkflowDefinition, WorkflowStep, WorkflowSubStep } from '../model/definition.js';
import type { StepRecord } from './checkpoint.js';

/** One entry of a run result's `steps` list (muster's field names). */
export interface RunStepEntry {
  id: string;
  tool?: string;
  status: StepRecord['status'];
  /** Whether the step's condition held; only for a step with a condition. */
  condition_evaluation?: boolean;
  allow_failure?: true;
  /** The step's result, when the step is stored (see {@link isStored}). */
  result?: unknown;
  error?: string;
}

type AnyStep = WorkflowStep | WorkflowSubStep;

/** The step flagged `output`/`store` (muster's two names of one flag). */
export const stepFlag = (step: { output?: boolean | undefined; store?: boolean | undefined }) => step.output ?? step.store;

/**
 * The definition of the step a record is about: record ids are `a`, `a.b`
 * (parallel), `a[2].b` (forEach), nested as deep as loops go. Step ids never
 * hold `.` or `[`, so the id parses unambiguously.
 */
export function stepOfRecord(definition: WorkflowDefinition, record: Pick<StepRecord, 'id' | 'phase'>): AnyStep | undefined {
  const names = record.id.split('.').map((part) => part.replace(/\[\d+\]$/, ''));
  let candidates: readonly AnyStep[] = record.phase === 'onFailure' ? (definition.onFailure ?? []) : definition.steps;
  let found: AnyStep | undefined;
  for (const name of names) {
    found = candidates.find((step) => step.id === name);
    if (!found) return undefined;
    candidates = found.parallel ?? found.forEach?.steps ?? [];
  }
  return found;
}

/**
 * muster's `steps` list. A composite step (`forEach`, `parallel`) is not an
 * entry: its sub-steps are, under their own ids — a `forEach` sub-step once
 * per iteration, each with that iteration's result (muster showed the last
 * iteration's result in every entry, which it later fixed). A skipped
 * composite step is one entry under its own id. An entry carries the step's
 * result when the step is flagged `output`/`store` (muster's rule: the flag
 * is what puts a result in the answer), and its error when it failed.
 */
export function runSteps(definition: WorkflowDefinition, records: readonly StepRecord[]): RunStepEntry[] {
  const entries: RunStepEntry[] = [];
  for (const record of records) {
    const step = stepOfRecord(definition, record);
    const composite = step !== undefined && (step.parallel !== undefined || step.forEach !== undefined);
    if (composite && record.status !== 'skipped') continue;
    const entry: RunStepEntry = { id: step?.id ?? record.id, status: record.status };
    if (record.tool !== undefined) entry.tool = record.tool;
    // A step with a condition ran only when it held; a skipped one is where it did not.
    if (step?.condition !== undefined) entry.condition_evaluation = record.status !== 'skipped';
    if (step?.allowFailure === true || record.phase === 'onFailure') entry.allow_failure = true;
    if (step !== undefined && stepFlag(step) === true && record.result !== undefined) entry.result = record.result;
    if (record.error !== undefined) entry.error = record.error.message;
    entries.push(entry);
  }
  return entries;
}

/**
 * muster's `template_vars`: the `input.<name>` references in the arguments
 * of the steps that called their tool, in order, each once (muster lists
 * them for debugging; clients see which inputs a run used).
 */
export function templateVars(definition: WorkflowDefinition, records: readonly StepRecord[]): string[] {
  const names: string[] = [];
  const collect = (value: unknown): void => {
    if (typeof value === 'string') {
      for (const match of value.matchAll(/\.(input\.[^\s}]+)/g)) if (!names.includes(match[1]!)) names.push(match[1]!);
    } else if (Array.isArray(value)) value.forEach(collect);
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(collect);
  };
  for (const record of records) {
    if (record.status === 'skipped' || record.input === undefined) continue;
    collect(stepOfRecord(definition, record)?.args);
  }
  return names;
}
