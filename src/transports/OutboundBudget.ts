import type { OutboundShare } from './PrincipalOutbound.js';

/**
 * The outbound budget of one connection: how many bytes may sit
 * queued for a client that does not read them. A client that stops reading
 * while asking for large answers would otherwise grow the server's memory
 * without bound (measured before: +570 MB RSS in 10 s for one WebSocket),
 * and answering pings kept such a socket open forever.
 *
 * - Over `maxBytes`: the connection stops being read (no new requests, so no
 *   new answers) and a grace period starts; if the queue drains below the
 *   budget in time, reading resumes.
 * - Still over it when the grace period ends: the connection is closed,
 *   whatever else the client does (pongs included).
 * - A message that would take the queue past twice the budget is not queued
 *   at all: the connection is closed at once. A single message larger than
 *   the budget still goes out on an empty queue.
 * - With a principal's share (`share`), the same three rules apply to the
 *   principal's total over all its connections (`maxOutboundBytesPerPrincipal`),
 *   to a connection that holds unread bytes of that total: a connection whose
 *   client reads what it gets is never held for its siblings.
 */
export interface OutboundBudgetOptions {
  maxBytes: number;
  graceMs: number;
  /** Bytes queued right now (for WebSocket: `bufferedAmount`). */
  queued(): number;
  /** Stop reading the connection. */
  pause(): void;
  /** Read it again. */
  resume(): void;
  /** Close the connection; `reason` is short and fit for a close frame. */
  close(reason: string): void;
  /** This connection's part of its principal's total, when it has one (it may change with the principal). */
  share?: () => OutboundShare | undefined;
}

/** How often a connection over budget is checked for having drained, ms. */
const DRAIN_POLL_MS = 100;

export class OutboundBudget {
  private graceTimer: NodeJS.Timeout | undefined;
  private drainPoll: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: OutboundBudgetOptions) {}

  /** True while the connection is over budget (paused, in its grace period). */
  get over(): boolean {
    return this.graceTimer !== undefined;
  }

  /**
   * Whether a message of `bytes` may be queued now. False means the
   * connection has been closed for exceeding twice the budget: drop the message.
   */
  admit(bytes: number): boolean {
    if (this.closed) return false;
    const queued = this.measure();
    if (queued > 0 && queued + bytes > 2 * this.options.maxBytes) {
      this.shut(`outbound buffer over ${2 * this.options.maxBytes} bytes: the client is not reading`);
      return false;
    }
    if (this.options.share?.()?.wouldOverflow(bytes)) {
      this.shut(`outbound bytes of the principal over ${2 * this.principalMax()} bytes: its clients are not reading`);
      return false;
    }
    return true;
  }

  /** Call after queueing (or to re-measure): starts the grace period when the queue is over budget. */
  check(): void {
    if (this.closed) return;
    const queued = this.measure();
    if (this.graceTimer !== undefined || this.overBy(queued) === undefined) return;
    this.options.pause();
    this.graceTimer = setTimeout(() => {
      this.graceTimer = undefined;
      const over = this.overBy(this.measure());
      if (over === 'connection') this.shut(`outbound buffer not drained within ${this.options.graceMs} ms: the client is not reading`);
      else if (over === 'principal')
        this.shut(
          `outbound bytes of the principal over ${this.principalMax()} bytes for ${this.options.graceMs} ms: its clients are not reading`,
        );
      else this.relieve();
    }, this.options.graceMs);
    this.graceTimer.unref();
    this.drainPoll = setInterval(() => {
      if (this.overBy(this.measure()) === undefined) this.relieve();
    }, DRAIN_POLL_MS);
    this.drainPoll.unref();
  }

  /** Stops the timers (the connection ended for another reason). */
  dispose(): void {
    this.closed = true;
    this.clearTimers();
    this.options.share?.()?.release();
  }

  /** Bytes queued now, told to the principal's share. */
  private measure(): number {
    const queued = this.options.queued();
    this.options.share?.()?.set(queued);
    return queued;
  }

  /** Which budget `queued` bytes exceed, if any. */
  private overBy(queued: number): 'connection' | 'principal' | undefined {
    if (queued > this.options.maxBytes) return 'connection';
    return this.options.share?.()?.over() ? 'principal' : undefined;
  }

  private principalMax(): number {
    return this.options.share?.()?.maxBytes ?? 0;
  }

  private relieve(): void {
    this.clearTimers();
    if (!this.closed) this.options.resume();
  }

  private shut(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.clearTimers();
    this.options.share?.()?.release();
    this.options.close(reason);
  }

  private clearTimers(): void {
    clearTimeout(this.graceTimer);
    clearInterval(this.drainPoll);
    this.graceTimer = undefined;
    this.drainPoll = undefined;
  }
}
