/**
 * The open/closed state every store goes through: `new` → `opening` → `open`
 * → `closed`, once. Every port method but `open` and `close` asserts `open`,
 * with one message naming the store, so a caller that writes after `close()`
 * is refused instead of persisting after the runtime stopped (I-9).
 */

export type StoreState = 'new' | 'opening' | 'open' | 'closed';

export class StoreLifecycle {
  #state: StoreState = 'new';

  /** `name`: the store as messages name it (`sqlite task store /path`); never shown to clients. */
  constructor(private readonly name: () => string) {}

  get state(): StoreState {
    return this.#state;
  }

  /** `new` → `opening`; a second `open()` is a programming error. */
  beginOpen(): void {
    if (this.#state !== 'new') throw new Error(`${this.name()}: open() called on a store that is ${this.#state}`);
    this.#state = 'opening';
  }

  /** `opening` → `open`; `false` when `close()` came while opening (the store stays closed). */
  finishOpen(): boolean {
    if (this.#state !== 'opening') return false;
    this.#state = 'open';
    return true;
  }

  /** → `closed`; `false` when it already was (close is idempotent). */
  beginClose(): boolean {
    if (this.#state === 'closed') return false;
    this.#state = 'closed';
    return true;
  }

  /** Throws unless open: after close nothing is read or written again (I-9). */
  assertOpen(): void {
    if (this.#state === 'open') return;
    if (this.#state === 'closed') throw new Error(`store is closed (${this.name()})`);
    throw new Error(`store is not open: call open() first (${this.name()})`);
  }
}
