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

type Fields = Record<string, unknown>;

const isFields = (value: unknown): value is Fields => value !== null && typeof value === 'object' && !Array.isArray(value);

const isSnapshot = (value: unknown): value is Snapshot<unknown> => isFields(value) && typeof value.status === 'string';

/** `snapshot` with its context and the input of its `runStep` children passed through `put`. */
function withExecutor<T extends Fields>(snapshot: T, put: (fields: Fields) => Fields): T {
  const { context, children } = snapshot;
  const child = (value: unknown): unknown => {
    if (!isFields(value) || value.src !== 'runStep' || !isFields(value.snapshot) || !isFields(value.snapshot.input)) return value;
    return { ...value, snapshot: { ...value.snapshot, input: put(value.snapshot.input) } };
  };
  return {
    ...snapshot,
    ...(isFields(context) ? { context: put(context) } : {}),
    ...(isFields(children) ? { children: Object.fromEntries(Object.entries(children).map(([id, value]) => [id, child(value)])) } : {}),
  };
}

const without = ({ executeStep: _, ...rest }: Fields): Fields => rest;

/** The actor's persisted snapshot, as JSON only: what a checkpoint stores. */
export function persistWorkflowSnapshot(actor: Actor<WorkflowMachine>): Snapshot<unknown> {
  return withExecutor(actor.getPersistedSnapshot(), without);
}

/** A stored snapshot made ready to restore: the executor goes back where the machine reads it. */
export function restorableWorkflowSnapshot(stored: unknown, executeStep: ExecuteStep): Snapshot<unknown> {
  if (!isSnapshot(stored)) throw new Error('A stored workflow snapshot is not an actor snapshot');
  return withExecutor(stored, (fields) => ({ ...fields, executeStep }));
}
