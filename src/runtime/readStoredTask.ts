/**
 * Reads a task that does not run in this process from the store, as its
 * owner may see it: unknown, foreign, history-only and expired ids answer the
 * errors `tasks/*` give for them (T-14, I-7), a damaged record is set aside
 * and answers a stable error (it never exposes a path or the stored bytes).
 */
import { TaskExpiredError, taskNotFound, TaskRecordDamagedError } from '../core/errors.js';
import { TASK_ID_PATTERN } from '../core/ids.js';
import type { TaskStore } from '../store/TaskStore.js';
import { isTerminal } from '../tasks/project.js';
import { taskRecordProblem } from '../tasks/recordProblem.js';
import { isExpired, type TaskRecord } from '../tasks/TaskRecord.js';
import type { Logger } from './Logger.js';

export interface StoredTaskReader {
  store: TaskStore;
  logger: Logger;
  /** A finished task stays readable at least this long after it finished. */
  finishedRetentionMs?: number | undefined;
}

export async function readStoredTask(
  { store, logger, finishedRetentionMs }: StoredTaskReader,
  taskId: string,
  principal: string,
  now: number,
): Promise<TaskRecord> {
  if (typeof taskId !== 'string' || !TASK_ID_PATTERN.test(taskId)) throw taskNotFound();
  // Ownership first, in the store: another principal's record is never loaded or parsed (I-7). A damaged one
  // rejects with TaskRecordDamagedError, reported once by the store: its text is what the client sees.
  const record = await store.get(taskId, principal);
  if (!record) throw taskNotFound();
  // The built-in stores check every record they read; a custom store may not.
  const problem = taskRecordProblem(record, taskId);
  if (problem !== undefined) {
    // Another principal's damaged task stays indistinguishable from a missing one (I-7).
    if (typeof record.owner === 'string' && record.owner !== principal) throw taskNotFound();
    await setAside(store, logger, taskId, problem);
    throw new TaskRecordDamagedError();
  }
  // A history-only record (a synchronous workflow run) was never a task: unknown to tasks/* (T-14).
  if (record.owner !== principal || record.historyOnly) throw taskNotFound();
  if (isTerminal(record) && isExpired(record, now, finishedRetentionMs)) {
    throw new TaskExpiredError();
  }
  return record;
}

/** Quarantines a damaged task record: kept in the store as it is, no longer served or recovered; logged here, once, with its id. */
export async function setAside(store: TaskStore, logger: Logger, taskId: string, reason: string): Promise<void> {
  logger.error(`task ${taskId}: stored record is damaged (${reason}); set aside in quarantine (see taskvisor tasks check)`);
  try {
    await store.quarantine(taskId, reason);
  } catch (error) {
    logger.error(`task ${taskId}: could not quarantine it`, error);
  }
}
