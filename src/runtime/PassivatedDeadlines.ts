/**
 * The ttl deadlines of passivated tasks (T-26, issue 20 item 3): a passivated
 * task has no actor, so no deadline timer of its own. One timer, armed at the
 * earliest deadline of a {@link DeadlineQueue}, ends each task whose ttl ran
 * out by delivering it a `DEADLINE` event, as its live timer would have; each
 * due task costs O(log n), never a scan of every passivated task.
 */
import type { TaskEvent } from '../../machines/task/index.js';
import { DeadlineQueue } from './DeadlineQueue.js';
import type { Logger } from './Logger.js';
import type { PassivatedTask, TaskRegistry } from './TaskRegistry.js';

export interface PassivatedDeadlinesOptions {
  registry: Pick<TaskRegistry, 'passivated' | 'passivatedSize' | 'allPassivated'>;
  logger: Logger;
  now: () => number;
  /** Applies the event to the passivated task (TaskPassivation.deliver). */
  deliver: (taskId: string, principal: string, event: TaskEvent) => Promise<boolean>;
}

/** Longest single setTimeout (larger delays overflow to 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Stale deadline items (tasks that left) tolerated before the queue is rebuilt: beyond this and beyond the live ones. */
const COMPACT_SLACK = 1024;

/** How soon a deadline whose end could not be stored is tried again. */
const RETRY_MS = 1000;

export class PassivatedDeadlines {
  /** One timer for every passivated deadline: armed at the earliest. */
  private timer: NodeJS.Timeout | undefined;
  private nextDeadline = Infinity;
  /** Passivated tasks with a ttl, by deadline: the timer fires for the earliest, each due one is popped (no scan). */
  private readonly queue = new DeadlineQueue();
  private stopped = false;

  constructor(private readonly options: PassivatedDeadlinesOptions) {}

  /** A task was passivated: its deadline (if any) is queued, and the timer armed if it is now the earliest. */
  add(taskId: string, deadline: number | null): void {
    if (deadline === null || this.stopped) return;
    this.queue.push(deadline, taskId);
    this.compact();
    if (deadline < this.nextDeadline) this.arm(deadline);
  }

  /** No deadline fires again (I-9). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.compact([]);
  }

  /**
   * Items of tasks that left (ended, rehydrated: each passivation queues one)
   * pile up only until they outnumber the passivated tasks with slack to spare;
   * then the queue is rebuilt from those: O(n) after n pushes, amortised O(1).
   */
  private compact(): void {
    if (this.queue.size > 2 * this.options.registry.passivatedSize + COMPACT_SLACK) this.queue.compact(this.queued());
  }

  /** Arms the timer for `at` (the earliest passivated deadline). */
  private arm(at: number): void {
    clearTimeout(this.timer);
    this.nextDeadline = at;
    this.timer = setTimeout(() => void this.expire(), Math.min(Math.max(0, at - this.options.now()), MAX_TIMER_MS));
  }

  /**
   * Ends every passivated task whose ttl ran out (T-26); re-arms for the
   * next. Only the due items are taken from the queue (O(log n) each); an
   * item whose task is no longer passivated here (ended, rehydrated: its
   * live actor's deadline is queued in LiveDeadlines, I-8) is dropped.
   */
  private async expire(): Promise<void> {
    this.timer = undefined;
    this.nextDeadline = Infinity;
    if (this.stopped) return;
    const { registry, now: clock } = this.options;
    const now = clock();
    // By task id: a task passivated twice (rehydrated in between) has two items, and gets one DEADLINE.
    const due = new Map<string, PassivatedTask>();
    for (const { key: taskId } of this.queue.popDue(now)) {
      const entry = registry.passivated(taskId);
      if (entry?.deadline != null && entry.deadline <= now) due.set(taskId, entry);
    }
    this.compact();
    if (this.queue.size > 0) this.arm(this.queue.earliest);
    await Promise.all(
      [...due].map(([taskId, entry]) =>
        this.options.deliver(taskId, entry.owner, { type: 'DEADLINE', at: now }).catch((error: unknown) => {
          this.options.logger.error(`could not end expired passivated task ${taskId}; retrying`, error);
          if (this.stopped) return;
          // Queued again, due at once: the next timer (within a second) tries it again.
          this.queue.push(now, taskId);
          if (this.nextDeadline > now + RETRY_MS) this.arm(now + RETRY_MS);
        }),
      ),
    );
  }

  /** One item for each passivated task with a deadline (the rebuilt queue). */
  private *queued(): Generator<{ at: number; key: string }> {
    for (const [taskId, entry] of this.options.registry.allPassivated())
      if (entry.deadline !== null) yield { at: entry.deadline, key: taskId };
  }
}
