/**
 * Writes a task actor's state to the store after every change, driven by the
 * actor system's `inspect` hook (it also sees child-only changes, which
 * `actor.subscribe` misses: xstate-notes §1).
 *
 * At most one write per task is in flight; changes made meanwhile coalesce
 * into the next write (latest wins). After `stop()` nothing is written again
 * (I-9): a snapshot taken after `actor.stop()` would restore a task without
 * its worker.
 */
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { TaskFencedError, type TaskStore } from '../store/TaskStore.js';
import { recordOf, type TaskSnapshotLike } from '../tasks/project.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';

export interface PersisterOptions {
  store: TaskStore;
  machineVersion: number;
  /** Version of the record already stored (1 after create). */
  version: number;
  onError: (error: unknown, taskId: string) => void;
  /** Called after each record is stored (the supervisor evicts a task once its terminal record is). */
  onWritten?: (record: TaskRecord) => void;
  /** The store refused a write because another instance claimed the task (fencing): persisting has stopped. */
  onFenced?: (taskId: string) => void;
  /** Wait before retrying a failed write. */
  retryMs?: number;
}

export class Persister {
  private actor: AnyActorRef | undefined;
  private dirty = false;
  private inflight: Promise<void> | null = null;
  private stopped = false;
  private version: number;
  private lastWritten: string | undefined;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: PersisterOptions) {
    this.version = options.version;
  }

  /** The `inspect` option of the task actor. */
  readonly inspect = (event: InspectionEvent): void => {
    if (event.type === '@xstate.snapshot') this.kick();
  };

  /** Starts persisting `actor`; `initialJson` is what create already wrote. */
  attach(actor: AnyActorRef, initialJson?: string): void {
    this.actor = actor;
    this.lastWritten = initialJson;
  }

  /** The version of the last record handed to the store. */
  get currentVersion(): number {
    return this.version;
  }

  /** Resolves when every change seen so far is written (or persisting stopped). */
  async flushed(): Promise<void> {
    while (this.inflight) await this.inflight;
  }

  /** Never write again (I-9). A write already in flight completes. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
  }

  private kick(): void {
    if (this.stopped || !this.actor) return;
    this.dirty = true;
    if (this.inflight) return;
    // Cleared in finally(): a pump that ends synchronously must not leave a stale promise (xstate-notes §1).
    this.inflight = this.pump().finally(() => {
      this.inflight = null;
      if (this.dirty) this.kick();
    });
  }

  private async pump(): Promise<void> {
    while (this.dirty && !this.stopped && this.actor) {
      this.dirty = false;
      const snapshot = this.actor.getSnapshot() as TaskSnapshotLike & { status: string };
      if (snapshot.status === 'stopped') return;
      const record = recordOf(snapshot, this.actor.getPersistedSnapshot(), this.version + 1, this.options.machineVersion);
      const json = JSON.stringify({ ...record, version: 0 });
      if (json === this.lastWritten) continue;
      try {
        await this.options.store.put(record);
        this.version = record.version;
        this.lastWritten = json;
      } catch (error) {
        if (error instanceof TaskFencedError) {
          // Another instance runs this task now: never retry, stop running it here.
          this.stop();
          this.options.onFenced?.(record.taskId);
          return;
        }
        this.options.onError(error, record.taskId);
        this.retryLater();
        return;
      }
      this.options.onWritten?.(record);
    }
  }

  private retryLater(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.kick(), this.options.retryMs ?? 1000);
  }
}
