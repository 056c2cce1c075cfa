/**
 * Task records as SEP-2663 wire shapes (spec §1.3, §1.4). Timestamps become
 * ISO 8601 strings here and nowhere else.
 */
import type { JsonObject } from '../core/json.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';

/** The last epoch ms values turned to ISO 8601: polls of one task ask for the same two again and again. */
const isoTimes = new Map<number, string>();

/** `new Date(ms).toISOString()`, remembered for the last 256 values (the map is emptied when full). */
function isoTime(ms: number): string {
  let iso = isoTimes.get(ms);
  if (iso === undefined) {
    iso = new Date(ms).toISOString();
    if (isoTimes.size >= 256) isoTimes.clear();
    isoTimes.set(ms, iso);
  }
  return iso;
}

/**
 * The `Task` fields shared by every wire shape, written into `out` after its
 * own keys (no intermediate objects: a poll builds its answer once);
 * `ttlMs` is always present (null = unlimited).
 */
function taskFields(record: TaskRecord, out: JsonObject): JsonObject {
  out.taskId = record.taskId;
  out.status = record.status;
  if (record.statusMessage !== undefined) out.statusMessage = record.statusMessage;
  out.createdAt = isoTime(record.createdAt);
  out.lastUpdatedAt = isoTime(record.lastUpdatedAt);
  out.ttlMs = record.ttlMs;
  if (record.pollIntervalMs !== undefined) out.pollIntervalMs = record.pollIntervalMs;
  return out;
}

/** `CreateTaskResult`: flat, `resultType: "task"`, never `inputRequests`/`result`/`error` (§1.3, T-05). */
export function toCreateTaskResult(record: TaskRecord): JsonObject {
  return taskFields(record, { resultType: 'task' });
}

/**
 * `DetailedTask`: the variant matching the status (T-12). Used by `tasks/get`
 * (plus `resultType: "complete"`, T-06) and `notifications/tasks` (without, T-31).
 * `head`: keys the answer starts with (`tasks/get` passes its `resultType`).
 */
export function toDetailedTask(record: TaskRecord, head: JsonObject = {}): JsonObject {
  const task = taskFields(record, head);
  switch (record.status) {
    case 'input_required':
      // All outstanding requests, same keys on every poll (T-12, T-13).
      task.inputRequests = record.inputRequests ?? {};
      return task;
    case 'completed':
      // The original request's result, itself stamped `resultType: "complete"` (D-04, I-6).
      task.result = { ...(record.result ?? { content: [] }), resultType: 'complete' };
      return task;
    case 'failed':
      task.error = record.error ?? { code: -32603, message: 'Task failed' };
      return task;
    default:
      return task;
  }
}
