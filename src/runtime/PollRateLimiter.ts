/**
 * Optional pacing of clients that poll `tasks/get` much faster than the
 * `pollIntervalMs` they were given (T-27: the server MAY rate-limit; no
 * error code is specified). A too-early poll is answered late rather than
 * refused, so well-behaved and naive clients both keep working. Off by default.
 */
export interface PollRateLimitOptions {
  /** A poll earlier than `factor × pollIntervalMs` after the previous one is delayed. Default 0.5. */
  factor?: number;
  /** Longest delay imposed on one poll. Default 5 s. */
  maxDelayMs?: number;
  /** Most (principal, task) pairs remembered; the oldest are forgotten first. Default 100,000. */
  maxEntries?: number;
}

export class PollRateLimiter {
  private readonly last = new Map<string, number>();
  private readonly factor: number;
  private readonly maxDelayMs: number;
  private readonly maxEntries: number;

  constructor(
    options: PollRateLimitOptions = {},
    private readonly now: () => number = Date.now,
  ) {
    this.factor = options.factor ?? 0.5;
    this.maxDelayMs = options.maxDelayMs ?? 5000;
    this.maxEntries = options.maxEntries ?? 100_000;
  }

  /** Resolves when a poll of `taskId` by `principal` may be answered; returns the delay imposed (ms). */
  async admit(principal: string, taskId: string, intervalMs: number | undefined): Promise<number> {
    const key = `${principal}\u0000${taskId}`;
    const now = this.now();
    const previous = this.last.get(key);
    const wait = previous === undefined || !intervalMs ? 0 : Math.min(this.maxDelayMs, previous + intervalMs * this.factor - now);
    // Re-insert so Map order is least-recently-polled first.
    this.last.delete(key);
    this.last.set(key, now + Math.max(0, wait));
    if (this.last.size > this.maxEntries) this.last.delete(this.last.keys().next().value as string);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    return Math.max(0, wait);
  }
}
