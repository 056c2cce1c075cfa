/**
 * The ttl deadlines of live tasks (T-26): one timer for the whole
 * process, armed at the earliest deadline of a {@link DeadlineTimer}, instead
 * of an invoked timer actor per task (an xstate Actor, its snapshot and a
 * Timeout each: ~2.7 KB per live idle task). When a task's ttl runs out its
 * actor gets the `DEADLINE` event; the machine
 * decides what it does (a finished task ignores it, I-2).
 *
 * Every start of a task actor (create, recovery, rehydration) queues its
 * deadline (I-8: a restored task keeps its deadline, which lives in its
 * context). A task that ended or was passivated is skipped when its item
 * comes up ({@link DeadlineTimer}).
 */
import type { TaskContext, TaskEvent } from '../../machines/task/index.js';
import { DeadlineTimer } from './DeadlineTimer.js';

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

/** Epoch ms a task's ttl runs out at (`null`: never), from its actor's context. */
export function deadlineOf(actor: DeadlineActor): number | null {
  const { createdAt, ttlMs } = actor.getSnapshot().context;
  return ttlMs === null ? null : createdAt + ttlMs;
}

export class LiveDeadlines {
  private readonly timer: DeadlineTimer;

  constructor(private readonly options: LiveDeadlinesOptions) {
    this.timer = new DeadlineTimer({
      now: options.now,
      holders: () => options.registry.size,
      items: () => this.queued(),
      onDue: (due, now) => this.expire(due, now),
    });
  }

  /** A task actor started: its deadline (if any) is queued. */
  add(taskId: string, deadline: number | null): void {
    if (deadline !== null) this.timer.add(deadline, taskId);
  }

  /** No deadline fires again (I-9). */
  stop(): void {
    this.timer.stop();
  }

  /** Sends `DEADLINE` to every due task that is still live and active (T-26). */
  private expire(due: Set<string>, now: number): void {
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
