/**
 * The durable sleeps of one run (`ctx.sleep`). A sleep's wake time is fixed
 * the first time the task sleeps its key (now + `ms`) and kept in the task's
 * context, so a run of the handler again (restart, rehydration) wakes at the
 * stored time, at once when it has passed. Before the call is a task the
 * wake time is kept here and handed to the task if the call is promoted (as
 * the run's buffered events are); a synchronous call never promoted just waits.
 *
 * The object is itself the Map of wake times by key (earlier runs' and this
 * one's): a run that sleeps needs that Map anyway, so keeping the sleeps in
 * a part of their own costs it no extra allocation.
 */
import type { TaskEvent } from '../../machines/task/index.js';

/** What a sleep needs of its run. */
export interface SleepingRun {
  now(): number;
  /** Reports an event to the task actor (buffered until one attaches). */
  emit(event: TaskEvent): void;
  /** The handler did again what it did before (`key`): still replaying. */
  replayed(key: string): void;
  /** The handler does what it never did before: nothing it does from here on is replayed. */
  newWork(): void;
}

/** A pending `ctx.sleep`. */
interface Sleeper {
  wakeAt: number;
  timer: NodeJS.Timeout | undefined;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Longest single setTimeout (larger delays overflow to 1 ms): a longer sleep is waited in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class RunSleeps extends Map<string, number> {
  /** Sleep keys this run has slept: a key sleeps once per run, like an input key is asked once (T-18). */
  private slept: Set<string> | undefined;
  /** The sleeps this run waits for now. */
  private waiting: Map<string, Sleeper> | undefined;

  /** Sleeps `key` for `ms` (or until its stored wake time); the arguments are checked by the caller. */
  sleep(run: SleepingRun, key: string, ms: number): Promise<void> {
    if (this.slept?.has(key))
      return Promise.reject(
        new Error(`Sleep key ${JSON.stringify(key)} was already used by this call; sleep keys are unique for the task's life`),
      );
    (this.slept ??= new Set()).add(key);
    const now = run.now();
    let wakeAt = this.get(key);
    if (wakeAt === undefined) {
      run.newWork();
      wakeAt = now + ms;
      this.set(key, wakeAt);
      // Recorded even when due at once: a run again must find every key it slept.
      run.emit({ type: 'SLEEP', at: now, key, wakeAt, until: Math.min(wakeAt, this.earliest()) });
    } else {
      run.replayed(key);
      // Replayed and still ahead (a restart while it slept): waited for again, until its stored time.
      if (wakeAt > now) run.emit({ type: 'SLEEP', at: now, key, wakeAt, until: Math.min(wakeAt, this.earliest()) });
    }
    if (wakeAt <= now) {
      // Past (replayed after its time): the task may still show it as the sleep it waits for (restarted while it slept).
      const earliest = this.earliest();
      run.emit({ type: 'WOKE', at: now, until: earliest === Infinity ? null : earliest });
      return Promise.resolve();
    }
    const due = wakeAt;
    return new Promise<void>((resolve, reject) => {
      const sleeper: Sleeper = { wakeAt: due, timer: undefined, resolve, reject };
      (this.waiting ??= new Map()).set(key, sleeper);
      this.arm(run, key, sleeper);
    });
  }

  /** Rejects every pending sleep with `reason`; whether there was one. */
  abort(reason: unknown): boolean {
    if (!this.waiting?.size) return false;
    for (const sleeper of this.waiting.values()) {
      clearTimeout(sleeper.timer);
      sleeper.reject(reason);
    }
    this.waiting.clear();
    return true;
  }

  /** Earliest wake time of the pending sleeps, Infinity when none. */
  private earliest(): number {
    let earliest = Infinity;
    if (this.waiting) for (const sleeper of this.waiting.values()) earliest = Math.min(earliest, sleeper.wakeAt);
    return earliest;
  }

  private arm(run: SleepingRun, key: string, sleeper: Sleeper): void {
    const remaining = sleeper.wakeAt - run.now();
    if (remaining > 0) {
      sleeper.timer = setTimeout(() => this.arm(run, key, sleeper), Math.min(remaining, MAX_TIMER_MS));
      return;
    }
    this.waiting?.delete(key);
    const earliest = this.earliest();
    run.emit({ type: 'WOKE', at: run.now(), until: earliest === Infinity ? null : earliest });
    sleeper.resolve();
  }
}
