/**
 * Per-principal admission: how many unfinished tasks each principal holds in
 * this process, against `maxLiveTasksPerPrincipal`. One acquire/release API:
 * every live task holds a {@link Slot} from its creation (or recovery) until
 * it leaves this process, whichever way it leaves (finished, relinquished to
 * another instance, refused by the store, server stopped).
 *
 * Counted per owner only: one principal at its limit never blocks another (I-7).
 */
import { limitExceeded } from '../limits/Limits.js';

/** A principal's claim on one live task; `release()` gives it back (once: later calls do nothing). */
export interface Slot {
  readonly principal: string;
  release(): void;
}

export class AdmissionSlots {
  private readonly held = new Map<string, number>();

  constructor(private readonly maxPerPrincipal: number) {}

  /**
   * A slot for a new task of `principal`; throws the `maxLiveTasksPerPrincipal`
   * limit error when the principal holds its maximum already.
   */
  acquire(principal: string): Slot {
    if (this.count(principal) >= this.maxPerPrincipal) {
      throw limitExceeded(
        'maxLiveTasksPerPrincipal',
        this.maxPerPrincipal,
        'too many unfinished tasks for this principal; wait for some to finish or cancel them',
      );
    }
    return this.take(principal);
  }

  /** A slot for a task that exists already (recovered, adopted): counted, never refused. */
  adopt(principal: string): Slot {
    return this.take(principal);
  }

  /** Slots `principal` holds now. */
  count(principal: string): number {
    return this.held.get(principal) ?? 0;
  }

  /** Slots held by everyone. */
  get total(): number {
    let total = 0;
    for (const count of this.held.values()) total += count;
    return total;
  }

  private take(principal: string): Slot {
    this.held.set(principal, this.count(principal) + 1);
    return new HeldSlot(this, principal);
  }

  /** One slot of `principal` given back (called once per slot, by {@link HeldSlot.release}). */
  giveBack(principal: string): void {
    const left = this.count(principal) - 1;
    if (left > 0) this.held.set(principal, left);
    else this.held.delete(principal);
  }
}

/**
 * A slot as a class, not a literal with a `release` closure: one small object
 * per live task instead of an object, a closure and its context (~110 B of
 * every live task).
 */
class HeldSlot implements Slot {
  private released = false;

  constructor(
    private readonly slots: AdmissionSlots,
    readonly principal: string,
  ) {}

  release(): void {
    if (this.released) return;
    this.released = true;
    this.slots.giveBack(this.principal);
  }
}
