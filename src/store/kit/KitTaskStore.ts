/**
 * The plumbing every built-in {@link TaskStore} shares, so a store holds only
 * its own SQL or its own file layout:
 *
 * - the lifecycle (`StoreLifecycle`): one open, one close, every call in
 *   between asserted open; after `close()` nothing is written (I-9);
 * - the id guard (`taskIds.ts`): an id the store cannot hold is unknown to
 *   reads, deletes and puts, and refused by `create`;
 * - the one path for damaged records: every record read is checked
 *   (`storedRecord.ts`: it parses, has a record's shape and the id it was
 *   stored under); a damaged one is reported once through `onCorrupt(taskId,
 *   error)`, set aside with `quarantine` when this store may write its data,
 *   skipped by lists and recovery, and answered by `get` with
 *   {@link TaskRecordDamagedError} — to its owner only (I-7, T-14);
 * - the order and limits of `list` and `listExpired` (`query.ts`).
 *
 * Group commit is `GroupCommit`; decorators are `ForwardingTaskStore`.
 */
import { TaskRecordDamagedError } from '../../core/errors.js';
import type { TaskStatus } from '../../../machines/task/index.js';
import type { TaskRecord } from '../../tasks/TaskRecord.js';
import { mayReportDamaged } from '../../tasks/storedOwner.js';
import { compareNewestFirst, isNonTerminal, normalizeLimit } from '../query.js';
import type { QuarantinedRecord, TaskListQuery, TaskStore } from '../TaskStore.js';
import { StoreLifecycle } from './StoreLifecycle.js';
import { checkStoredRecord, type CheckedRecord, type StoredRecord } from './storedRecord.js';
import { invalidTaskIdReason } from './taskIds.js';

/** Called once per damaged record a store meets: its task id, and what is wrong with it (for operators). */
export type OnCorrupt = (taskId: string, error: Error) => void;

/** A `list` query as a store runs it: a positive limit (`Infinity`: all), statuses deduplicated and not empty. */
export interface ListSelection {
  owner: string | undefined;
  statuses: readonly TaskStatus[] | undefined;
  limit: number;
}

/** Why a record was set aside, and whose it was when that could be told. */
export interface SetAsideNote {
  reason: string;
  owner?: string | null | undefined;
}

export abstract class KitTaskStore implements TaskStore {
  readonly #lifecycle = new StoreLifecycle(() => this.storeName);
  readonly #onCorrupt: OnCorrupt;
  /** Damaged ids reported so far: each is reported once, and set aside once, however often it is met. */
  readonly #reported = new Map<string, Promise<boolean>>();

  protected constructor(onCorrupt: OnCorrupt | undefined) {
    this.#onCorrupt =
      onCorrupt ??
      ((taskId, error) =>
        console.error(
          `taskvisor: task ${taskId}: damaged record in ${this.storeName} ${this.ownsData ? 'set aside (quarantined)' : 'skipped'}: ${error.message}`,
        ));
  }

  /** The store as messages name it (operators only: may hold a path, never a password). */
  protected abstract get storeName(): string;
  /** Whether this store may write its data (false for a read-only view): only then are damaged records moved. */
  protected abstract get ownsData(): boolean;

  protected abstract openStorage(): Promise<void>;
  /** Waits for accepted writes, then releases everything; may run twice (a close during open). */
  protected abstract closeStorage(): Promise<void>;
  protected abstract createStored(record: TaskRecord): Promise<void>;
  protected abstract putStored(record: TaskRecord): Promise<void>;
  protected abstract putManyStored(records: readonly TaskRecord[]): Promise<void>;
  /** The stored bytes of `taskId`; with `owner`, `undefined` for another owner's record (never read nor parsed: I-7). */
  protected abstract readStored(taskId: string, owner: string | undefined): Promise<StoredRecord | undefined>;
  protected abstract findSetAside(taskId: string): Promise<SetAsideNote | undefined>;
  protected abstract deleteStored(taskId: string): Promise<boolean>;
  protected abstract readNonTerminal(): Promise<readonly StoredRecord[]>;
  protected abstract scanStored(pageSize: number): AsyncIterable<readonly StoredRecord[]>;
  protected abstract expiredStored(now: number, limit: number): Promise<string[]>;
  protected abstract listStored(selection: ListSelection): Promise<readonly StoredRecord[]>;
  protected abstract quarantineStored(taskId: string, reason: string): Promise<boolean>;
  protected abstract listSetAside(): Promise<QuarantinedRecord[]>;

  /** Why this store cannot hold `taskId`, or `undefined`. */
  protected idProblem(taskId: unknown): string | undefined {
    return invalidTaskIdReason(taskId);
  }

  protected get state(): StoreLifecycle['state'] {
    return this.#lifecycle.state;
  }

  protected assertOpen(): void {
    this.#lifecycle.assertOpen();
  }

