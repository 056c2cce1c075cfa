/**
 * A {@link TaskStore} wrapper that injects write faults: a full disk
 * (`ENOSPC`), an I/O error (`EIO`), slow writes, a failure on the Nth write,
 * and writes that hang until healed. Reads pass through untouched.
 *
 * For testing what a runtime (or a store) does when its writes misbehave: a
 * status must never be shown before it is durable, whatever the write path
 * did. Faults apply to the writes the runtime makes: `create`,
 * `put`, `putMany` (one write for all its records: a fault fails, delays or
 * holds the whole batch) and `delete`.
 *
 * @example
 * ```ts
 * const store = new FaultyTaskStore(new MemoryTaskStore());
 * store.inject({ effect: 'ENOSPC', ops: ['put'], when: (w) => w.record?.status === 'completed' });
 * // ... the task finishes; tasks/get still answers `working` ...
 * store.heal(); // the runtime's retry now succeeds
 * ```
 */
import { ForwardingTaskStore } from '../../src/store/kit/ForwardingTaskStore.js';
import { putRecords } from '../../src/store/TaskStore.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';

/** The writes a fault can match. */
export type WriteOp = 'create' | 'put' | 'putMany' | 'delete';

/** One write as a fault's `when` sees it. */
export interface WriteAttempt {
  op: WriteOp;
  /** The task written (`putMany`: its first record's; all of them are in `records`). */
  taskId: string;
  /** The record written (`create`, `put`); absent for `delete` and `putMany`. */
  record?: TaskRecord;
  /** The records of a `putMany`. */
  records?: readonly TaskRecord[];
  /** 1-based count of write attempts on this wrapper so far, this one included. */
  n: number;
}

/** What a matched write suffers. */
export type FaultEffect =
  /** Rejects with a Node-style errno error before the write reaches the store: nothing is written. */
  | 'ENOSPC'
  | 'EIO'
  /** Waits this long, then writes. */
  | { delayMs: number }
  /** Never settles until {@link FaultyTaskStore.heal} (or the fault's removal), then writes. */
  | 'hang';

export interface WriteFault {
  effect: FaultEffect;
  /** Writes it applies to (default: all of them). */
  ops?: readonly WriteOp[];
  /** Further narrows the writes it applies to. */
  when?: (write: WriteAttempt) => boolean;
  /** Lets this many matching writes through first: `skip: n - 1` fails the Nth. */
  skip?: number;
  /** Applies to at most this many matching writes (default: until removed). */
  times?: number;
}

/** A fault in force; `remove()` lifts it (hung writes it holds proceed). */
export interface InjectedFault {
  /** Matching writes it has hit so far. */
  readonly hits: number;
  remove(): void;
}

const ERRNO: Record<'ENOSPC' | 'EIO', { errno: number; message: string }> = {
  ENOSPC: { errno: -28, message: 'no space left on device' },
  EIO: { errno: -5, message: 'i/o error' },
};

/** An error shaped like the one `fs` raises for `code`. */
export function errnoError(code: 'ENOSPC' | 'EIO', syscall = 'write'): NodeJS.ErrnoException {
  const { errno, message } = ERRNO[code];
  return Object.assign(new Error(`${code}: ${message}, ${syscall}`), { code, errno, syscall });
}

interface ActiveFault {
  spec: WriteFault;
  seen: number;
  hits: number;
  removed: boolean;
  /** Releases of the writes this fault holds hung. */
  hung: Set<() => void>;
}

export class FaultyTaskStore extends ForwardingTaskStore {
  private readonly faults = new Set<ActiveFault>();
  private attempts = 0;
  private failures = 0;

  /** Write attempts so far (successful or not). */
  get writeAttempts(): number {
    return this.attempts;
  }

  /** Writes refused with an injected error so far. */
  get injectedFailures(): number {
    return this.failures;
  }

  /** Writes currently held by a `hang` fault. */
  get hungWrites(): number {
    let count = 0;
    for (const fault of this.faults) count += fault.hung.size;
    return count;
  }

  /** Puts a fault in force; faults are checked in the order they were injected, the first match applies. */
  inject(spec: WriteFault): InjectedFault {
    const fault: ActiveFault = { spec, seen: 0, hits: 0, removed: false, hung: new Set() };
    this.faults.add(fault);
    return {
      get hits() {
        return fault.hits;
      },
      remove: () => this.lift(fault),
    };
  }

  /** Lifts every fault: hung writes proceed, later writes pass. */
  heal(): void {
    for (const fault of [...this.faults]) this.lift(fault);
  }

  override create(record: TaskRecord): Promise<void> {
    const delayed = this.suffer({ op: 'create', taskId: record.taskId, record });
    // No fault: straight through, in the same tick (a store copies the record at the call, and
    // close() waits only for writes it has seen).
    if (!delayed) return this.inner.create(record);
    const copy = structuredClone(record);
    return delayed.then(() => this.inner.create(copy));
  }

  override put(record: TaskRecord): Promise<void> {
    const delayed = this.suffer({ op: 'put', taskId: record.taskId, record });
    if (!delayed) return this.inner.put(record);
    const copy = structuredClone(record);
    return delayed.then(() => this.inner.put(copy));
  }

  /** One write attempt for the whole batch: an injected error refuses all of it before any record reaches the store. */
  override putMany(records: readonly TaskRecord[]): Promise<void> {
    const delayed = this.suffer({ op: 'putMany', taskId: records[0]?.taskId ?? '', records });
    if (!delayed) return putRecords(this.inner, records);
    const copies = structuredClone(records);
    return delayed.then(() => putRecords(this.inner, copies));
  }

  override delete(taskId: string): Promise<boolean> {
    const delayed = this.suffer({ op: 'delete', taskId });
    if (!delayed) return this.inner.delete(taskId);
    return delayed.then(() => this.inner.delete(taskId));
  }

  private lift(fault: ActiveFault): void {
    fault.removed = true;
    this.faults.delete(fault);
    for (const release of fault.hung) release();
    fault.hung.clear();
  }

  /** The first matching fault's effect on this write: `undefined` when none applies (the write goes through at once). */
  private suffer(write: Omit<WriteAttempt, 'n'>): Promise<void> | undefined {
    const attempt: WriteAttempt = { ...write, n: ++this.attempts };
    const fault = this.match(attempt);
    if (!fault) return undefined;
    const effect = fault.spec.effect;
    if (effect === 'ENOSPC' || effect === 'EIO') {
      this.failures++;
      return Promise.reject(errnoError(effect));
    }
    if (effect === 'hang') {
      return new Promise<void>((resolve) => {
        const release = () => {
          fault.hung.delete(release);
          resolve();
        };
        fault.hung.add(release);
      });
    }
    return new Promise((resolve) => setTimeout(resolve, effect.delayMs));
  }

  private match(write: WriteAttempt): ActiveFault | undefined {
    for (const fault of this.faults) {
      const { ops, when, skip = 0, times = Infinity } = fault.spec;
      // Used up (a used-up `hang` stays listed so heal() can release what it holds).
      if (fault.hits >= times) continue;
      if (ops && !ops.includes(write.op)) continue;
      if (when && !when(write)) continue;
      fault.seen++;
      if (fault.seen <= skip) continue;
      fault.hits++;
      if (fault.hits >= times && fault.spec.effect !== 'hang') this.faults.delete(fault);
      return fault;
    }
    return undefined;
  }
}
