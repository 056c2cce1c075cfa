/**
 * Passivation of sleeping tasks: a `working` task whose
 * handler sleeps (`ctx.sleep`) is passivated like one waiting for input,
 * as soon as everything is durable, when the sleep has more than
 * `idleAfterMs` left: the threshold is about the time remaining, not the
 * time slept. For input the future is unknown and the time already waited
 * is the only guess of how long the task stays idle; for a sleep it is
 * known, so waiting first would only keep the actor in memory for nothing,
 * and a sleep that ends sooner than that is not worth a rehydration. Its
 * wake time is queued with its deadline (PassivatedDeadlines); at that time
 * it is rehydrated, and its handler, run again from the start, finds its
 * sleeps over (their wake times are in the context) and goes on. A `cancel`
 * ends it at once (nothing runs on its behalf: the machine's idle cancel,
 * T-24); answers are ignored as a live working task ignores them (T-22).
 * A task waiting for input while a sleep is pending (an input timeout) is
 * woken at that sleep's end too.
 */
import type { TaskRecord } from '../tasks/TaskRecord.js';

/** What a stored task waits for, as its snapshot's context shows it. */
export interface Wait {
  sleepingUntil?: number | undefined;
  cancelRequested?: boolean;
}

/** The sleep a stored record's snapshot shows its handler waiting for (JSON this machine wrote, so read defensively). */
export function waitOf(record: TaskRecord): Wait {
  const context = (record.snapshot as { context?: Wait } | undefined)?.context;
  const until = context?.sleepingUntil;
  return { sleepingUntil: typeof until === 'number' ? until : undefined, cancelRequested: context?.cancelRequested === true };
}

/** Whether the task sleeps (and was not asked to cancel) for longer than the idle threshold from `now`. */
export function sleepsLong(wait: Wait, idleAfterMs: number | false, now: number): boolean {
  return idleAfterMs !== false && !wait.cancelRequested && wait.sleepingUntil !== undefined && wait.sleepingUntil - now > idleAfterMs;
}

/** The wake time a passivated task is woken at: only one still ahead (a past one is stale: restarted after it). */
export function pendingWake(sleepingUntil: number | undefined, now: number): number | null {
  return sleepingUntil !== undefined && sleepingUntil > now ? sleepingUntil : null;
}
