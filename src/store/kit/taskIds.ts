/**
 * The id guard every store applies at its port (TaskStore.ts, "Ids"): an id
 * a store cannot hold is unknown to `get`, `put`, `delete` and `quarantine`,
 * and refused by `create`.
 */
import { invalidTaskIdReason } from '../taskFiles.js';

export { invalidTaskIdReason };

/** `invalidTaskIdReason`, plus what PostgreSQL text cannot hold (NUL). */
export function invalidPostgresTaskIdReason(taskId: unknown): string | undefined {
  const reason = invalidTaskIdReason(taskId);
  if (reason !== undefined) return reason;
  return (taskId as string).includes('\u0000') ? 'task ids containing NUL cannot be stored in PostgreSQL' : undefined;
}
