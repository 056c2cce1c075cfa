/**
 * A workflow run as the dashboard draws it: its main steps as
 * nodes with their states, edges from `needs:` (or the file's order), and
 * the `onFailure` steps apart. Sub-steps (`parent.sub`, `parent[i].sub`)
 * fold into their top-level step: the node shows the worst of them.
 */
import type { StepRecord, WorkflowCheckpoint } from '../workflows/engine/checkpoint.js';
import { dependencies } from '../workflows/model/dag.js';

export interface WorkflowGraphNode {
  id: string;
  phase: 'main' | 'onFailure';
  tool?: string;
  /** `pending` until the step has a record. */
  state: StepRecord['status'] | 'pending';
  durationMs?: number;
  error?: string;
  attempts?: number;
  /** Sub-step records folded into this node. */
  subSteps: number;
}

export interface WorkflowGraph {
  workflow: string;
  nodes: WorkflowGraphNode[];
  /** `[from, to]`: `to` needs `from`. */
  edges: [string, string][];
}

/** Whether a task's checkpoint is a workflow run's. */
export const isWorkflowCheckpoint = (checkpoint: unknown): checkpoint is WorkflowCheckpoint =>
  typeof checkpoint === 'object' && checkpoint !== null && (checkpoint as { kind?: unknown }).kind === 'taskvisor.workflow';

/** Severity order: a node shows the worst state among its records. */
const RANK: Record<WorkflowGraphNode['state'], number> = {
  pending: 0,
  skipped: 1,
  completed: 2,
  running: 3,
  interrupted: 4,
  cancelled: 5,
  failed: 6,
};

const topLevelId = (recordId: string) => /^[^.[]+/.exec(recordId)?.[0] ?? recordId;

/** The graph of a run from its checkpoint (definition pinned at its start, and step records so far). */
export function workflowGraph(checkpoint: WorkflowCheckpoint): WorkflowGraph {
  const definition = checkpoint.definition;
  const nodes = new Map<string, WorkflowGraphNode>();
  const edges: [string, string][] = [];
  for (const step of definition?.steps ?? []) {
    nodes.set(step.id, { id: step.id, phase: 'main', ...(step.tool ? { tool: step.tool } : {}), state: 'pending', subSteps: 0 });
  }
  for (const step of definition?.onFailure ?? []) {
    nodes.set(step.id, { id: step.id, phase: 'onFailure', ...(step.tool ? { tool: step.tool } : {}), state: 'pending', subSteps: 0 });
  }
  if (definition) for (const [id, needs] of dependencies(definition.steps)) for (const need of needs) edges.push([need, id]);
  // Records in the order they started: the latest record of a step (a retry, a re-run after restart) wins.
  for (const record of checkpoint.steps ?? []) {
    const id = topLevelId(record.id);
    const node = nodes.get(id) ?? { id, phase: record.phase, state: 'pending' as const, subSteps: 0 };
    nodes.set(id, node);
    if (record.id !== id) {
      node.subSteps++;
      if (RANK[record.status] > RANK[node.state] || node.state === 'pending') node.state = record.status;
      continue;
    }
    node.state = record.status;
    if (record.tool !== undefined) node.tool = record.tool;
    if (record.durationMs !== undefined) node.durationMs = record.durationMs;
    if (record.error) node.error = record.error.message;
    else delete node.error;
    if (record.attempts !== undefined) node.attempts = record.attempts;
  }
  return { workflow: checkpoint.workflow, nodes: [...nodes.values()], edges };
}
