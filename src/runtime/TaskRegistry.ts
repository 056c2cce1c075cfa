/**
 * The live task registry: the unfinished tasks whose actors run in this
 * process, by task id, each holding its owner's admission slot.
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

/** One task running in this process. */
export interface LiveTask extends TaskHandle {
  readonly taskId: string;
  /** The owner's claim on one live task (released when the task leaves). */
  readonly slot: Slot;
  /** `visibleKey` of the last record published: listeners see visible changes only. */
  lastVisible: string;
}

export class TaskRegistry {
  private readonly live = new Map<string, LiveTask>();
  /** Unfinished tasks per owner: live actors plus creations under way (so concurrent creates cannot overshoot). */
  readonly slots: AdmissionSlots;

  constructor(maxLiveTasksPerPrincipal: number) {
    this.slots = new AdmissionSlots(maxLiveTasksPerPrincipal);
  }

  /** Number of task actors in memory (non-terminal tasks only, I-10). */
  get size(): number {
    return this.live.size;
  }

  has(taskId: string): boolean {
    return this.live.has(taskId);
  }

  get(taskId: string): LiveTask | undefined {
    return this.live.get(taskId);
  }

  /** The live task if `principal` owns it; another principal's task is not found here (I-7). */
  owned(taskId: string, principal: string): LiveTask | undefined {
    const live = this.live.get(taskId);
    return live && ownerOf(live.actor) === principal ? live : undefined;
  }

  /** A snapshot of the live tasks (safe to iterate while tasks leave). */
  all(): LiveTask[] {
    return [...this.live.values()];
  }

  /** Registers a built task whose record (`stored`) is in the store; `slot` is its owner's claim. */
  add(handle: TaskHandle, stored: TaskRecord, slot: Slot): LiveTask {
    const live: LiveTask = { ...handle, taskId: stored.taskId, slot, lastVisible: visibleKey(stored) };
    this.live.set(stored.taskId, live);
    return live;
  }

  /** Takes a task out of this process: persister, then actor stopped; slot given back. */
  remove(taskId: string): LiveTask | undefined {
    const live = this.live.get(taskId);
    if (!live) return undefined;
    live.persister.stop();
    this.live.delete(taskId);
    live.actor.stop();
    live.slot.release();
    return live;
  }
}

function ownerOf(actor: TaskActor): string {
  return actor.getSnapshot().context.owner;
}
