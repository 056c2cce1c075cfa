/**
 * The ttl deadlines and wake times of passivated tasks (T-26):
 * a passivated task has no actor, so no timer of its own. One timer,
 * armed at the earliest item of a {@link DeadlineTimer}, ends each task whose
 * ttl ran out by delivering it a `DEADLINE` event, as its live timer would
 * have, and wakes each task whose handler's sleep (`ctx.sleep`) is over by
 * delivering it `WOKE` (it is rehydrated and its handler runs again); each
 * due task costs O(log n), never a scan of every passivated task.
 */
import type { TaskEvent } from '../../machines/task/index.js';
import { DeadlineTimer } from './DeadlineTimer.js';
import type { Logger } from './Logger.js';
import type { PassivatedTask, TaskRegistry } from './TaskRegistry.js';

export interface PassivatedDeadlinesOptions {
  registry: Pick<TaskRegistry, 'passivated' | 'passivatedSize' | 'allPassivated'>;
  logger: Logger;
  now: () => number;
  /** Applies the event to the passivated task (TaskPassivation.deliver). */
  deliver: (taskId: string, principal: string, event: TaskEvent) => Promise<boolean>;
}

/** How soon a deadline whose end could not be stored is tried again. */
const RETRY_MS = 1000;

export class PassivatedDeadlines {
  /** One timer for every passivated deadline: armed at the earliest, each due one popped (no scan). */
  private readonly timer: DeadlineTimer;
  private stopped = false;

  constructor(private readonly options: PassivatedDeadlinesOptions) {
    this.timer = new DeadlineTimer({
      now: options.now,
      holders: () => options.registry.passivatedSize,
      items: () => this.queued(),
      onDue: (due, now) => void this.expire(due, now),
    });
  }

  /** A task was passivated: its deadline and its wake time (if any) are queued. */
  add(taskId: string, deadline: number | null, wakeAt: number | null = null): void {
    if (deadline !== null) this.timer.add(deadline, taskId);
    if (wakeAt !== null && wakeAt !== deadline) this.timer.add(wakeAt, taskId);
  }

  /** No deadline fires again (I-9). */
  stop(): void {
    this.stopped = true;
    this.timer.stop();
  }

  /**
   * Ends every due task still passivated here (T-26), wakes every one whose
   * sleep is over (the deadline first: a task both expired and woken ends).
   * An item whose task is no longer passivated (ended, rehydrated: its live
   * actor's deadline is queued in LiveDeadlines, I-8) is dropped.
   */
  private async expire(keys: Set<string>, now: number): Promise<void> {
    const due: Array<[string, PassivatedTask, TaskEvent]> = [];
    for (const taskId of keys) {
      const entry = this.options.registry.passivated(taskId);
      if (entry?.deadline != null && entry.deadline <= now) due.push([taskId, entry, { type: 'DEADLINE', at: now }]);
      else if (entry?.wakeAt != null && entry.wakeAt <= now) due.push([taskId, entry, { type: 'WOKE', at: now, until: null }]);
    }
    await Promise.all(
      due.map(([taskId, entry, event]) =>
        this.options.deliver(taskId, entry.owner, event).catch((error: unknown) => {
          const what = event.type === 'DEADLINE' ? 'end expired' : 'wake';
          this.options.logger.error(`could not ${what} passivated task ${taskId}; retrying`, error);
          // Queued again: the timer tries it again within a second.
          if (!this.stopped) this.timer.add(now + RETRY_MS, taskId);
        }),
      ),
    );
  }

  /** One item for each passivated task's deadline and wake time (the rebuilt queue). */
  private *queued(): Generator<{ at: number; key: string }> {
    for (const [taskId, entry] of this.options.registry.allPassivated()) {
      if (entry.deadline !== null) yield { at: entry.deadline, key: taskId };
      if (entry.wakeAt !== null) yield { at: entry.wakeAt, key: taskId };
    }
  }
}
