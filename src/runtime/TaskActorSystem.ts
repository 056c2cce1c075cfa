/**
 * One xstate actor system shared by a runtime's task actors, instead of one
 * per task.
 *
 * Why: `createActor` without a parent builds a whole ActorSystem for each
 * root actor (a scheduler, two Maps, a WeakMap, a Set, about fifteen
 * closures): ~1.8 KB of every live task's heap, measured with
 * bench/heapBreakdown.ts. xstate shares a system only between an actor and
 * its parent, so every task actor is built with the same `parent`: a ref that
 * carries the shared system and drops what a child reports to its parent.
 *
 * What that changes for a task actor, and why each is safe for the task
 * machine (machines/task, restore safety I-8):
 * - Its done and error events go to the parent ref, which drops them; the
 *   runtime learns both from its own observer (RunWiring), as before.
 * - `stop()` refuses a child: {@link stopTaskActor} stops it the way
 *   `stop()` stops a root (the same `_stop`). Stopping, a final state or an
 *   error takes it out of the shared system's map of running actors.
 * - The shared system's scheduler holds the delayed events of all tasks: the
 *   task machine has none (no `after`, its deadline is in context, T-26), and
 *   xstate does not persist the scheduler in a machine snapshot, so a task's
 *   snapshot and its restore are unchanged (TASK_MACHINE_VERSION).
 * - Inspection is per system, so with an `inspect` option each task keeps a
 *   system of its own (TaskActorFactory), and inspection events keep their
 *   per-task `rootId`.
 */
import { createActor, createMachine, type AnyActorRef } from 'xstate';

/** What a task actor is built with to join the shared system: its `parent` option. */
export interface SharedSystemOptions {
  readonly parent: AnyActorRef;
}

/** The `parent` option that puts an actor in a new shared system (one per runtime). */
export function sharedTaskSystem(): SharedSystemOptions {
  // Never started: only its system is used, which xstate builds with the actor.
  const holder = createActor(createMachine({}));
  const parent = {
    system: holder.system,
    // A task's done and error events, relayed to its parent: the runtime observes the actor itself.
    _send(): void {},
  };
  // Cast: xstate reads only `system` from a child's parent when it builds and `_send` when it relays to it.
  return { parent: parent as unknown as AnyActorRef };
}

/** Stops a task actor, root or member of a shared system (where xstate's `stop()` refuses a child). */
export function stopTaskActor(actor: { stop(): unknown; _parent?: unknown }): void {
  // `_parent` and `_stop` are xstate's (public at runtime, private in its types): `stop()` is `_stop()` after
  // its check that the actor is a root.
  const internal = actor as unknown as { _parent?: unknown; _stop(): unknown };
  if (internal._parent === undefined) actor.stop();
  else internal._stop();
}

/** What a started task actor keeps as its options: one frozen object for all (see {@link releaseStartOptions}). */
const startedOptions = Object.freeze({ devTools: false });

/**
 * Lets go of the options a task actor was built with, once it has started.
 *
 * Why: xstate keeps them (its defaults spread with ours, and so the input)
 * for the actor's life, and V8's optimised spread gives each copy a hidden
 * class of its own: ~0.4 KB of every live task, measured with
 * bench/heapBreakdown.ts. xstate 5.33.3 (pinned) reads them only while it
 * builds the actor and in `start()` (the input of its init event, and
 * `devTools`); a task actor is never started twice (a passivated task comes
 * back as a new actor from its snapshot).
 */
export function releaseStartOptions(actor: object): void {
  (actor as { options: object }).options = startedOptions;
}
