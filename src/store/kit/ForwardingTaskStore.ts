/**
 * The one decorator style for stores: a class that forwards every port
 * method to `inner`, and a decorator overrides only what it changes. The
 * compiler checks that every {@link TaskStore} method is forwarded (the class
 * implements the port), which a Proxy cannot; optional methods fall back as
 * their callers' helpers do (`putRecords`, `nonTerminalPages`), and what the
 * runtime reads beside the port (`ownership`, `locked`, `description`) passes
 * through from the store underneath.
 */
import type { TaskRecord } from '../../tasks/TaskRecord.js';
import {
  nonTerminalPages,
  putRecords,
  type QuarantinedRecord,
  type TaskListQuery,
  type TaskOwnership,
  type TaskStore,
} from '../TaskStore.js';

/** What a store may tell beside the port: read by readiness (`locked`) and start-up messages (`description`). */
interface StoreFacts {
  readonly locked?: boolean | undefined;
  readonly description?: string;
}

export class ForwardingTaskStore implements TaskStore {
  constructor(readonly inner: TaskStore) {}

  /** The store's ownership capability, when it has one (the runtime treats a store with it as shared). */
  get ownership(): TaskOwnership | undefined {
    return this.inner.ownership;
  }

  /** Whether the store underneath holds its exclusive lock; `undefined` when it takes none. */
  get locked(): boolean | undefined {
    return (this.inner as StoreFacts).locked;
  }

  /** Where the store underneath lives, when it says. */
  get description(): string | undefined {
    return (this.inner as StoreFacts).description;
  }

  open(): Promise<void> {
    return this.inner.open();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  create(record: TaskRecord): Promise<void> {
    return this.inner.create(record);
  }

  put(record: TaskRecord): Promise<void> {
    return this.inner.put(record);
  }

  putMany(records: readonly TaskRecord[]): Promise<void> {
    return putRecords(this.inner, records);
  }

  get(taskId: string, owner?: string): Promise<TaskRecord | undefined> {
    return this.inner.get(taskId, owner);
  }

  delete(taskId: string): Promise<boolean> {
    return this.inner.delete(taskId);
  }

  listNonTerminal(): Promise<TaskRecord[]> {
    return this.inner.listNonTerminal();
  }

  scanNonTerminal(pageSize: number): AsyncIterable<TaskRecord[]> {
    return nonTerminalPages(this.inner, pageSize);
  }

  listExpired(now: number, limit: number): Promise<string[]> {
    return this.inner.listExpired(now, limit);
  }

  list(query?: TaskListQuery): Promise<TaskRecord[]> {
    return this.inner.list(query);
  }

  quarantine(taskId: string, reason: string): Promise<boolean> {
    return this.inner.quarantine(taskId, reason);
  }

  listQuarantined(): Promise<QuarantinedRecord[]> {
    return this.inner.listQuarantined();
  }
}
