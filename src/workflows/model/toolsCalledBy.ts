/**
 * The tools a workflow calls: what a new run needs to exist (muster's
 * availability rule) and what the loaders check a config provides.
 */
import type { WorkflowDefinition, WorkflowStep, WorkflowSubStep } from './definition.js';

/** Every tool a workflow's steps call (main, sub-steps, onFailure). */
export function toolsCalledBy(definition: WorkflowDefinition): string[] {
  const out = new Set<string>();
  const visit = (step: WorkflowStep | WorkflowSubStep) => {
    if (step.tool) out.add(step.tool);
    if (step.condition && 'tool' in step.condition) out.add(step.condition.tool);
    for (const sub of ('forEach' in step ? step.forEach?.steps : undefined) ?? []) visit(sub);
    for (const sub of ('parallel' in step ? step.parallel : undefined) ?? []) visit(sub);
  };
  for (const step of [...definition.steps, ...(definition.onFailure ?? [])]) visit(step);
  return [...out];
}
