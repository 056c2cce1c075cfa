/**
 * `needs:` dependencies between a workflow's main steps (muster's `needs:`): the
 * graph they form, checked when the file loads (unknown ids, a step needing
 * itself, cycles — each named with its file, path and field), and what a
 * step may see of the others (the steps it transitively needs).
 *
 * A step without `needs` follows the step before it (the order of the file,
 * muster's sequence); `needs: [a, b]` replaces that; `needs: []` starts at
 * once. So a file without `needs` is the plain sequence it always was.
 */
import type { WorkflowStep } from './definition.js';

/** Whether the main steps form a DAG (some step says what it `needs`). */
export const isDag = (steps: readonly WorkflowStep[]): boolean => steps.some((step) => step.needs !== undefined);

/** Each main step's direct dependencies: its `needs`, or the step before it. */
export function dependencies(steps: readonly WorkflowStep[]): Map<string, string[]> {
  return new Map(steps.map((step, i) => [step.id, step.needs ?? (i > 0 ? [steps[i - 1]!.id] : [])]));
}

/** One problem with the `needs` of a file: where (a path into the step list) and what. */
export interface NeedsProblem {
  path: PropertyKey[];
  message: string;
}

/**
 * Problems with the `needs` of `steps`: ids that are not main steps of this
 * workflow (`onFailure` ids included), a step needing itself, an id listed
 * twice, and cycles (named step by step; an implicit edge is "follows").
 */
export function checkNeeds(steps: readonly WorkflowStep[], onFailureIds: ReadonlySet<string>): NeedsProblem[] {
  const problems: NeedsProblem[] = [];
  const ids = new Set(steps.map((step) => step.id));
  steps.forEach((step, i) => {
    const listed = new Set<string>();
    (step.needs ?? []).forEach((need, j) => {
      const at = ['steps', i, 'needs', j];
      if (need === step.id) problems.push({ path: at, message: `step ${JSON.stringify(need)} cannot need itself` });
      else if (!ids.has(need))
        problems.push({
          path: at,
          message: onFailureIds.has(need)
            ? `${JSON.stringify(need)} is an onFailure step; needs names main steps`
            : `${JSON.stringify(need)} is not a step of this workflow`,
        });
      else if (listed.has(need)) problems.push({ path: at, message: `${JSON.stringify(need)} is listed twice` });
      listed.add(need);
    });
  });
  if (problems.length > 0) return problems;
  const cycle = findCycle(steps);
  if (cycle) {
    const index = steps.findIndex((step) => step.id === cycle[0]);
    const explicit = steps[index]!.needs !== undefined;
    const edges = cycle
      .slice(0, -1)
      .map((id, k) => {
        const step = steps.find((s) => s.id === id)!;
        return `${id} ${step.needs !== undefined ? 'needs' : 'follows'} ${cycle[k + 1]}`;
      })
      .join(', ');
    problems.push({
      path: explicit ? ['steps', index, 'needs'] : ['steps', index],
      message: `the steps' needs form a cycle: ${cycle.join(' → ')} (${edges}); a step without needs follows the step before it`,
    });
  }
  return problems;
}

/** A cycle of step ids (first = last), or undefined. */
function findCycle(steps: readonly WorkflowStep[]): string[] | undefined {
  const deps = dependencies(steps);
  const state = new Map<string, 'visiting' | 'done'>();
  const trail: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === 'done') return undefined;
    if (state.get(id) === 'visiting') return [...trail.slice(trail.indexOf(id)), id];
    state.set(id, 'visiting');
    trail.push(id);
    for (const need of deps.get(id) ?? []) {
      const found = visit(need);
      if (found) return found;
    }
    trail.pop();
    state.set(id, 'done');
    return undefined;
  };
  for (const step of steps) {
    const found = visit(step.id);
    if (found) return found;
  }
  return undefined;
}

/**
 * For each main step, the steps it transitively needs: the only results it
 * sees (so what a template finds never depends on which branch was faster).
 * In a plain sequence that is every step before it. Assumes no cycle.
 */
export function ancestors(steps: readonly WorkflowStep[]): Map<string, Set<string>> {
  const deps = dependencies(steps);
  const memo = new Map<string, Set<string>>();
  const of = (id: string): Set<string> => {
    const known = memo.get(id);
    if (known) return known;
    const all = new Set<string>();
    memo.set(id, all);
    for (const need of deps.get(id) ?? []) {
      all.add(need);
      for (const further of of(need)) all.add(further);
    }
    return all;
  };
  for (const step of steps) of(step.id);
  return memo;
}
