/**
 * The task statuses of SEP-2663 (spec §1.3) and which of them are final.
 * Every place that asks "is this task finished" (stores, SQL, the
 * forwarder, the CLI) reads these sets, so the answer cannot drift. Also
 * the phases of a runtime's life, which readiness reports.
 */
import { TERMINAL_STATUSES, type TaskStatus } from '../../machines/task/index.js';

/** Every status, in lifecycle order. */
export const TASK_STATUSES: readonly TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];

/** `completed`, `failed`, `cancelled`: a task in one of these never changes again (T-16). Defined by the task machine. */
export { TERMINAL_STATUSES };

/** `working`, `input_required`: the task can still change. */
export const NON_TERMINAL_STATUSES: readonly TaskStatus[] = TASK_STATUSES.filter((status) => !TERMINAL_STATUSES.has(status));

/** Whether `status` (any string, e.g. from an upstream or a database row) is a status at all. */
export function isTaskStatus(status: unknown): status is TaskStatus {
  return typeof status === 'string' && (TASK_STATUSES as readonly string[]).includes(status);
}

/** Whether `status` (any value, e.g. from an upstream's answer) is a final status. */
export function isTerminalStatus(status: unknown): boolean {
  return isTaskStatus(status) && TERMINAL_STATUSES.has(status);
}

/**
 * Where a runtime is in its life, as readiness reports it: `starting` until
 * the store is open, `recovering` while unfinished tasks are resumed and the
 * cluster lease is taken, `ready` while serving, `stopping` from `close()`
 * on, `stopped` once closed.
 */
export type RuntimePhase = 'starting' | 'recovering' | 'ready' | 'stopping' | 'stopped';
