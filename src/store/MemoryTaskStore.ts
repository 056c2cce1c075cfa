/**
 * In-process {@link TaskStore}: a Map of deep copies. Not durable — a process
 * exit loses everything — so it is meant for tests, demos and deployments that
 * explicitly accept losing tasks on restart.
 */
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { isNonTerminal, selectExpired, selectListed } from './query.js';
import { mayReportDamaged } from '../tasks/storedOwner.js';
import { TaskDamagedError, TaskExistsError, type QuarantinedRecord, type TaskListQuery, type TaskStore } from './TaskStore.js';

// Every method implements the TaskStore port, whose callers expect a promise: `async` turns the
// synchronous throws (store not open, id taken, damaged) into rejections, so no method awaits.
/* eslint-disable @typescript-eslint/require-await -- see above: TaskStore port, throws must reject */

type State = 'new' | 'open' | 'closed';

/** Thrown inside {@link plainCopy} when a value is not plain data: the copy is left to `structuredClone`. */
const NOT_PLAIN = Symbol('not plain data');
/** Deeper than this, {@link plainCopy} gives up (a cycle, or data too deep to recurse on safely). */
const MAX_PLAIN_DEPTH = 64;

/**
 * A deep copy of plain data (primitives, arrays, objects whose prototype is
 * `Object.prototype` or `null`), equal to what `structuredClone` gives for
 * it: own enumerable keys in their order, `undefined` values kept. About 5×
 * cheaper than `structuredClone` on a task record: a read copies one per `tasks/get`
 * (issue 20 item 1), and a create and each status change one each on the
 * way in (item 2: `structuredClone` of the snapshot was ~8% of a memory-store
 * server's CPU at c=64). Anything else throws {@link NOT_PLAIN}.
 */
function plainCopy(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null) {
    if (typeof value === 'function' || typeof value === 'symbol') throw NOT_PLAIN;
    return value;
  }
  if (depth > MAX_PLAIN_DEPTH) throw NOT_PLAIN;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) throw NOT_PLAIN;
    const out: unknown[] = [];
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) throw NOT_PLAIN; // a hole: structuredClone keeps it
      out.push(plainCopy(value[i], depth + 1));
    }
    return out;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw NOT_PLAIN;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    // Assigning `__proto__` would set the copy's prototype instead of an own key (JSON.parse makes it one).
    if (key === '__proto__') throw NOT_PLAIN;
    out[key] = plainCopy((value as Record<string, unknown>)[key], depth + 1);
  }
  return out;
}

/** A copy of a stored record: {@link plainCopy}, or `structuredClone` for anything that is not plain data. */
function copyOf(record: TaskRecord): TaskRecord {
  try {
    return plainCopy(record, 0) as TaskRecord;
  } catch (error) {
    if (error !== NOT_PLAIN) throw error;
    return structuredClone(record);
  }
}

/**
 * A {@link TaskStore} kept in memory. Records are copied ({@link copyOf}:
 * what `structuredClone` gives) on the way in and on the way out, so neither
 * the caller that wrote a record nor the caller that read it can change what
 * is stored (the same isolation a file-backed store gives for free).
 */
export class MemoryTaskStore implements TaskStore {
  readonly #records = new Map<string, TaskRecord>();
  readonly #quarantined = new Map<string, QuarantinedRecord>();
  #state: State = 'new';