  async open(): Promise<void> {
    this.#lifecycle.beginOpen();
    try {
      await this.openStorage();
    } catch (error) {
      this.#lifecycle.beginClose();
      throw error;
    }
    // close() came while opening: what the open made is released again.
    if (!this.#lifecycle.finishOpen()) await this.closeStorage();
  }

  async close(): Promise<void> {
    if (!this.#lifecycle.beginClose()) return;
    await this.closeStorage();
    await Promise.allSettled(this.#reported.values());
  }

  async create(record: TaskRecord): Promise<void> {
    this.assertOpen();
    const reason = this.idProblem(record.taskId);
    if (reason !== undefined) throw new Error(`cannot create task in ${this.storeName}: ${reason}`);
    return this.createStored(record);
  }

  async put(record: TaskRecord): Promise<void> {
    this.assertOpen();
    // Unknown (an id no store holds): a late write of a purged task is ignored as well.
    if (this.idProblem(record.taskId) !== undefined) return;
    return this.putStored(record);
  }

  async putMany(records: readonly TaskRecord[]): Promise<void> {
    this.assertOpen();
    const storable = records.filter((record) => this.idProblem(record.taskId) === undefined);
    if (storable.length === 0) return;
    return this.putManyStored(storable);
  }

  async get(taskId: string, owner?: string): Promise<TaskRecord | undefined> {
    this.assertOpen();
    if (this.idProblem(taskId) !== undefined) return undefined;
    const stored = await this.readStored(taskId, owner);
    if (stored === undefined) {
      const note = await this.findSetAside(taskId);
      // Damaged only to its owner; any other principal gets what an unknown id gets (I-7).
      if (note !== undefined && mayReportDamaged(note.owner, owner)) throw new TaskRecordDamagedError(taskId, note.reason);
      return undefined;
    }
    const checked = checkStoredRecord(stored);
    if ('record' in checked) return checked.record;
    await this.#setAside(taskId, checked.problem);
    throw new TaskRecordDamagedError(taskId, checked.problem);
  }

  async delete(taskId: string): Promise<boolean> {
    this.assertOpen();
    if (this.idProblem(taskId) !== undefined) return false;
    return this.deleteStored(taskId);
  }

  async listNonTerminal(): Promise<TaskRecord[]> {
    this.assertOpen();
    return this.recordsOf(await this.readNonTerminal());
  }

  async *scanNonTerminal(pageSize: number): AsyncIterable<TaskRecord[]> {
    this.assertOpen();
    for await (const page of this.scanStored(Math.max(1, Math.floor(pageSize)))) {
      this.assertOpen();
      // A task that finished while the scan ran is not unfinished any more.
      const records = (await this.recordsOf(page)).filter((record) => isNonTerminal(record.status));
      if (records.length > 0) yield records;
    }
  }

  async listExpired(now: number, limit: number): Promise<string[]> {
    this.assertOpen();
    const max = normalizeLimit(limit);
    return max === 0 ? [] : this.expiredStored(now, max);
  }

  async list(query: TaskListQuery = {}): Promise<TaskRecord[]> {
    this.assertOpen();
    const limit = normalizeLimit(query.limit);
    const statuses = query.status === undefined ? undefined : [...new Set(query.status)];
    if (limit === 0 || statuses?.length === 0) return [];
    const records = await this.recordsOf(await this.listStored({ owner: query.owner, statuses, limit }));
    // Databases order ids by UTF-8 bytes, the others by UTF-16 units: sorted here so every store answers alike.
    return records.sort(compareNewestFirst);
  }

  async quarantine(taskId: string, reason: string): Promise<boolean> {
    this.assertOpen();
    if (this.idProblem(taskId) !== undefined) return false;
    return this.quarantineStored(taskId, reason);
  }

  async listQuarantined(): Promise<QuarantinedRecord[]> {
    this.assertOpen();
    return this.listSetAside();
  }

  /** The records that pass the check, in order; each damaged one is set aside (and waited for) instead. */
  protected async recordsOf(stored: readonly StoredRecord[]): Promise<TaskRecord[]> {
    const records: TaskRecord[] = [];
    const settingAside: Promise<boolean>[] = [];
    for (const item of stored) {
      const checked: CheckedRecord = checkStoredRecord(item);
      if ('record' in checked) records.push(checked.record);
      else settingAside.push(this.#setAside(item.taskId, checked.problem));
    }
    if (settingAside.length > 0) await Promise.all(settingAside);
    return records;
  }

  /** A record found damaged outside the port's reads (a store's own scan at open): reported and set aside like any other. */
  protected damaged(taskId: string, problem: string, setAside?: () => Promise<boolean>): Promise<boolean> {
    return this.#setAside(taskId, problem, setAside);
  }

  /** Reports where a store's own data (not a record: a journal file) is damaged. */
  protected reportCorrupt(where: string, error: Error): void {
    this.#onCorrupt(where, error);
  }

  /**
   * Reports `taskId` once and, when this store owns its data and is not
   * closed (I-9), moves it to quarantine: kept as stored, never deleted. A
   * read-only view only reports it. Resolves whether it was moved; never
   * rejects: a failed move is reported too.
   */
  #setAside(taskId: string, problem: string, setAside?: () => Promise<boolean>): Promise<boolean> {
    const known = this.#reported.get(taskId);
    if (known !== undefined) return known;
    this.#onCorrupt(taskId, new Error(problem));
    const move = setAside ?? (() => this.quarantineStored(taskId, problem));
    const moving =
      !this.ownsData || this.state === 'closed'
        ? Promise.resolve(false)
        : move().catch((failure: unknown) => {
            const message = failure instanceof Error ? failure.message : String(failure);
            this.#onCorrupt(taskId, new Error(`could not quarantine it: ${message}`));
            return false;
          });
    this.#reported.set(taskId, moving);
    // Once moved it is answered from the quarantine; a read-only view keeps it in the map so it is reported once.
    if (this.ownsData) void moving.then(() => this.#reported.delete(taskId));
    return moving;
  }
}
