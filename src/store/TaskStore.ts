/**
 * The persistence port. Every implementation passes the contract suite in
 * `test/store/contract.ts`; the runtime depends on nothing else.
 *
 * Durability contract: a promise returned by `create` or `put` resolves only
 * once the record would survive `kill -9` of this process (fsync'ed where the
 * store is a file), and once resolved a `get` from any instance sharing the
 * store returns it (T-07, I-1).
 *
 * Writers: one process owns an embedded store (`lowdb`, `sqlite`): `open()` takes an
 * exclusive OS-level lock first and a second opener gets `StoreInUseError`
 * (two writers would each trust an index the other changes). Sharing one store between instances is the job of a
 * store built for it (Postgres, with leases).
 *
 * Ids: task ids are 1–200 characters; a store treats any other id as unknown
 * on `get`, `put` and `delete`, and refuses it on `create`.
 *
 * Orders: `list` is newest first (ties by id); `listExpired` most overdue
 * first. A resolved `delete` survives a crash like a resolved `put`.
 *
 * Damaged records: every record a store reads is checked (it parses, has a
 * record's shape and the id it is stored under); one that fails is reported
 * once, set aside by {@link TaskStore.quarantine} (when the store may write),
 * skipped by lists and recovery, and answered by `get` with
 * {@link TaskRecordDamagedError}. The built-in stores share this path
 * (`kit/KitTaskStore.ts`).
 */
import type { TaskStatus } from '../../machines/task/index.js';
import { TaskRecordDamagedError } from '../core/errors.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';

export { TaskRecordDamagedError };

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
  /**
   * The stored record, or `undefined`. With `owner`, a record of another
   * owner is `undefined` too — and is neither read nor parsed: a foreign id
   * costs what an unknown one costs, whatever its size.
   * Rejects with {@link TaskRecordDamagedError} when the stored bytes cannot be
   * read as that task's record, or the record was quarantined —
   * with `owner`, only when the quarantined record is known to be that
   * owner's: for anyone else (and for everyone when its owner could not be
   * told) it is `undefined`, like an unknown id (I-7, T-14).
   */
  get(taskId: string, owner?: string): Promise<TaskRecord | undefined>;
  /**
   * Durably replaces many tasks' records in one store write (start-up
   * recovery ends each page of unfinished tasks with one call): each record as {@link put} would store it (a stale version or an
   * unknown id is ignored; of one task's records the highest version wins),
   * all of them or none. Resolves once every one is durable (I-1), and not
   * one is visible to `get` before; rejects when the write failed, and then
   * none of them was stored (a record the store cannot hold fails the call
   * before anything is written). sqlite: one transaction; postgres: one
   * statement in one transaction; lowdb: one journal batch.
   * Optional: {@link putRecords} falls back to one `put` per record.
   */
  putMany?(records: readonly TaskRecord[]): Promise<void>;
  /** Removes a task; resolves `true` when it existed. */
  delete(taskId: string): Promise<boolean>;
  /** Every task whose status is `working` or `input_required`. */
  listNonTerminal(): Promise<TaskRecord[]>;
  /**
   * The same records in pages of at most `pageSize`, read as they are
   * consumed (start-up recovery): recovering 100k tasks
   * never holds them all in memory at once. Each record that stays
   * unfinished throughout is yielded exactly once; one whose status changes
   * meanwhile may be yielded again (recovery skips a task already running).
   * Optional: {@link nonTerminalPages} falls back to `listNonTerminal`.
   */
  scanNonTerminal?(pageSize: number): AsyncIterable<TaskRecord[]>;
  /** Ids of tasks whose `createdAt + ttlMs` is at or before `now` (the reaper). */
  listExpired(now: number, limit: number): Promise<string[]>;
  /** Out-of-band admin listing, newest first. Never exposed on the wire. */
  list(query?: TaskListQuery): Promise<TaskRecord[]>;
  /**
   * Sets a damaged record aside: kept exactly as stored, never deleted, no
   * longer listed, recovered or expired; `get` then rejects with
   * {@link TaskRecordDamagedError}. Resolves `false` when no such record is
   * stored. Lists and recovery skip records they cannot parse; a store
   * quarantines those itself as it finds them (reporting each once).
   */
  quarantine(taskId: string, reason: string): Promise<boolean>;
  /** The records set aside by {@link quarantine}, oldest first (admin: `taskvisor tasks check`). */
  listQuarantined(): Promise<QuarantinedRecord[]>;
  /** Present on stores shared by several instances (see {@link TaskOwnership}); absent otherwise. */
  readonly ownership?: TaskOwnership | undefined;
}

/*
 * The port's optional methods, with their fallbacks for a store without them
 * (a custom one): callers use these, never the method itself.
 */

