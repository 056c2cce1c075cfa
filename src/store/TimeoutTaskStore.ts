/**
 * Store operation timeouts: a store that stops answering (PostgreSQL frozen
 * behind a dead TCP path, a disk that hangs) must not hold a `tools/call` or
 * a `tasks/get` open for the whole stall. Each operation the runtime makes is
 * raced against a timeout and rejected with {@link StoreTimeoutError}, a
 * retryable `-32603` naming no internals. (A task's own deadline, its ttl, is
 * `runtime/`'s business: this is the time one store call may take.)
 *
 * A write that times out may still land later. A late `put` is harmless (the
 * Persister retries with a higher version, latest wins); a late `create` made
 * a task nobody was told about, so it is deleted as soon as it lands.
 */
import { performance } from 'node:perf_hooks';
import { StoreTimeoutError } from '../core/errors.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { ForwardingTaskStore } from './kit/ForwardingTaskStore.js';
import { putRecords, type QuarantinedRecord, type TaskListQuery, type TaskStore } from './TaskStore.js';

/** Default timeout of one store operation. */
export const DEFAULT_STORE_TIMEOUT_MS = 10_000;

export class TimeoutTaskStore extends ForwardingTaskStore {
  constructor(
    inner: TaskStore,
    /** Milliseconds each operation may take. */
    readonly timeoutMs: number = DEFAULT_STORE_TIMEOUT_MS,
    /** Told about late creates removed and other clean-ups that failed. */
    private readonly onLate: (message: string, error?: unknown) => void = () => undefined,
  ) {
    super(inner);
  }

  // Open, close and the recovery listing (listNonTerminal, scanNonTerminal) are forwarded unbounded: they are bounded
  // by the store's own timeouts, and recovering 100k tasks takes its time.

  override create(record: TaskRecord): Promise<void> {
    const write = this.inner.create(record);
    return this.bounded('create', write, () => {
      // The caller was told the create failed: a record that lands after all must not become a task nobody knows.
      write.then(
        () =>
          this.inner.delete(record.taskId).then(
            () => this.onLate(`task ${record.taskId}: its create landed after its timeout and was removed`),
            (error: unknown) => this.onLate(`task ${record.taskId}: its late create could not be removed`, error),
          ),
        () => undefined,
      );
    });
  }

  override put(record: TaskRecord): Promise<void> {
    return this.bounded('put', this.inner.put(record));
  }

  override putMany(records: readonly TaskRecord[]): Promise<void> {
    return this.bounded('putMany', putRecords(this.inner, records));
  }

  override get(taskId: string, owner?: string): Promise<TaskRecord | undefined> {
    return this.bounded('get', this.inner.get(taskId, owner));
  }

  override delete(taskId: string): Promise<boolean> {
    return this.bounded('delete', this.inner.delete(taskId));
  }

  override listExpired(now: number, limit: number): Promise<string[]> {
    return this.bounded('listExpired', this.inner.listExpired(now, limit));
  }

  override list(query?: TaskListQuery): Promise<TaskRecord[]> {
    return this.bounded('list', this.inner.list(query));
  }

  override quarantine(taskId: string, reason: string): Promise<boolean> {
    return this.bounded('quarantine', this.inner.quarantine(taskId, reason));
  }

  override listQuarantined(): Promise<QuarantinedRecord[]> {
    return this.bounded('listQuarantined', this.inner.listQuarantined());
  }

  /**
   * Operations in flight, oldest first. All share one timeout, so the
   * oldest expires first and one timer serves them all: a timer set and
   * cleared per operation was ~1 % of a `tasks/get` on the fast lane, and
   * every create pays for two (create, then put).
   */
  private readonly inFlight = new Set<InFlight>();
  /** Set for the oldest operation's expiry (never moved: each new operation expires last). */
  private timer: NodeJS.Timeout | undefined;

  private bounded<T>(operation: string, work: Promise<T>, onTimeout?: () => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry: InFlight = { expires: performance.now() + this.timeoutMs, operation, reject, onTimeout };
      this.inFlight.add(entry);
      this.arm();
      work.then(
        (value) => {
          if (this.settled(entry)) resolve(value);
        },
        (error: unknown) => {
          if (this.settled(entry)) reject(error);
        },
      );
    });
  }

  /** Takes `entry` out; false when its timeout had already failed it. */
  private settled(entry: InFlight): boolean {
    if (!this.inFlight.delete(entry)) return false;
    // Nothing in flight: the timer must not keep the process alive by itself (an operation's own I/O does).
    if (this.inFlight.size === 0) this.timer?.unref();
    return true;
  }

  private arm(): void {
    if (this.timer !== undefined) {
      // Already set for an earlier operation's expiry, which comes first: it re-arms for the rest when it fires.
      this.timer.ref();
      return;
    }
    const head = this.inFlight.values().next().value;
    if (head === undefined) return;
    this.timer = setTimeout(() => this.expire(), Math.max(0, head.expires - performance.now()));
  }

  /** Fails every operation whose timeout came (they are in expiry order), then re-arms for the next. */
  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    for (const entry of this.inFlight) {
      // Not due yet (the operation the timer was set for settled, or the timer ran a little early): re-armed below.
      if (entry.expires > now) break;
      this.inFlight.delete(entry);
      entry.onTimeout?.();
      entry.reject(new StoreTimeoutError(entry.operation, this.timeoutMs));
    }
    this.arm();
  }
}

/** One store operation racing its timeout. */
interface InFlight {
  /** `performance.now()` ms: monotonic, so the operations stay in expiry order whatever the wall clock does. */
  readonly expires: number;
  readonly operation: string;
  readonly reject: (error: unknown) => void;
  readonly onTimeout: (() => void) | undefined;
}
