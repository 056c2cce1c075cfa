/**
 * The outbound bytes of one principal over all its connections (limits:
 * `maxOutboundBytesPerPrincipal`). A per-connection budget alone lets one
 * principal open many connections, each just under it, and pin their sum.
 *
 * Each connection holds a {@link OutboundShare}: the bytes it last measured
 * as queued for its client. The principal's total is the sum of the shares,
 * kept up to date by each change (no walk over the connections per write).
 * A share that holds bytes (or is marked busy: replies may be on their way)
 * is re-measured on a shared tick, so bytes a client reads without any event
 * telling the server (a drained socket emits nothing below its high-water
 * mark) do not stay counted against it.
 */
import type { ServingRuntime } from './ServingRuntime.js';

/** How often shares holding bytes are re-measured, ms. */
const REFRESH_MS = 100;

export class PrincipalOutbound {
  private readonly totals = new Map<string, number>();
  /** Shares re-measured on each tick: they hold bytes or are busy. */
  private readonly watched = new Set<OutboundShare>();
  private ticker: NodeJS.Timeout | undefined;

  constructor(readonly maxBytes: number) {}

  /** A connection's share of `principal`'s total; `refresh` re-measures it (and calls `set`). */
  share(principal: string, refresh: () => void): OutboundShare {
    return new OutboundShare(this, principal, refresh);
  }

  /** Bytes queued for `principal`'s clients over all its connections, as last measured. */
  total(principal: string): number {
    return this.totals.get(principal) ?? 0;
  }

  /** @internal */
  add(principal: string, delta: number): void {
    const total = (this.totals.get(principal) ?? 0) + delta;
    if (total <= 0) this.totals.delete(principal);
    else this.totals.set(principal, total);
  }

  /** @internal */
  watch(share: OutboundShare, on: boolean): void {
    if (!on) {
      this.watched.delete(share);
      return;
    }
    this.watched.add(share);
    // Stopped by the tick that finds nothing to watch, not here: a poll per request would otherwise start and
    // clear a timer each time.
    this.ticker ??= setInterval(() => {
      if (this.watched.size === 0) {
        clearInterval(this.ticker);
        this.ticker = undefined;
        return;
      }
      for (const watched of [...this.watched]) watched.refresh();
    }, REFRESH_MS).unref();
  }
}

/** One connection's part of its principal's outbound total. */
export class OutboundShare {
  private bytes = 0;
  private busy = false;
  private released = false;

  constructor(
    private readonly ledger: PrincipalOutbound,
    readonly principal: string,
    /** Re-measures the connection: calls `set` with what it now holds. */
    readonly refresh: () => void,
  ) {}

  /** The principal's budget. */
  get maxBytes(): number {
    return this.ledger.maxBytes;
  }

  /** The bytes this connection now holds for its client. */
  set(bytes: number): void {
    if (this.released || bytes === this.bytes) return;
    this.ledger.add(this.principal, bytes - this.bytes);
    this.bytes = bytes;
    this.ledger.watch(this, bytes > 0 || this.busy);
  }

  /** Keep re-measuring while replies may be produced without anything telling the share. */
  setBusy(busy: boolean): void {
    if (this.released || busy === this.busy) return;
    this.busy = busy;
    this.ledger.watch(this, this.bytes > 0 || busy);
  }

  /** True when this connection holds unread bytes while its principal is over budget. */
  over(): boolean {
    return this.bytes > 0 && this.ledger.total(this.principal) > this.ledger.maxBytes;
  }

  /** True when queueing `bytes` more on this connection, which already holds some, would take the principal past twice its budget. */
  wouldOverflow(bytes: number): boolean {
    return this.bytes > 0 && this.ledger.total(this.principal) + bytes > 2 * this.ledger.maxBytes;
  }

  /** The connection ended: its bytes no longer count. */
  release(): void {
    if (this.released) return;
    this.ledger.add(this.principal, -this.bytes);
    this.bytes = 0;
    this.busy = false;
    this.ledger.watch(this, false);
    this.released = true;
  }
}

const ledgers = new WeakMap<ServingRuntime, PrincipalOutbound>();

/** The ledger of `runtime`: shared by its HTTP, WebSocket and stdio connections. */
export function principalOutboundOf(runtime: ServingRuntime): PrincipalOutbound {
  let ledger = ledgers.get(runtime);
  if (!ledger) {
    ledger = new PrincipalOutbound(runtime.limits.maxOutboundBytesPerPrincipal);
    ledgers.set(runtime, ledger);
  }
  return ledger;
}
