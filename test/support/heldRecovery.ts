/**
 * A store whose start-up recovery scan is held until the test lets it go
 * (issue 13 item 6): the runtime stays observably `recovering` for as long as
 * a test needs, without depending on how long recovery of many tasks takes.
 * A hook on the real store: every other method is the store's own.
 */
import type { TaskStore } from '../../src/store/index.js';

export interface HeldRecovery {
  store: TaskStore;
  /** Lets recovery read the store. */
  open(): void;
  /** Resolves once recovery reached the scan (and waits there). */
  reached: Promise<void>;
}

/** `inner` with its recovery scan (`scanNonTerminal`, or `listNonTerminal` for a store without one) held until `open()`. */
export function heldRecovery(inner: TaskStore): HeldRecovery {
  let open!: () => void;
  let reach!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const store = new Proxy(inner, {
    get(target, key) {
      if (key === 'listNonTerminal')
        return async () => {
          reach();
          await gate;
          return target.listNonTerminal();
        };
      if (key === 'scanNonTerminal' && target.scanNonTerminal)
        return async function* (pageSize: number) {
          reach();
          await gate;
          yield* target.scanNonTerminal!(pageSize);
        };
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store, open, reached };
}
