/**
 * The ttl deadlines of live tasks (T-26, issue 20): one timer for the whole
 * process, armed at the earliest deadline of a {@link DeadlineQueue}, instead
 * of an invoked timer actor per task (an xstate Actor, its snapshot and a
 * Timeout each: ~2.7 KB per live idle task). When a task's ttl runs out its
 * actor gets the `DEADLINE` event the invoked timer used to send; the machine
 * decides what it does (a finished task ignores it, I-2).
 *
 * Every start of a task actor (create, recovery, rehydration) queues its
 * deadline (I-8: a restored task keeps its deadline, which lives in its
 * context). Items are never removed from the middle: a task that ended or
 * was passivated is skipped when its item comes up, and the queue is rebuilt
 * from the live tasks when stale items outnumber them.
 */
import type { TaskContext, TaskEvent } from '../../machines/task/index.js';
import { DeadlineQueue } from './DeadlineQueue.js';

/** What this needs of a task actor (a TaskActor; structural, so the factory can import this file without a cycle). */
export interface DeadlineActor {
  getSnapshot(): { status: string; context: Pick<TaskContext, 'taskId' | 'createdAt' | 'ttlMs'> };
  send(event: TaskEvent): void;
}

export interface LiveDeadlinesOptions {
  now: () => number;
  /** The live tasks of this process (the TaskRegistry; structural, for the same reason). */
  registry: {
    get(taskId: string): { actor: DeadlineActor } | undefined;
    all(): Array<{ actor: DeadlineActor }>;
    readonly size: number;
  };
}

/** Longest single setTimeout (larger delays overflow to 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Stale items (tasks that ended or left) tolerated before the queue is rebuilt: beyond this and beyond the live ones. */
const COMPACT_SLACK = 1024;

/** Epoch ms a task's ttl runs out at (`null`: never), from its actor's context. */
export function deadlineOf(actor: DeadlineActor): number | null {
  const { createdAt, ttlMs } = actor.getSnapshot().context;
  return ttlMs === null ? null : createdAt + ttlMs;
}

export class LiveDeadlines {
  private timer: NodeJS.Timeout | undefined;
  private nextDeadline = Infinity;
  private readonly queue = new DeadlineQueue();
  private stopped = false;

  constructor(private readonly options: LiveDeadlinesOptions) {}

  /** A task actor started: its deadline (if any) is queued, the timer armed if it is now the earliest. */
  add(taskId: string, deadline: number | null): void {
    if (deadline === null || this.stopped) return;
    // Before the push: a rebuild reads the registry, which may not hold this task yet.
    this.compact();
    this.queue.push(deadline, taskId);
    if (deadline < this.nextDeadline) this.arm(deadline);
  }

  /** No deadline fires again (I-9). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.nextDeadline = Infinity;
    this.queue.compact([]);
  }

  private compact(): void {
    if (this.queue.size > 2 * this.options.registry.size + COMPACT_SLACK) this.queue.compact(this.queued());
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.nextDeadline = at;
    this.timer = setTimeout(() => this.expire(), Math.min(Math.max(0, at - this.options.now()), MAX_TIMER_MS));
  }

  /** Sends `DEADLINE` to every live task whose ttl ran out (T-26); re-arms for the next. */
  private expire(): void {
    this.timer = undefined;
    this.nextDeadline = Infinity;
    if (this.stopped) return;
    const now = this.options.now();
    const due = new Set<string>();
    for (const { key } of this.queue.popDue(now)) due.add(key);
    this.compact();
    if (this.queue.size > 0) this.arm(this.queue.earliest);
    for (const taskId of due) {
      const actor = this.options.registry.get(taskId)?.actor;
      // Ended, passivated (its deadline is PassivatedDeadlines' then) or gone: nothing to do.
      if (!actor || actor.getSnapshot().status !== 'active') continue;
      const deadline = deadlineOf(actor);
      if (deadline === null || deadline > now) continue;
      actor.send({ type: 'DEADLINE', at: now } satisfies TaskEvent);
    }
  }

  /** One item for each live task with a deadline (the rebuilt queue). */
  private *queued(): Generator<{ at: number; key: string }> {
    for (const { actor } of this.options.registry.all()) {
      const deadline = deadlineOf(actor);
      if (deadline !== null) yield { at: deadline, key: actor.getSnapshot().context.taskId };
    }
  }
}
