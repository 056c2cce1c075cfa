/**
 * The latest upstream progress of forwarded tasks, shown as their
 * `statusMessage` while they work ("3/10: …"): an upstream's
 * `notifications/progress` for a call that became a task keeps coming after
 * the call was answered (its progress token lives as long as the task), but
 * there is no request left to carry it to the caller. Bounded: the oldest
 * entries go first, so tasks nobody follows to their end cannot grow it.
 */
import { boundedStatusMessage } from '../tasks/storedText.js';
export const MAX_TRACKED_TASKS = 10_000;

interface Entry {
  text: string | undefined;
  /** Stops listening to the upstream's progress for this task. */
  stop: () => void;
}

export class TaskProgressBoard {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly capacity = MAX_TRACKED_TASKS) {}

  static key(upstream: string, upstreamTaskId: string): string {
    return `${upstream}\u0000${upstreamTaskId}`;
  }

  /** Starts tracking `key`; `stop` is called when it is forgotten. */
  track(key: string, stop: () => void): void {
    this.forget(key);
    this.entries.set(key, { text: undefined, stop });
    while (this.entries.size > this.capacity) this.forget(this.entries.keys().next().value!);
  }

  set(key: string, text: string): void {
    const entry = this.entries.get(key);
    // Served as the task's statusMessage to every poll: bounded as a local tool's is (T-32: informative only, so cut).
    if (entry) entry.text = boundedStatusMessage(text);
  }

  text(key: string): string | undefined {
    return this.entries.get(key)?.text;
  }

  forget(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    entry.stop();
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    for (const key of [...this.entries.keys()]) this.forget(key);
  }
}
