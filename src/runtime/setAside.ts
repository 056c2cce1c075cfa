/**
 * Quarantines a damaged task record (issue 13 item 3): kept in the store as
 * it is, no longer served or recovered; logged here, once, with its id.
 */
import type { TaskStore } from '../store/TaskStore.js';
import type { Logger } from './Logger.js';

export async function setAside(store: TaskStore, logger: Logger, taskId: string, reason: string): Promise<void> {
  logger.error(`task ${taskId}: stored record is damaged (${reason}); set aside in quarantine (see taskvisor tasks check)`);
  try {
    await store.quarantine(taskId, reason);
  } catch (error) {
    logger.error(`task ${taskId}: could not quarantine it`, error);
  }
}
