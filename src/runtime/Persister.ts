/**
 * Writes a task actor's state to the store after every change, driven by a
 * subscription to the actor (the task machine has no children, so every
 * change is a root snapshot: xstate-notes §1; an `inspect` hook would make
 * xstate copy and deliver every event, action and microstep of every task
 * too), and publishes each record once it is stored: the one durable-publish
 * path, so no reader sees a record before it is durable. What clients see of a live task (`tasks/get`, listen, the runtime API)
 * is {@link Persister.durable}, never the actor's unwritten state (I-1, I-2).
 *
 * At most one write per task is in flight; changes made meanwhile coalesce
 * into the next write (latest wins). A failed write is retried on a timer, and
 * {@link Persister.flushed} waits for that retry too. After `stop()` nothing is
 * written again (I-9): a snapshot taken after `actor.stop()` would restore a
 * task without its run.
 */
import type { AnyActorRef } from 'xstate';
import { TaskFencedError, type TaskStore } from '../store/TaskStore.js';
import { jsonEqual } from '../core/json.js';
import { recordOf, type TaskSnapshotLike } from '../tasks/project.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';

export interface PersisterOptions {
  store: TaskStore;
  machineVersion: number;
  onError: (error: unknown, taskId: string) => void;
  /** Called after each record is stored: the only place a change becomes visible. */
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
  /** Highest version handed to the store, written or not: a retry never reuses one (a timed-out write may still land). */
  private attempted: number;
  private durableRecord: TaskRecord | undefined;
  /**
   * The snapshot objects of the actor tree (the task, its children, theirs)
   * that {@link durableRecord} was projected from, or found equal to. The
   * record is a function of them (xstate replaces a snapshot object on every
   * change, never edits one): while they are the same objects there is
   * nothing to write, found without projecting and comparing a record (the
   * two snapshot events of every task's start).
   */
  private projectedFrom: unknown;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Callers of {@link flushed} waiting for the store to catch up; made on first use (most tasks never wait). */
  private waiters: Array<() => void> | undefined;

  /**
   * `options` may be shared by every persister (the runtime's are: one object, not one per live task);
   * `version` is the version of the record already stored (1 after create).
   */
  constructor(
    private readonly options: PersisterOptions,
    version: number,
  ) {
    this.attempted = version;
  }

  /*
   * The persister is its own observer of the actor (`next`, `error`): no observer literal and no bound
   * `changed` closure per live task.
   */
  /** Observer of the actor: its snapshot changed. */
  next(): void {
    this.kick();
  }

  /** Observer of the actor: it failed (its error snapshot is written like any other change, as `inspect` saw it). */
  error(): void {
    this.kick();
  }

  /**
   * Starts persisting `actor`; `stored` is the record create (or recovery)
   * found stored. `projected`: `stored` was projected from the actor as it is
   * now (a new task, not yet started), so an unchanged actor needs no write.
   * `subscribe`: the persister subscribes to the actor itself (before
   * anything else does, so a change is queued for writing before others react
   * to it); `false` when the caller's observer, subscribed first, calls
   * {@link next} and {@link error} for it (the task actors': one observer each).
   */
  attach(actor: AnyActorRef, stored: TaskRecord, projected = false, subscribe = true): void {
    this.actor = actor;
    this.durableRecord = stored;
    this.projectedFrom = projected ? snapshotsOf(actor) : undefined;
    if (subscribe) actor.subscribe(this);
  }

  /** The last record the store confirmed: what clients may see of the task. */
  get durable(): TaskRecord | undefined {
    return this.durableRecord;
  }

