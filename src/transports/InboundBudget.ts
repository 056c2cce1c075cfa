/**
 * The inbound budget: request-body bytes the server holds in memory for its
 * clients, per principal and for the whole server. Without it a client
 * announcing large bodies, sending most of each and going silent makes the
 * server buffer them all (measured: +615 MB RSS for 204 such sockets of one
 * principal, growing with the socket count).
 *
 * A request reserves its declared size before its body is read and gives it
 * back once it is answered (or its connection is gone); a reservation past
 * either budget is refused, and nothing is read.
 */
import type { Limits } from '../limits/Limits.js';

/** Which budget refused a reservation: the principal's own (429), or the server's (503). */
export type InboundRefusal = 'principal' | 'server';

export type InboundBudgetLimits = Pick<Limits, 'maxInboundBodyBytesPerPrincipal' | 'maxInboundBodyBytes'>;

export class InboundBudget {
  private total = 0;
  private readonly held = new Map<string, number>();

  constructor(private readonly limits: InboundBudgetLimits) {}

  /** Bytes reserved right now, by everyone or by `principal`. */
  reserved(principal?: string): number {
    return principal === undefined ? this.total : (this.held.get(principal) ?? 0);
  }

  /**
   * Reserves `bytes` for `principal`: the function that gives them back (call
   * it once; later calls do nothing), or which budget refused them.
   */
  reserve(principal: string, bytes: number): (() => void) | InboundRefusal {
    const mine = this.held.get(principal) ?? 0;
    if (mine + bytes > this.limits.maxInboundBodyBytesPerPrincipal) return 'principal';
    if (this.total + bytes > this.limits.maxInboundBodyBytes) return 'server';
    this.held.set(principal, mine + bytes);
    this.total += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total -= bytes;
      const left = (this.held.get(principal) ?? bytes) - bytes;
      if (left <= 0) this.held.delete(principal);
      else this.held.set(principal, left);
    };
  }
}

const budgets = new WeakMap<object, InboundBudget>();

/** The one budget of `owner` (a runtime): its HTTP and WebSocket entries draw on the same bytes. */
export function inboundBudgetOf(owner: object, limits: InboundBudgetLimits): InboundBudget {
  let budget = budgets.get(owner);
  if (!budget) budgets.set(owner, (budget = new InboundBudget(limits)));
  return budget;
}
