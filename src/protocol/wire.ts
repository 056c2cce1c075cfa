/**
 * Task records as SEP-2663 wire shapes (spec §1.3, §1.4). Timestamps become
 * ISO 8601 strings here and nowhere else.
 */
import type { JsonObject } from '../../machines/task/index.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';

/** The `Task` fields shared by every wire shape; `ttlMs` is always present (null = unlimited). */
function taskFields(record: TaskRecord): JsonObject {
  return {
    taskId: record.taskId,
    status: record.status,
    ...(record.statusMessage !== undefined ? { statusMessage: record.statusMessage } : {}),
    createdAt: new Date(record.createdAt).toISOString(),
    lastUpdatedAt: new Date(record.lastUpdatedAt).toISOString(),
    ttlMs: record.ttlMs,
    ...(record.pollIntervalMs !== undefined ? { pollIntervalMs: record.pollIntervalMs } : {}),
  };
}

/** `CreateTaskResult`: flat, `resultType: "task"`, never `inputRequests`/`result`/`error` (§1.3, T-05). */
export function toCreateTaskResult(record: TaskRecord): JsonObject {
  return { resultType: 'task', ...taskFields(record) };
}

/**
 * `DetailedTask`: the variant matching the status (T-12). Used by `tasks/get`
 * (plus `resultType: "complete"`, T-06) and `notifications/tasks` (without, T-31).
 */
export function toDetailedTask(record: TaskRecord): JsonObject {
  const task = taskFields(record);
  switch (record.status) {
    case 'input_required':
      // All outstanding requests, same keys on every poll (T-12, T-13).
      return { ...task, inputRequests: record.inputRequests ?? {} };
    case 'completed':
      // The original request's result, itself stamped `resultType: "complete"` (D-04, I-6).
      return { ...task, result: { ...(record.result ?? { content: [] }), resultType: 'complete' } };
    case 'failed':
      return { ...task, error: record.error ?? { code: -32603, message: 'Task failed' } };
    default:
      return task;
  }
}
