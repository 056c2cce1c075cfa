/**
 * The live task registry: the unfinished tasks whose actors run in this
 * process, by task id, each holding its owner's admission slot; and the
 * passivated ones: unfinished tasks of this process whose
 * actors were stopped while they waited for input or slept (`ctx.sleep`), kept as a compact entry
 * that still holds the slot (they count against their owner's limit exactly
 * as a live task does).
 *
 * Task actors are independent root actors in this registry, never children of
 * one parent: spawn cost grows with the number of siblings (xstate-notes §5).
 * A task leaves through {@link TaskRegistry.remove} only, whichever way it
 * leaves (finished, relinquished, server stopping): its persister stops
 * first (nothing is written again, I-9), then its actor, then its slot is
 * given back.
 */
import { visibleKey } from '../tasks/project.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { AdmissionSlots, type Slot } from './AdmissionSlots.js';
import type { TaskActor, TaskHandle } from './TaskActorFactory.js';
import { stopTaskActor } from './TaskActorSystem.js';

/**
 * A task of this process whose actor was stopped while it waited for input or slept:
 * its record in the store is all there is of it. Kept small
 * (at most a few hundred bytes per task).
 */
export interface PassivatedTask {
  readonly owner: string;
  /** The owner's claim, kept while the task is passivated (AdmissionSlots). */
  readonly slot: Slot;
  /** Epoch ms its ttl runs out at (`null`: never): the deadline timer is not running for it. */
  readonly deadline: number | null;
  /** Epoch ms its handler's sleep ends at (`ctx.sleep`), when it is woken (rehydrated); `null`: it sleeps not. */
  readonly wakeAt: number | null;
  /** The events being applied to it, one at a time in order (TaskPassivation). */
  queue?: Promise<void> | undefined;
}

/** One task running in this process. */
export interface LiveTask extends TaskHandle {
  readonly taskId: string;
  /** The owner's claim on one live task (released when the task leaves). */
  readonly slot: Slot;
  /** `visibleKey` of the last record published: listeners see visible changes only. */
  lastVisible: string;
  /** Runs out when the task has only waited for input long enough to be passivated (TaskPassivation). */
  idleTimer?: NodeJS.Timeout | undefined;
}

export class TaskRegistry {
  private readonly live = new Map<string, LiveTask>();
  private readonly passivatedTasks = new Map<string, PassivatedTask>();
  /** Unfinished tasks per owner: live actors plus creations under way (so concurrent creates cannot overshoot). */
  readonly slots: AdmissionSlots;

  constructor(maxLiveTasksPerPrincipal: number) {
    this.slots = new AdmissionSlots(maxLiveTasksPerPrincipal);
  }

  /** Number of task actors in memory (non-terminal tasks only, I-10). */
  get size(): number {
    return this.live.size;
  }

  /** Number of passivated tasks (no actor in memory). */
  get passivatedSize(): number {
    return this.passivatedTasks.size;
  }

  /** Whether the task is this process's: live or passivated (recovery, the reaper and cluster routing leave it alone). */
  has(taskId: string): boolean {
    return this.live.has(taskId) || this.passivatedTasks.has(taskId);
  }

  get(taskId: string): LiveTask | undefined {
    return this.live.get(taskId);
  }

  /** The live task if `principal` owns it; another principal's task is not found here (I-7). */
  owned(taskId: string, principal: string): LiveTask | undefined {
    const live = this.live.get(taskId);
    return live && ownerOf(live.actor) === principal ? live : undefined;
  }

  /** The passivated task if `principal` owns it (I-7). */
  passivatedOwned(taskId: string, principal: string): PassivatedTask | undefined {
    const entry = this.passivatedTasks.get(taskId);
    return entry && entry.owner === principal ? entry : undefined;
  }

  passivated(taskId: string): PassivatedTask | undefined {
    return this.passivatedTasks.get(taskId);
  }

  /** The passivated tasks by id (a live view: entries may leave while iterating, never added by it). */
  allPassivated(): IterableIterator<[string, PassivatedTask]> {
    return this.passivatedTasks.entries();
  }

  /**
   * Stops a live task's actor and keeps only its passivated entry: persister
   * stopped first (I-9), then the actor (its run is aborted); the
   * slot stays taken.
   */
  passivate(live: LiveTask, deadline: number | null, wakeAt: number | null = null): PassivatedTask {
    clearTimeout(live.idleTimer);
    live.persister.stop();
    this.live.delete(live.taskId);
    stopTaskActor(live.actor);
    const entry: PassivatedTask = { owner: live.slot.principal, slot: live.slot, deadline, wakeAt };
    this.passivatedTasks.set(live.taskId, entry);
    return entry;
  }

  /** Keeps a stored task of this process passivated without ever building its actor (recovered while it waited for input or slept). */
  hold(taskId: string, entry: PassivatedTask): void {
    this.passivatedTasks.set(taskId, entry);
  }

  /** Forgets a passivated entry without releasing its slot (the caller hands it on or releases it). */
  unpassivate(taskId: string): PassivatedTask | undefined {
    const entry = this.passivatedTasks.get(taskId);
    this.passivatedTasks.delete(taskId);
    return entry;
  }

  /** The ids of every task of this process, live or passivated (a snapshot). */
  ids(): string[] {
    return [...this.live.keys(), ...this.passivatedTasks.keys()];
  }

  /** A snapshot of the live tasks (safe to iterate while tasks leave). */
  all(): LiveTask[] {
    return [...this.live.values()];
  }

  /** Registers a built task whose record (`stored`) is in the store; `slot` is its owner's claim. */
  add(handle: TaskHandle, stored: TaskRecord, slot: Slot): LiveTask {
    // A literal with every member, not `{ ...handle, … }`: V8 gives a spread copy made in optimized code a
    // hidden class of its own (a map and descriptor array per task, ~300 B of every live task).
    const live: LiveTask = {
      actor: handle.actor,
      persister: handle.persister,
      taskId: stored.taskId,
      slot,
      lastVisible: visibleKey(stored),
      idleTimer: undefined,
    };
    this.live.set(stored.taskId, live);
    return live;
  }

  /** Takes a task out of this process: persister, then actor stopped; slot given back. A passivated one just leaves. */
  remove(taskId: string): LiveTask | PassivatedTask | undefined {
    const passivated = this.unpassivate(taskId);
    passivated?.slot.release();
    const live = this.live.get(taskId);
    if (!live) return passivated;
    clearTimeout(live.idleTimer);
    live.persister.stop();
    this.live.delete(taskId);
    stopTaskActor(live.actor);
    live.slot.release();
    return live;
  }
}

function ownerOf(actor: TaskActor): string {
  return actor.getSnapshot().context.owner;
}
