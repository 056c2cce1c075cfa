/**
 * A token bucket: `burst` tokens at most, refilled at `limit` per
 * `windowMs`; each admitted request takes one. Pure arithmetic over a clock
 * the caller passes in (tests inject one; nothing here reads the time).
 */

/** One rate: `limit` per `windowMs`, with bursts up to `burst` (default `limit`). */
export interface RateSpec {
  limit: number;
  windowMs: number;
  burst?: number;
}

export class TokenBucket {
  #tokens: number;
  #at: number;

  /** A full bucket at `now`. `share` (0, 1]: this instance's part of a rate several instances enforce together. */
  constructor(
    private readonly spec: RateSpec,
    now: number,
    private share = 1,
  ) {
    this.#tokens = this.capacity;
    this.#at = now;
  }

  /** Most tokens the bucket holds (at least one: a share never makes a rate unusable). */
  get capacity(): number {
    return Math.max(1, (this.spec.burst ?? this.spec.limit) * this.share);
  }

  /** Tokens added per ms. */
  get refillPerMs(): number {
    return (this.spec.limit * this.share) / this.spec.windowMs;
  }

  /** Changes this instance's share (the number of live instances changed); the tokens held are capped to the new capacity. */
  setShare(share: number, now: number): void {
    this.refill(now);
    this.share = share;
    this.#tokens = Math.min(this.#tokens, this.capacity);
  }

  /** `0` when a token is there at `now`, else the ms until one will be. Takes nothing. */
  wait(now: number): number {
    this.refill(now);
    return this.#tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - this.#tokens) / this.refillPerMs));
  }

  /** Takes one token: `0` when it was there, else the ms until one will be (nothing taken). */
  take(now: number): number {
    const waitMs = this.wait(now);
    if (waitMs === 0) this.#tokens -= 1;
    return waitMs;
  }

  /** Whether the bucket is full at `now` (it may then be forgotten: a new one starts full). */
  isFull(now: number): boolean {
    this.refill(now);
    return this.#tokens >= this.capacity;
  }

  private refill(now: number): void {
    // A clock that goes back adds nothing (and takes nothing).
    if (now > this.#at) this.#tokens = Math.min(this.capacity, this.#tokens + (now - this.#at) * this.refillPerMs);
    this.#at = Math.max(this.#at, now);
  }
}
