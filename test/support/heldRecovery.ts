/**
 * A store whose start-up recovery scan is held until the test lets it go:
 * the runtime stays observably `recovering` for as long as a test needs,
 * without depending on how long recovery of many tasks takes. A
 * {@link ForwardingTaskStore}: every other method is the store's own.
 */
import { ForwardingTaskStore } from '../../src/store/kit/ForwardingTaskStore.js';
import type { TaskStore } from '../../src/store/index.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';

export interface HeldRecovery {
  store: TaskStore;
  /** Lets recovery read the store. */
  open(): void;
  /** Resolves once recovery reached the scan (and waits there). */
  reached: Promise<void>;
}

class HeldRecoveryStore extends ForwardingTaskStore {
  constructor(
    inner: TaskStore,
    private readonly gate: Promise<void>,
    private readonly reach: () => void,
  ) {
    super(inner);
  }

  override async listNonTerminal(): Promise<TaskRecord[]> {
    this.reach();
    await this.gate;
    return this.inner.listNonTerminal();
  }

  override async *scanNonTerminal(pageSize: number): AsyncIterable<TaskRecord[]> {
    this.reach();
    await this.gate;
    yield* super.scanNonTerminal(pageSize);
  }
}

/** `inner` with its recovery scan (`scanNonTerminal`, or `listNonTerminal` for a store without one) held until `open()`. */
export function heldRecovery(inner: TaskStore): HeldRecovery {
  let open!: () => void;
  let reach!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const reached = new Promise<void>((resolve) => (reach = resolve));
  return { store: new HeldRecoveryStore(inner, gate, reach), open, reached };
}