/** `store.scanNonTerminal(pageSize)`, or `listNonTerminal()` cut into pages for a store without it. */
export async function* nonTerminalPages(store: TaskStore, pageSize: number): AsyncIterable<TaskRecord[]> {
  if (store.scanNonTerminal) {
    yield* store.scanNonTerminal(pageSize);
    return;
  }
  const all = await store.listNonTerminal();
  for (let start = 0; start < all.length; start += pageSize) yield all.slice(start, start + pageSize);
}

/**
 * `store.putMany(records)`: one durable write for all of them; for a store without it one `put` per record, all at once (then not all
 * or none: each lands or fails on its own).
 */
export async function putRecords(store: TaskStore, records: readonly TaskRecord[]): Promise<void> {
  if (records.length === 0) return;
  if (store.putMany) return store.putMany(records);
  await Promise.all(records.map((record) => store.put(record)));
}

/** A record {@link TaskStore.quarantine} set aside. */
export interface QuarantinedRecord {
  taskId: string;
  /** Why it was set aside (for operators; never shown to clients). */
  reason: string;
  /** Epoch ms. */
  quarantinedAt: number;
  /**
   * Principal the record belonged to, when it could be told (from the
   * store's owner column or index, else parsed from the damaged bytes);
   * `undefined` when not: then no principal is told the id exists.
   */
  owner?: string;
  /** The record exactly as it was stored (JSON text, or whatever bytes a file held). */
  stored: string;
}

/** @deprecated the same class as {@link TaskRecordDamagedError} (one error for a damaged record, store to wire). */
export const TaskDamagedError = TaskRecordDamagedError;
/** @deprecated use {@link TaskRecordDamagedError}. */
export type TaskDamagedError = TaskRecordDamagedError;

/** Raised by {@link TaskStore.create} for an id that already exists. */
export class TaskExistsError extends Error {
  constructor(readonly taskId: string) {
    super(`Task ${taskId} already exists`);
    this.name = 'TaskExistsError';
  }
}

/**
 * Optional capability of a store shared by several instances (Postgres):
 * each instance holds a lease on the tasks it runs, and every write of a task
 * carries the fencing token the instance got when it created or claimed it.
 * Embedded stores (`memory`, `lowdb`, `sqlite`) do not implement it.
 */
export interface TaskOwnership {
  /** This instance's id (changes when the instance lost its lease and joined again). */
  readonly instanceId: string;
  /** How long a lease lasts without renewal. */
  readonly leaseMs: number;
  /** Registers this instance with a fresh lease (on start, and again under a new id after a lost lease). */
  join(): Promise<void>;
  /** Extends this instance's lease; resolves `false` when it had already expired (the instance must stop its tasks and `join` again). */
  renewLease(): Promise<boolean>;
  /** Marks this instance gone so survivors adopt its unfinished tasks at once (graceful stop). */
  leave(): Promise<void>;
  /** How many instances hold a live lease now, this one included (rate limits share their rates by it). Optional. */
  liveInstances?(): Promise<number>;
  /**
   * Atomically takes over every unfinished task whose owner's lease expired
   * (or that has no owner), each with a new fencing token: two instances
   * claiming at once never get the same task.
   */
  claimExpired(): Promise<TaskRecord[]>;
  /** Queues a command for the instance running `taskId` and wakes it; resolves `false` when the task is not running anywhere. */
  sendCommand(taskId: string, command: TaskCommand): Promise<boolean>;
  /** Takes (and removes) the commands queued for this instance, oldest first; re-addresses commands whose task moved. */
  takeCommands(): Promise<QueuedTaskCommand[]>;
  /** Calls `onChange` for every task write by any instance and `onCommand` when commands wait for this one; `onResync` after a lost connection came back (changes may have been missed). */
  subscribe(handlers: TaskFeedHandlers): () => void;
}

/** An operation routed to the instance running a task. */
export type TaskCommand = { type: 'update'; principal: string; responses: Record<string, unknown> } | { type: 'cancel'; principal: string };

export interface QueuedTaskCommand {
  taskId: string;
  command: TaskCommand;
}

/** One task write seen on the change feed: the receiver reads the row. */
export interface TaskChange {
  taskId: string;
  version: number;
  /** Instance that wrote it (`undefined` when unowned). */
  instanceId: string | undefined;
}

export interface TaskFeedHandlers {
  onChange(change: TaskChange): void;
  onCommand(): void;
  onResync(): void;
}

/** A write of a task refused because another instance claimed it since (stale fencing token). */
export class TaskFencedError extends Error {
  constructor(readonly taskId: string) {
    super(`Task ${taskId} was taken over by another instance: this write is refused (stale fencing token)`);
    this.name = 'TaskFencedError';
  }
}