  /**
   * Resolves when every change seen so far is stored, including one waiting
   * on a retry timer after a failed write (or when persisting stopped).
   */
  flushed(): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => (this.waiters ??= []).push(resolve));
  }

  /** Resolves when the write in flight (if any) has settled, successfully or not; never waits for a retry. */
  async settled(): Promise<void> {
    while (this.inflight) await this.inflight;
  }

  /** Never write again (I-9). A write already in flight completes. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.wake();
  }

  /** Nothing to write: no change unwritten, no write in flight or waiting to be retried (or persisting stopped). */
  get idle(): boolean {
    return this.stopped || (!this.dirty && !this.inflight && this.retryTimer === undefined);
  }

  private wake(): void {
    if (!this.idle || !this.waiters) return;
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  private kick(): void {
    if (this.stopped || !this.actor) return;
    this.dirty = true;
    // A change made while a retry waits is written by that retry (no write storm on a full disk).
    if (this.inflight || this.retryTimer !== undefined) return;
    // Cleared in finally(): a pump that ends synchronously must not leave a stale promise (xstate-notes §1).
    this.inflight = this.pump().finally(() => {
      this.inflight = null;
      if (this.dirty && this.retryTimer === undefined) this.kick();
      else this.wake();
    });
  }

  private async pump(): Promise<void> {
    while (this.dirty && !this.stopped && this.actor) {
      this.dirty = false;
      const snapshot = this.actor.getSnapshot() as TaskSnapshotLike & { status: string };
      if (snapshot.status === 'stopped') return;
      const actor = this.actor;
      const tree = snapshotsOf(actor);
      if (this.projectedFrom && sameObjects(tree, this.projectedFrom)) continue;
      // Lazily: the final record keeps no snapshot (the walk cost ~2 % of a create's CPU).
      const record = recordOf(snapshot, () => actor.getPersistedSnapshot(), this.attempted + 1, this.options.machineVersion);
      // Compared with the record last stored, not a JSON copy of it: no ~1 KB string kept per live task.
      if (this.durableRecord && sameRecordContent(record, this.durableRecord)) {
        this.projectedFrom = tree;
        continue;
      }
      this.attempted = record.version;
      try {
        await this.options.store.put(record);
      } catch (error) {
        if (error instanceof TaskFencedError) {
          // Another instance runs this task now: never retry, stop running it here.
          this.stop();
          this.options.onFenced?.(record.taskId);
          return;
        }
        this.options.onError(error, record.taskId);
        // The change is still unwritten: flushed() keeps waiting until a retry stores it.
        this.dirty = true;
        this.retryLater();
        return;
      }
      this.durableRecord = record;
      this.projectedFrom = tree;
      this.options.onWritten?.(record);
    }
  }

  private retryLater(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.kick();
    }, this.options.retryMs ?? 1000);
  }
}

/**
 * The snapshot objects of `actor` and of its children, depth first: what its persisted snapshot is made of.
 * An actor without children (every task actor: the machine invokes none) gives its snapshot alone, not a
 * one-element array: a live task keeps it as {@link Persister.projectedFrom}.
 */
function snapshotsOf(actor: AnyActorRef): unknown {
  const root = actor.getSnapshot() as { children?: Record<string, AnyActorRef | undefined> };
  if (!hasChild(root.children)) return root;
  const out: unknown[] = [];
  const visit = (ref: AnyActorRef): void => {
    const snapshot = ref.getSnapshot() as { children?: Record<string, AnyActorRef | undefined> };
    out.push(snapshot);
    const children = snapshot.children;
    if (children) for (const id in children) if (children[id]) visit(children[id]);
  };
  visit(actor);
  return out;
}

function hasChild(children: Record<string, AnyActorRef | undefined> | undefined): boolean {
  if (children) for (const id in children) if (children[id]) return true;
  return false;
}

/** Whether two results of {@link snapshotsOf} are the same objects (a snapshot is never an array). */
function sameObjects(a: unknown, b: unknown): boolean {
  if (!Array.isArray(a) || !Array.isArray(b)) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Whether two records hold the same JSON apart from their version: writing `next` would change nothing. */
export function sameRecordContent(next: TaskRecord, written: TaskRecord): boolean {
  return jsonEqual({ ...next, version: 0 }, { ...written, version: 0 });
}
