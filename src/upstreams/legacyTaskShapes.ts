/**
 * The 2025-11-25 experimental tasks (SEP-1686, spoken by v1 SDK servers such
 * as server-everything's `simulate-research-query`) in 2026-07-28 shapes
 * (SEP-2663, tasks-spec §1.2-§1.4). Pure functions: the era mapping table in
 * docs/aggregator.md is this file.
 *
 * | 2025-11-25                                  | 2026-07-28                                   |
 * |---------------------------------------------|----------------------------------------------|
 * | `tools/call` + `params.task: {ttl?}`        | `tools/call` answered with `resultType:task` |
 * | `CreateTaskResult {task: Task}` (nested)    | `CreateTaskResult` flat (§1.3)               |
 * | `ttl` / `pollInterval`                      | `ttlMs` (key always present) / `pollIntervalMs` |
 * | `tasks/get` → Task                          | `tasks/get` → DetailedTask (`resultType: complete`) |
 * | `tasks/result` (blocks until terminal)      | `result` / `error` inlined in the DetailedTask |
 * | `tasks/cancel` → Task                       | `tasks/cancel` → acknowledgement             |
 * | `notifications/tasks/status`                | `notifications/tasks` (listen stream)        |
 * | statuses working, input_required, completed, failed, cancelled | the same five         |
 */
import type { JsonObject } from '../core/json.js';

/** What a 2025-11-25 tool's `execution.taskSupport` says. */
export type LegacyTaskSupport = 'forbidden' | 'optional' | 'required';

const STATUSES = new Set(['working', 'input_required', 'completed', 'failed', 'cancelled']);

/** The tool's `execution.taskSupport` (2025-11-25); absent or unknown = `forbidden`. */
export function legacyTaskSupport(tool: { execution?: unknown }): LegacyTaskSupport {
  const support = (tool.execution as { taskSupport?: unknown } | undefined)?.taskSupport;
  return support === 'required' || support === 'optional' ? support : 'forbidden';
}

/** The nested `task` of a 2025-11-25 `CreateTaskResult`, or `undefined` when the answer is not one. */
export function legacyCreatedTask(result: JsonObject): JsonObject | undefined {
  const task = result.task;
  return task !== null && typeof task === 'object' && !Array.isArray(task) && typeof (task as JsonObject).taskId === 'string'
    ? (task as JsonObject)
    : undefined;
}

/**
 * A 2025-11-25 `Task` as a 2026-07-28 `Task` (§1.2): `ttl` → `ttlMs` (the key
 * is required; absent = `null`, unlimited), `pollInterval` → `pollIntervalMs`.
 * An unknown status is reported as `working`: never an invented terminal state.
 */
export function toModernTask(task: JsonObject, taskId: string = String(task.taskId)): JsonObject {
  const status = STATUSES.has(String(task.status)) ? String(task.status) : 'working';
  const now = new Date().toISOString();
  return {
    taskId,
    status,
    ...(typeof task.statusMessage === 'string' ? { statusMessage: task.statusMessage } : {}),
    createdAt: typeof task.createdAt === 'string' ? task.createdAt : now,
    lastUpdatedAt: typeof task.lastUpdatedAt === 'string' ? task.lastUpdatedAt : typeof task.createdAt === 'string' ? task.createdAt : now,
    ttlMs: Number.isInteger(task.ttl) ? task.ttl : null,
    ...(Number.isInteger(task.pollInterval) ? { pollIntervalMs: task.pollInterval } : {}),
  };
}

const RELATED_TASK_META_KEY = 'io.modelcontextprotocol/related-task';

/** A `tasks/result` answer as the `result` of a completed 2026-07-28 task (D-04: stamped `resultType: "complete"`). */
export function toModernResult(result: JsonObject): JsonObject {
  const { _meta, resultType: _resultType, ...body } = result;
  const meta = { ...((_meta as JsonObject | undefined) ?? {}) };
  delete meta[RELATED_TASK_META_KEY]; // 2025-11-25 bookkeeping; the 2026 task carries its id itself
  return { ...body, ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}), resultType: 'complete' };
}

/** The related task a 2025-11-25 message names in `_meta` (server→client input requests carry it). */
export function relatedTaskId(params: unknown): string | undefined {
  const meta = (params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const related = meta?.[RELATED_TASK_META_KEY] as { taskId?: unknown } | undefined;
  return typeof related?.taskId === 'string' ? related.taskId : undefined;
}
