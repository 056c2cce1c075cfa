/**
 * Projections of a task actor's snapshot: to the stored record and to the
 * comparable "what a client can see" key. The status comes from `statusOf`
 * only (I-3).
 */
import { statusOf, TERMINAL_STATUSES, type TaskContext } from '../../machines/task/index.js';
import { hasOwnKeys } from '../core/hasOwnKeys.js';
import { EMPTY_JSON_OBJECT, jsonInterner } from '../core/sharedJson.js';
import type { TaskRecord } from './TaskRecord.js';

/** The parts of an actor snapshot a projection reads. */
export interface TaskSnapshotLike {
  value: unknown;
  context: TaskContext;
}

/**
 * The record a store keeps for `snapshot`. The persisted actor snapshot is
 * kept only while the task is not terminal: a terminal task never runs again.
 * `persisted` may be given as a function returning it (a stored snapshot is
 * JSON, never a function), called only when the record keeps it: xstate's
 * `getPersistedSnapshot` walks the whole snapshot, wasted on a final record.
 */
export function recordOf(snapshot: TaskSnapshotLike, persisted: unknown, version: number, machineVersion: number): TaskRecord {
  const { context } = snapshot;
  const status = statusOf(snapshot);
  const record: TaskRecord = {
    taskId: context.taskId,
    owner: context.owner,
    tool: context.tool,
    status,
    createdAt: context.createdAt,
    lastUpdatedAt: context.lastUpdatedAt,
    ttlMs: context.ttlMs,
    version,
    machineVersion,
  };
  if (context.statusMessage !== undefined) record.statusMessage = context.statusMessage;
  if (context.pollIntervalMs !== undefined) record.pollIntervalMs = context.pollIntervalMs;
  if (status === 'input_required') record.inputRequests = context.inputRequests;
  if (status === 'completed' && context.result) record.result = context.result;
  if (status === 'failed' && context.error) record.error = context.error;
  // Kept after the end too: it is the durable progress report (a workflow's step records) admins read.
  if (context.checkpoint !== undefined) record.checkpoint = context.checkpoint;
  if (context.trace !== undefined) record.trace = context.trace;
  if (!TERMINAL_STATUSES.has(status))
    record.snapshot = typeof persisted === 'function' ? sharedShape((persisted as () => unknown)()) : persisted;
  return record;
}

/**
 * xstate's persisted snapshot, copied member by member (same keys, same order, same values: the same
 * JSON). xstate builds it with an object spread, and V8 gives a spread copy made in optimized code a
 * hidden class of its own: a map and a descriptor array (~260 B) kept with every live task's record.
 * A copy made by adding members one by one shares one hidden class with every other.
 */
function sharedShape(persisted: unknown): unknown {
  if (persisted === null || typeof persisted !== 'object' || Array.isArray(persisted)) return persisted;
  const copy: Record<string, unknown> = {};
  for (const key in persisted) copy[key] = sharedPart(key, (persisted as Record<string, unknown>)[key]);
  return copy;
}

/**
 * The state value and empty `children` / `historyValue` of a persisted snapshot, as shared frozen values:
 * xstate builds them anew for every snapshot, though the machine has a handful of state values and its
 * tasks have no children and no history (three objects, ~170 B of every live task's record, and again in
 * a memory store's copy). xstate only reads them when it restores a snapshot.
 */
function sharedPart(key: string, value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (key === 'value') return internStateValue(value);
  if ((key === 'children' || key === 'historyValue') && !Array.isArray(value) && !hasOwnKeys(value)) return EMPTY_JSON_OBJECT;
  return value;
}

/** The task machine's state values (`{ active: 'working' }`, …): a few, bounded anyway. */
const internStateValue = jsonInterner(32, 256);

/** Whether `record` is in a terminal status (T-28). */
export function isTerminal(record: Pick<TaskRecord, 'status'>): boolean {
  return TERMINAL_STATUSES.has(record.status);
}

/**
 * A key that changes exactly when what a client can see changes (status,
 * statusMessage, inputRequests, result, error): what listen streams and
 * change listeners compare.
 */
export function visibleKey(record: TaskRecord): string {
  const key = JSON.stringify([
    record.status,
    record.statusMessage,
    record.inputRequests,
    record.result,
    record.error,
    record.ttlMs,
    record.pollIntervalMs,
  ]);
  // The same key as the last one made is handed out as that one string: every live task keeps its key
  // (TaskRegistry), and tasks created alike share one instead of a copy each.
  if (key === lastVisibleKey) return lastVisibleKey;
  lastVisibleKey = key;
  return key;
}

let lastVisibleKey = '';

/** A stored record as clients and listeners get it: without the machine snapshot (as a live actor's view always was). */
export function shown(record: TaskRecord): TaskRecord {
  const { snapshot: _internal, ...rest } = record;
  return rest;
}
