/**
 * A step's `retry`: how many attempts, which failures are retried, and the
 * exponential backoff between attempts — a plain timer, or a durable sleep
 * (`ctx.sleep`) stored in the step record so a run resumed from its
 * checkpoint goes on waiting and then makes the next attempt, without
 * running again the attempts that failed.
 */
import type { WorkflowStep, WorkflowSubStep } from '../model/definition.js';
import type { StepBackoff, StepRecord } from './checkpoint.js';
import type { Checkpointer } from './checkpointing.js';
import type { Failed, FailureKind } from './outcome.js';
import type { RunEnv } from './RunEnv.js';
import { ms, raced, sleep } from './timeLimits.js';

/** A top-level (or onFailure) step as the executor runs it: `deadline` (epoch ms) is when the workflow `timeout` ends it, Infinity without one. */
export interface TopStep {
  deadline: number;
}

type Retry = (WorkflowStep | WorkflowSubStep)['retry'];

/** Whether the step makes another attempt after attempt `attempt` failed with `failure` (a cancel ends the retries). */
export function retries(retry: Retry, failure: Failed, attempt: number, signal: AbortSignal): boolean {
  if (attempt >= (retry?.attempts ?? 1) || signal.aborted) return false;
  const retryOn: FailureKind[] = retry?.on ?? ['error', 'timeout'];
  return retryOn.includes(failure.kind ?? 'error');
}

/** The wait after attempt `attempt` failed: `initialDelay × multiplier^(attempt-1)`, at most `maxDelay`. */
export function retryDelay(retry: Retry, attempt: number): number {
  const initial = ms(retry?.initialDelay, 1000);
  return Math.min(initial * (retry?.multiplier ?? 2) ** (attempt - 1), ms(retry?.maxDelay, 60_000));
}

export class RetryWaits {
  constructor(
    private readonly run: RunEnv,
    private readonly checkpoints: Checkpointer,
    /** How many top-level steps of the run this process runs now. */
    private readonly stepsInFlight: () => number,
  ) {}

  /**
   * Whether a retry backoff of `delay` ms may be a durable sleep
   * (`ctx.sleep`), which lets the task be passivated while it waits (its
   * actor stopped, its whole handler run dropped, then run again at the wake
   * time from the checkpoint). The rule: only when nothing else of the run
   * is working during the wait, since passivation would abort it —
   *
   * - a top step (`top`): in a sequence, or the only DAG step in flight
   *   (none starts while it waits, as steps start only when one ends).
   *   Never a sub-step of `parallel`/`forEach`: siblings may be running,
   *   and a resumed run starts such a step over from its start anyway, so a
   *   durable wait would buy nothing;
   * - not cut short by the workflow `timeout` (it would abort the wait
   *   while the sleep stays pending, and the run would go on, onFailure
   *   steps included, as a task the runtime believes asleep).
   *
   * Otherwise the wait is a plain timer in this process.
   */
  mayBeDurable(top: TopStep | undefined, delay: number): boolean {
    return top !== undefined && this.stepsInFlight() <= 1 && Date.now() + delay < top.deadline;
  }

  /**
   * Waits `delay` ms before attempt `attempt + 1` of the step. The record
   * counts the attempt to come and the status says why it waits; both are
   * stored before the wait starts. A durable wait also stores its sleep in
   * the record (`backoff`). Its key is unique for the task's life (sleep
   * keys are their own namespace, apart from input keys): the record's index
   * in the run's records, which only grow and are restored whole, tells a
   * step run again (interrupted, then a new record) from the one that slept.
   */
  async wait(record: StepRecord, attempt: number, delay: number, message: string, durable: boolean, signal: AbortSignal): Promise<void> {
    record.attempts = attempt + 1;
    this.run.ctx.setStatus(`${this.run.stepStatus} — attempt ${attempt} failed (${message}); retrying in ${delay} ms`);
    if (!durable) {
      await this.checkpoints.persist();
      return sleep(delay, signal);
    }
    const backoff: StepBackoff = {
      failed: attempt,
      key: `${record.id}#${this.checkpoints.records.indexOf(record)}/retry${attempt}`,
      until: new Date(Date.now() + delay).toISOString(),
    };
    record.backoff = backoff;
    try {
      await this.checkpoints.persist();
      await raced(this.run.ctx.sleep(backoff.key, delay), signal);
    } finally {
      delete record.backoff;
    }
  }

  /**
   * A step restored in its durable backoff: its condition held and `failed`
   * attempts ran before the run stopped. The wait goes on (the same sleep key
   * wakes at its stored time, at once if that has passed); returns the
   * number of the attempt to make next. None that failed runs again.
   */
  async resume(record: StepRecord, backoff: StepBackoff, signal: AbortSignal): Promise<number> {
    const { failed, key, until } = backoff;
    try {
      await raced(this.run.ctx.sleep(key, Math.max(0, Date.parse(until) - Date.now()) || 0), signal);
    } finally {
      delete record.backoff;
    }
    return failed + 1;
  }
}
