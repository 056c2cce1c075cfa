/**
 * One timer for many ttl deadlines (T-26): a {@link DeadlineQueue} and a
 * single `setTimeout` armed at its earliest item. Shared by the live tasks'
 * deadlines (LiveDeadlines) and the passivated tasks' (PassivatedDeadlines),
 * which differ only in what a due deadline does and in which tasks may hold
 * an item.
 *
 * Items are never removed from the middle: a task that left is skipped by
 * `onDue` when its item comes up, and the queue is rebuilt from `items()`
 * once it holds more than twice `holders()` plus slack (O(n) after n
 * pushes, amortised O(1)).
 */
import { DeadlineQueue } from './DeadlineQueue.js';

export interface DeadlineTimerOptions {
  now: () => number;
  /** How many tasks may hold an item now. */
  holders: () => number;
  /** One item for each task that should hold one (the rebuilt queue). */
  items: () => Iterable<{ at: number; key: string }>;
  /** The distinct keys whose deadline is due at `now`; called after the timer is re-armed for the rest. */
  onDue: (keys: Set<string>, now: number) => void;
}

/** Longest single setTimeout (larger delays overflow to 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Stale items tolerated before the queue is rebuilt: beyond this and beyond twice the holders. */
const COMPACT_SLACK = 1024;

export class DeadlineTimer {
  private timer: NodeJS.Timeout | undefined;
  private nextDeadline = Infinity;
  private readonly queue = new DeadlineQueue();
  private stopped = false;

  constructor(private readonly options: DeadlineTimerOptions) {}

  /** Items queued, stale ones included. */
  get size(): number {
    return this.queue.size;
  }

  /** Queues `key` due at `at`, and arms the timer if it is now the earliest. */
  add(at: number, key: string): void {
    if (this.stopped) return;
    // Before the push: a rebuild reads the holders, which may not hold `key` yet.
    if (this.queue.size > 2 * this.options.holders() + COMPACT_SLACK) this.queue.compact(this.options.items());
    this.queue.push(at, key);
    if (at < this.nextDeadline) this.arm(at);
  }

  /** Nothing fires again (I-9). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.nextDeadline = Infinity;
    this.queue.compact([]);
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.nextDeadline = at;
    this.timer = setTimeout(() => this.fire(), Math.min(Math.max(0, at - this.options.now()), MAX_TIMER_MS));
  }

  private fire(): void {
    this.timer = undefined;
    this.nextDeadline = Infinity;
    if (this.stopped) return;
    const now = this.options.now();
    // By key: a task queued twice (passivated twice, restarted) is due once.
    const due = new Set<string>();
    for (const { key } of this.queue.popDue(now)) due.add(key);
    if (this.queue.size > 0) this.arm(this.queue.earliest);
    if (due.size > 0) this.options.onDue(due, now);
  }
}
