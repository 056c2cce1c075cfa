/**
 * The workflow machine's persisted snapshots (I-8). The step executor the
 * machine gets as `input` is a dependency, not state: it sits in the
 * context and in the input of the invoked `runStep`, so it is taken out of
 * every persisted snapshot and given again on restore. A stored snapshot
 * therefore holds only JSON, with the shape it had before the executor came
 * in as input: snapshots stored by any version-1 machine restore as they are.
 */
import type { Actor, Snapshot } from 'xstate';
import type { ExecuteStep } from './types.js';
import type { WorkflowMachine } from './workflow.machine.js';

type Persisted = {
  context?: Record<string, unknown>;
  children?: Record<string, { src?: unknown; snapshot?: { input?: Record<string, unknown> } }>;
};

/** A copy of `snapshot` whose context and `runStep` children have the executor replaced by `put(...)` (or removed). */
function withExecutor(snapshot: Persisted, put: (into: Record<string, unknown>) => Record<string, unknown>): Persisted {
  const children = Object.fromEntries(
    Object.entries(snapshot.children ?? {}).map(([id, child]) => [
      id,
      child.src === 'runStep' && child.snapshot?.input
        ? { ...child, snapshot: { ...child.snapshot, input: put(child.snapshot.input) } }
        : child,
    ]),
  );
  return { ...snapshot, ...(snapshot.context ? { context: put(snapshot.context) } : {}), ...(snapshot.children ? { children } : {}) };
}

const without = ({ executeStep: _, ...rest }: Record<string, unknown>) => rest;

/** The actor's persisted snapshot, as JSON only: what a checkpoint stores. */
export function persistWorkflowSnapshot(actor: Actor<WorkflowMachine>): unknown {
  return withExecutor(actor.getPersistedSnapshot() as Persisted, without);
}

/** A stored snapshot made ready to restore: the executor goes back where the machine reads it. */
export function restorableWorkflowSnapshot(stored: unknown, executeStep: ExecuteStep): Snapshot<unknown> {
  return withExecutor(stored as Persisted, (into) => ({ ...into, executeStep })) as Snapshot<unknown>;
}
