/**
 * What a store keeps for one task: the wire-visible projection of the actor's
 * state (so terminal tasks are served without an actor, I-10), the owner
 * (I-7), and, while the task is not terminal, the actor's persisted snapshot
 * stamped with the machine version it was taken from (I-8).
 */
import type { InputRequest, TaskError, TaskStatus } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import type { TraceContext } from '../core/traceContext.js';

export interface TaskRecord {
  taskId: string;
  /** Principal that created the task; any other principal sees "not found" (I-7, T-10). */
  owner: string;
  /** Tool (or workflow) the task runs. */
  tool: string;
  status: TaskStatus;
  statusMessage?: string;
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms, monotone. */
  lastUpdatedAt: number;
  /** Lifetime from `createdAt`; `null` = unlimited (T-26). */
  ttlMs: number | null;
  pollIntervalMs?: number;
  /** Outstanding input requests (status `input_required` only). */
  inputRequests?: Record<string, InputRequest>;
  /** Result of the original request, `resultType: "complete"` included (status `completed`, D-04). */
  result?: JsonObject;
  /** JSON-RPC error (status `failed`, T-15). */
  error?: TaskError;
  /**
   * Write counter, starting at 1 on create. A store never lets a lower
   * version overwrite a higher one, so a late write cannot undo a newer one.
   */
  version: number;
  /** Version of the machine the snapshot was taken from. */
  machineVersion: number;
  /**
   * Durable progress saved by the task's handler (`ToolContext.saveCheckpoint`),
   * plain JSON; kept after the task ends. A workflow run keeps its step
   * records here.
   */
  checkpoint?: unknown;
  /** W3C trace context of the creating `tools/call`; kept after the end so the task stays findable in traces. */
  trace?: TraceContext;
  /** The actor's persisted snapshot; dropped once the task is terminal. */
  snapshot?: unknown;
  /**
   * Set on a record that is a run's history entry and not a task (a
   * synchronous workflow run): `tasks/*` answer for it as
   * for an unknown id, and recovery ends it `failed` (its caller is gone).
   */
  historyOnly?: true;
}

/** Epoch ms after which the task may be purged, or `null` when it never expires (T-26). */
export function expiresAt(record: Pick<TaskRecord, 'createdAt' | 'ttlMs'>): number | null {
  return record.ttlMs === null ? null : record.createdAt + record.ttlMs;
}

/**
 * A finished task stays readable at least this long after it finished, even
 * when its ttl ran out as it finished (a task failed by its deadline would
 * otherwise vanish before any client saw why). T-26 lets a server purge it at
 * any time after the ttl; this only chooses a little later.
 */
export const FINISHED_RETENTION_MS = 60_000;

/** Whether a finished task may be purged (and answers "expired") at `now`. */
export function isExpired(
  record: Pick<TaskRecord, 'createdAt' | 'ttlMs' | 'lastUpdatedAt'>,
  now: number,
  retentionMs = FINISHED_RETENTION_MS,
): boolean {
  const expiry = expiresAt(record);
  return expiry !== null && expiry <= now && record.lastUpdatedAt + retentionMs <= now;
}
