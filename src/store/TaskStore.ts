/**
 * The persistence port. Every implementation passes the contract suite in
 * `test/store/contract.ts`; the runtime depends on nothing else.
 *
 * Durability contract: a promise returned by `create` or `put` resolves only
 * once the record would survive `kill -9` of this process (fsync'ed where the
 * store is a file), and once resolved a `get` from any instance sharing the
 * store returns it (T-07, I-1).
 *
 * Writers: the embedded stores (`memory`, `lowdb`, `sqlite`) assume one process writes
 * a store at a time (like lowdb itself); sharing one store between instances
 * is the job of a store built for it (Postgres, with leases).
 *
 * Ids: task ids are 1–200 characters; a store treats any other id as unknown
 * on `get`, `put` and `delete`, and refuses it on `create`.
 *
 * Orders: `list` is newest first (ties by id); `listExpired` most overdue
 * first. A resolved `delete` survives a crash like a resolved `put`.
 */
import type { TaskStatus } from '../../machines/task/index.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';

export interface TaskListQuery {
  owner?: string;
  status?: readonly TaskStatus[];
  /** At most this many records (default: all). */
  limit?: number;
}

export interface TaskStore {
  /** Prepares the store (folders, schema); called once before any other method. */
  open(): Promise<void>;
  /** Waits for writes in flight and releases resources; no method may be called afterwards. */
  close(): Promise<void>;
  /** Durably stores a new task. Rejects with {@link TaskExistsError} when the id is taken. */
  create(record: TaskRecord): Promise<void>;
  /**
   * Durably replaces a task's record. A record whose `version` is not higher
   * than the stored one is ignored (latest wins); an unknown id is ignored too
   * (the task was purged).
   */
  put(record: TaskRecord): Promise<void>;
  /** The stored record, or `undefined`. */
  get(taskId: string): Promise<TaskRecord | undefined>;
  /** Removes a task; resolves `true` when it existed. */
  delete(taskId: string): Promise<boolean>;
  /** Every task whose status is `working` or `input_required` (recovery on start). */
  listNonTerminal(): Promise<TaskRecord[]>;
  /** Ids of tasks whose `createdAt + ttlMs` is at or before `now` (the reaper). */
  listExpired(now: number, limit: number): Promise<string[]>;
  /** Out-of-band admin listing, newest first. Never exposed on the wire. */
  list(query?: TaskListQuery): Promise<TaskRecord[]>;
}

/** Raised by {@link TaskStore.create} for an id that already exists. */
export class TaskExistsError extends Error {
  constructor(readonly taskId: string) {
    super(`Task ${taskId} already exists`);
    this.name = 'TaskExistsError';
  }
}
