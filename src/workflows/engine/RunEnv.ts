/**
 * What every part of one workflow run shares: the definition it runs, its
 * arguments, the tool context of its call, and the invoker its steps call
 * tools through.
 */
import type { JsonObject } from '../../core/json.js';
import type { ToolContext } from '../../tools/ToolDefinition.js';
import type { WorkflowPhase } from '../../../machines/workflow/index.js';
import type { WorkflowDefinition, WorkflowStep, WorkflowSubStep } from '../model/definition.js';
import type { TemplateEngine, TemplateScope } from '../templates/render.js';
import type { ToolInvoker } from './ToolInvoker.js';
import { withFlatNames } from './results.js';

export interface RunEnv {
  readonly definition: WorkflowDefinition;
  /** The run's validated arguments (`input.*` in templates). */
  readonly input: JsonObject;
  readonly ctx: ToolContext;
  readonly invoker: ToolInvoker;
  readonly engine: TemplateEngine;
  /** The statusMessage naming the step in flight; a callee's progress is appended to it. */
  stepStatus: string;
}

/** The scope a top-level step's templates see: the run's input and the results so far, flat names included. */
export function scopeOf(run: RunEnv, results: Record<string, unknown>, vars: Record<string, unknown> = {}): TemplateScope {
  return { input: run.input, results: withFlatNames(run.definition, results), vars };
}

/** Where a template sits, for its error messages. */
export const siteOf = (run: RunEnv, step: string) => ({ workflow: run.definition.name, step });

/** One step to run, and where: `recordId` is its id in the step records; `keyPrefix` scopes its input keys. */
export interface StepCall {
  step: WorkflowStep | WorkflowSubStep;
  phase: WorkflowPhase;
  scope: TemplateScope;
  /** How the steps it may refer to ended, by id. */
  outcomes: Record<string, string>;
  recordId: string;
  keyPrefix: string;
  signal: AbortSignal;
}