  /** Marks the store usable. Calling it twice is an error. */
  async open(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`memory task store: open() called on a store that is ${this.#state}`);
    this.#state = 'open';
  }

  /** Marks the store closed; later calls reject. The records are dropped. */
  async close(): Promise<void> {
    this.#state = 'closed';
    this.#records.clear();
    this.#quarantined.clear();
  }

  /** Stores a copy of `record`; rejects with {@link TaskExistsError} when the id is taken. */
  async create(record: TaskRecord): Promise<void> {
    this.#assertOpen();
    if (this.#records.has(record.taskId)) throw new TaskExistsError(record.taskId);
    this.#records.set(record.taskId, copyOf(record));
  }

  /** Replaces the stored copy when `record.version` is higher; otherwise (or for an unknown id) does nothing. */
  async put(record: TaskRecord): Promise<void> {
    this.#assertOpen();
    const stored = this.#records.get(record.taskId);
    // Unknown id: the task was purged, and a late write must not resurrect it.
    if (stored === undefined || record.version <= stored.version) return;
    this.#records.set(record.taskId, copyOf(record));
  }

  /** {@link put} for each record, all or none: every copy is made before any is stored. */
  async putMany(records: readonly TaskRecord[]): Promise<void> {
    this.#assertOpen();
    const copies = records.map(copyOf);
    for (const record of copies) {
      const stored = this.#records.get(record.taskId);
      if (stored !== undefined && record.version > stored.version) this.#records.set(record.taskId, record);
    }
  }

  /** A copy of the stored record, or `undefined`. */
  async get(taskId: string, owner?: string): Promise<TaskRecord | undefined> {
    this.#assertOpen();
    const stored = this.#records.get(taskId);
    const setAside = stored === undefined ? this.#quarantined.get(taskId) : undefined;
    // Damaged only to its owner; any other principal gets what an unknown id gets (I-7).
    if (setAside !== undefined && mayReportDamaged(setAside.owner, owner)) throw new TaskDamagedError(taskId, setAside.reason);
    // Issue 12.6: another owner's record is not copied.
    if (stored === undefined || (owner !== undefined && stored.owner !== owner)) return undefined;
    return copyOf(stored);
  }

  /** Removes a task; `true` when it existed. */
  async delete(taskId: string): Promise<boolean> {
    this.#assertOpen();
    return this.#records.delete(taskId);
  }

  /** Copies of every `working` / `input_required` record. */
  async listNonTerminal(): Promise<TaskRecord[]> {
    this.#assertOpen();
    const out: TaskRecord[] = [];
    for (const record of this.#records.values()) if (isNonTerminal(record.status)) out.push(copyOf(record));
    return out;
  }

  /**
   * The same records in pages of at most `pageSize`: the unfinished ids are
   * taken when the scan starts, each record is copied as its page is consumed
   * (one that finished meanwhile is skipped).
   */
  async *scanNonTerminal(pageSize: number): AsyncIterable<TaskRecord[]> {
    this.#assertOpen();
    const size = Math.max(1, Math.floor(pageSize));
    const ids: string[] = [];
    for (const record of this.#records.values()) if (isNonTerminal(record.status)) ids.push(record.taskId);
    for (let start = 0; start < ids.length; start += size) {
      const page: TaskRecord[] = [];
      for (const taskId of ids.slice(start, start + size)) {
        const record = this.#records.get(taskId);
        if (record !== undefined && isNonTerminal(record.status)) page.push(copyOf(record));
      }
      if (page.length > 0) yield page;
    }
  }

  /** Ids whose `createdAt + ttlMs <= now`, most overdue first, at most `limit`. */
  async listExpired(now: number, limit: number): Promise<string[]> {
    this.#assertOpen();
    return selectExpired(this.#records.values(), now, limit);
  }

  /** Copies of the matching records, newest first. */
  async list(query: TaskListQuery = {}): Promise<TaskRecord[]> {
    this.#assertOpen();
    return selectListed(this.#records.values(), query).map(copyOf);
  }

  /** Moves a record aside (kept, never served). */
  async quarantine(taskId: string, reason: string): Promise<boolean> {
    this.#assertOpen();
    const stored = this.#records.get(taskId);
    if (stored === undefined) return false;
    this.#quarantined.set(taskId, {
      taskId,
      reason,
      quarantinedAt: Date.now(),
      stored: JSON.stringify(stored),
      ...(typeof stored.owner === 'string' ? { owner: stored.owner } : {}),
    });
    this.#records.delete(taskId);
    return true;
  }

  async listQuarantined(): Promise<QuarantinedRecord[]> {
    this.#assertOpen();
    return [...this.#quarantined.values()].map((entry) => ({ ...entry }));
  }

  #assertOpen(): void {
    if (this.#state === 'closed') throw new Error('store is closed (memory task store)');
    if (this.#state === 'new') throw new Error('store is not open: call open() first (memory task store)');
  }
}
