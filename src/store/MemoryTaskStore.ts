/**
 * In-process {@link TaskStore}: a Map of deep copies. Not durable — a process
 * exit loses everything — so it is meant for tests, demos and deployments that
 * explicitly accept losing tasks on restart.
 */
import { isSharedJson } from '../core/sharedJson.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { KitTaskStore, type ListSelection, type OnCorrupt, type SetAsideNote } from './kit/KitTaskStore.js';
import type { StoredRecord } from './kit/storedRecord.js';
import { isNonTerminal, selectExpired, selectListed } from './query.js';
import { TaskExistsError, type QuarantinedRecord } from './TaskStore.js';

// The kit's hooks return promises (the port's callers expect them): `async` turns a throw (id taken) into a
// rejection, so these methods need not await.
/* eslint-disable @typescript-eslint/require-await -- see above */

/** Thrown inside {@link plainCopy} when a value is not plain data: the copy is left to `structuredClone`. */
const NOT_PLAIN = Symbol('not plain data');
/** Deeper than this, {@link plainCopy} gives up (a cycle, or data too deep to recurse on safely). */
const MAX_PLAIN_DEPTH = 64;

/**
 * A deep copy of plain data (primitives, arrays, objects whose prototype is
 * `Object.prototype` or `null`), equal to what `structuredClone` gives for
 * it: own enumerable keys in their order, `undefined` values kept. About 5×
 * cheaper than `structuredClone` on a task record: a read copies one per
 * `tasks/get`, and a create and each status change one each on the way in
 * (`structuredClone` of the snapshot was ~8% of a memory-store server's CPU
 * at c=64). Anything else throws {@link NOT_PLAIN}.
 */
function plainCopy(value: unknown, depth: number, share: boolean): unknown {
  if (typeof value !== 'object' || value === null) {
    if (typeof value === 'function' || typeof value === 'symbol') throw NOT_PLAIN;
    return value;
  }
  if (share && isSharedJson(value)) return value;
  if (depth > MAX_PLAIN_DEPTH) throw NOT_PLAIN;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) throw NOT_PLAIN;
    const out: unknown[] = [];
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) throw NOT_PLAIN; // a hole: structuredClone keeps it
      out.push(plainCopy(value[i], depth + 1, share));
    }
    return out;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw NOT_PLAIN;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    // Assigning `__proto__` would set the copy's prototype instead of an own key (JSON.parse makes it one).
    if (key === '__proto__') throw NOT_PLAIN;
    out[key] = plainCopy((value as Record<string, unknown>)[key], depth + 1, share);
  }
  return out;
}

/**
 * A copy of a record: {@link plainCopy}, or `structuredClone` for anything that is not plain data.
 * `share` (the way in): parts frozen to their leaves ({@link isSharedJson}: a context's empty collections,
 * interned client capabilities) are kept as they are, not copied — nobody can change them, and a live
 * task's stored copy then costs only what is its own. A read copies everything: the reader's copy is its own.
 */
function copyOf(record: TaskRecord, share = false): TaskRecord {
  try {
    return plainCopy(record, 0, share) as TaskRecord;
  } catch (error) {
    if (error !== NOT_PLAIN) throw error;
    return structuredClone(record);
  }
}

/** Options of {@link MemoryTaskStore}. */
export interface MemoryTaskStoreOptions {
  /** Called once for each stored record found damaged (then set aside). Default: one line on stderr. */
  onCorrupt?: (taskId: string, error: Error) => void;
}

/**
 * A {@link TaskStore} kept in memory. Records are copied ({@link copyOf}:
 * what `structuredClone` gives) on the way in and on the way out, so neither
 * the caller that wrote a record nor the caller that read it can change what
 * is stored (the same isolation a file-backed store gives for free).
 * `close()` drops the records.
 */
export class MemoryTaskStore extends KitTaskStore {
  readonly #records = new Map<string, TaskRecord>();
  readonly #quarantined = new Map<string, QuarantinedRecord>();

  constructor(options: MemoryTaskStoreOptions = {}) {
    super(options.onCorrupt satisfies OnCorrupt | undefined);
  }

  protected get storeName(): string {
    return 'memory task store';
  }

  protected get ownsData(): boolean {
    return true;
  }

  protected async openStorage(): Promise<void> {}

  protected async closeStorage(): Promise<void> {
    this.#records.clear();
    this.#quarantined.clear();
  }

  protected async createStored(record: TaskRecord): Promise<void> {
    if (this.#records.has(record.taskId) || this.#quarantined.has(record.taskId)) throw new TaskExistsError(record.taskId);
    this.#records.set(record.taskId, copyOf(record, true));
  }

  protected async putStored(record: TaskRecord): Promise<void> {
    const stored = this.#records.get(record.taskId);
    // Unknown id: the task was purged, and a late write must not resurrect it.
    if (stored === undefined || record.version <= stored.version) return;
    this.#records.set(record.taskId, copyOf(record, true));
  }

  /** All or none: every copy is made before any is stored. */
  protected async putManyStored(records: readonly TaskRecord[]): Promise<void> {
    const copies = records.map((record) => copyOf(record, true));
    for (const record of copies) {
      const stored = this.#records.get(record.taskId);
      if (stored !== undefined && record.version > stored.version) this.#records.set(record.taskId, record);
    }
  }

  protected async readStored(taskId: string, owner: string | undefined): Promise<StoredRecord | undefined> {
    const stored = this.#records.get(taskId);
    // Another owner's record is not copied.
    if (stored === undefined || (owner !== undefined && stored.owner !== owner)) return undefined;
    return { taskId, value: copyOf(stored) };
  }

  protected async findSetAside(taskId: string): Promise<SetAsideNote | undefined> {
    return this.#quarantined.get(taskId);
  }

  protected async deleteStored(taskId: string): Promise<boolean> {
    return this.#records.delete(taskId);
  }

  protected async readNonTerminal(): Promise<StoredRecord[]> {
    const out: StoredRecord[] = [];
    for (const record of this.#records.values())
      if (isNonTerminal(record.status)) out.push({ taskId: record.taskId, value: copyOf(record) });
    return out;
  }

  /** The unfinished ids are taken when the scan starts; each record is copied as its page is consumed. */
  protected async *scanStored(pageSize: number): AsyncIterable<StoredRecord[]> {
    const ids: string[] = [];
    for (const record of this.#records.values()) if (isNonTerminal(record.status)) ids.push(record.taskId);
    for (let start = 0; start < ids.length; start += pageSize) {
      const page: StoredRecord[] = [];
      for (const taskId of ids.slice(start, start + pageSize)) {
        const record = this.#records.get(taskId);
        if (record !== undefined) page.push({ taskId, value: copyOf(record) });
      }
      yield page;
    }
  }

  protected async expiredStored(now: number, limit: number): Promise<string[]> {
    return selectExpired(this.#records.values(), now, limit);
  }

  protected async listStored({ owner, statuses, limit }: ListSelection): Promise<StoredRecord[]> {
    const query = { ...(owner !== undefined ? { owner } : {}), ...(statuses !== undefined ? { status: statuses } : {}), limit };
    return selectListed(this.#records.values(), query).map((record) => ({ taskId: record.taskId, value: copyOf(record) }));
  }

  /** Moves a record aside (kept, never served). */
  protected async quarantineStored(taskId: string, reason: string): Promise<boolean> {
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

  protected async listSetAside(): Promise<QuarantinedRecord[]> {
    return [...this.#quarantined.values()].map((entry) => ({ ...entry }));
  }
}
