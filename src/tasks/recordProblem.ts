/**
 * Whether a stored value is a task record the runtime can serve and recover.
 * A record that fails this check is damaged: it is
 * quarantined (kept, never deleted), logged once with its id, and answers a
 * stable error; it never stops start-up. One check shared by every store and
 * by `taskvisor tasks check`.
 */
import { TASK_STATUSES } from '../core/statuses.js';

const STATUSES: ReadonlySet<string> = new Set(TASK_STATUSES);
const NON_TERMINAL: ReadonlySet<string> = new Set(['working', 'input_required']);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isTime = (value: unknown) => typeof value === 'number' && Number.isFinite(value) && value >= 0;
const isCount = (value: unknown) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/**
 * What is wrong with `value` as the record of task `taskId`, or `undefined`
 * when nothing is. Checks what serving and recovering need: identity, owner,
 * status, times, ttl, versions, and the shape of the optional parts.
 */
export function taskRecordProblem(value: unknown, taskId?: string): string | undefined {
  if (!isObject(value)) return 'the record is not a JSON object';
  if (typeof value.taskId !== 'string' || value.taskId.length === 0) return 'taskId is missing';
  if (taskId !== undefined && value.taskId !== taskId) return `the record holds another task id`;
  for (const key of ['owner', 'tool'] as const) if (typeof value[key] !== 'string') return `${key} is missing or not a string`;
  if (typeof value.status !== 'string' || !STATUSES.has(value.status)) return 'status is missing or unknown';
  for (const key of ['createdAt', 'lastUpdatedAt'] as const) if (!isTime(value[key])) return `${key} is missing or not a time`;
  if (!('ttlMs' in value) || (value.ttlMs !== null && !isCount(value.ttlMs))) return 'ttlMs is missing or not a duration';
  for (const key of ['version', 'machineVersion'] as const) if (!isCount(value[key])) return `${key} is missing or not an integer`;
  if (value.statusMessage !== undefined && typeof value.statusMessage !== 'string') return 'statusMessage is not a string';
  if (value.pollIntervalMs !== undefined && !isCount(value.pollIntervalMs)) return 'pollIntervalMs is not a duration';
  if (value.inputRequests !== undefined && !isObject(value.inputRequests)) return 'inputRequests is not an object';
  if (value.result !== undefined && !isObject(value.result)) return 'result is not an object';
  if (
    value.error !== undefined &&
    (!isObject(value.error) || typeof value.error.code !== 'number' || typeof value.error.message !== 'string')
  )
    return 'error is not a JSON-RPC error';
  // An unfinished task is recovered from its snapshot: without one only a restart failure is possible, which is fine;
  // a snapshot that is not an object cannot be restored and would fail every recovery.
  if (NON_TERMINAL.has(value.status) && value.snapshot !== undefined && !isObject(value.snapshot)) return 'snapshot is not an object';
  return undefined;
}
