/**
 * Purges finished tasks whose ttl has run out (T-26), on a timer. Live tasks
 * are never its business: they end through their deadline (LiveDeadlines, PassivatedDeadlines) first.
 */
import { TaskRecordDamagedError } from '../core/errors.js';
import type { TaskStore } from '../store/TaskStore.js';
import { isTerminal } from '../tasks/project.js';
import { isExpired } from '../tasks/TaskRecord.js';
import type { Logger } from './Logger.js';

export interface TaskReaperOptions {
  store: TaskStore;
  logger: Logger;
  now: () => number;
  /** Whether a task runs in this process (skipped), and how many do (the sweep asks past them). */
  live: { has(taskId: string): boolean; readonly size: number };
  /** A finished task stays readable at least this long after it finished. */
  finishedRetentionMs?: number | undefined;
}

export class TaskReaper {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: TaskReaperOptions) {}

  /** Sweeps every `intervalMs` (0: never). */
  start(intervalMs: number): void {
    if (intervalMs <= 0) return;
    this.timer = setInterval(() => void this.reap().catch((error) => this.options.logger.error('reaper failed', error)), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One sweep; resolves to the number of tasks purged. */
  async reap(): Promise<number> {
    const { store, live } = this.options;
    let purged = 0;
    const now = this.options.now();
    // Ask past the live ones and the recently finished ones so they cannot stall the sweep.
    for (let limit = 500 + live.size; ; limit *= 2) {
      const expired = await store.listExpired(now, limit);
      for (const id of expired) {
        if (live.has(id)) continue;
        // A damaged record is the operator's to look at (taskvisor tasks check), never the reaper's to purge.
        const record = await store.get(id).catch((error: unknown) => {
          if (error instanceof TaskRecordDamagedError) return undefined;
          throw error;
        });
        if (record && isTerminal(record) && isExpired(record, now, this.options.finishedRetentionMs) && (await store.delete(id))) purged++;
      }
      if (expired.length < limit) return purged;
    }
  }
}
