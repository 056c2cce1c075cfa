/**
 * The run of each task actor (a {@link ToolExecution}), wired to its actor
 * without a child actor (the task machine's invoked `worker`
 * was a second xstate Actor per task, a relayed event per run event, a child
 * to stop and to persist). From the actor's start to the moment its task
 * leaves `active` (final state, error or stop), the run's events go to
 * `actor.send`, what the machine emits (`ABORT`, `INPUT`) goes to the run,
 * and at the end the run is detached and aborted, as the invoke's cleanup did.
 *
 * A task's wiring is kept from the moment its actor is built (with a run
 * already under way, `auto` promotion) until its task ends or it is
 * discarded. It never reads the supervisor's maps.
 */
import type { Actor } from 'xstate';
import type { RunMessage, taskMachine } from '../../machines/task/index.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import type { Persister } from './Persister.js';
import { ToolExecution } from './ToolExecution.js';
import { hasOwnKeys } from '../core/hasOwnKeys.js';

/** A task actor of the task machine. */
export type TaskActor = Actor<typeof taskMachine>;

export interface RunWiringOptions {
  tools: Pick<ToolRegistry, 'get'>;
  /** Where a failed actor is reported (one function for every task: no closure per live task). */
  onActorError: (error: unknown, taskId: string) => void;
  now: () => number;
  /** Input requests a run may have outstanding at once. */
  maxPendingInputRequestsPerTask: number;
}

/**
 * What the run of one task needs, kept from build until the task ends; once
 * started, also the one observer of its actor: a class, so a live task holds
 * no observer literal and no closures for it. It tells the task's persister
 * first (`next`, `error`: a change is queued for writing before anything
 * reacts to it), then ends the run (`complete`, `error`). One observer, not
 * the persister's and the run's: xstate keeps an observer object and a bound
 * function per member for each (~290 B of every live task for two).
 */
class Wiring {
  constructor(
    private readonly runs: RunWiring,
    readonly taskId: string,
    readonly actor: TaskActor,
    readonly persister: Persister,
    /** A run already under way (`auto` promotion), or the one started with the actor. */
    public execution: ToolExecution | undefined,
  ) {}

  /** Observer of the actor: its snapshot changed. */
  next(): void {
    this.persister.next();
  }

  /** Observer of the actor: it reached its final state or stopped. */
  complete(): void {
    this.runs.end(this);
  }

  /** Observer of the actor: it failed (its error snapshot is written like any other change). */
  error(error: unknown): void {
    this.persister.error();
    this.runs.options.onActorError(error, this.taskId);
    this.runs.end(this);
  }
}

export class RunWiring {
  private readonly wired = new Map<string, Wiring>();

  /**
   * What any task's machine asks of its run (`ABORT`, `INPUT`), to the run wired to that task now: one
   * function for every task (each message names its task), not a closure over each run.
   */
  private readonly onRunMessage: (message: RunMessage) => void;

  constructor(readonly options: RunWiringOptions) {
    // Assigned here, not as a field initializer: a named function (as a field would name it) has its own
    // `name`, and the copy xstate's `on` binds of it then takes the slow path (~290 B per task, not 48).
    this.onRunMessage = (message) => {
      const execution = this.wired.get(message.taskId)?.execution;
      if (!execution) return;
      if (message.type === 'ABORT') execution.cancel();
      else execution.deliver(message.responses);
    };
  }

  /** Keeps what a built (not started) actor's run will need; `execution` is a run already under way to adopt. */
  add(taskId: string, actor: TaskActor, persister: Persister, execution?: ToolExecution): void {
    this.wired.set(taskId, new Wiring(this, taskId, actor, persister, execution));
  }

  /** Forgets a built actor that will never start. */
  discard(taskId: string): void {
    this.wired.delete(taskId);
  }

  /**
   * Starts the actor and its run (adopted, or started from the actor's
   * context: after a restore too, as the restored invoke started its worker),
   * wired to it until its task leaves `active`. `onError`: the actor failed
   * (observed before it starts, so an error in its start is reported, not thrown).
   *
   * The run is wired just before `actor.start()`, where the invoked worker
   * started inside it: its handler begins on a later microtask, and the
   * events an adopted run replays wait in the actor's mailbox until the start
   * processes them. So events and writes come in the same order as before
   * (the handler's first events coalesce into one write the same way). A
   * failed actor goes to `options.onActorError` (observed before it starts,
   * so an error in its start is reported, not thrown).
   */
  start(taskId: string, actor: TaskActor, persister: Persister): void {
    const wiring = this.wired.get(taskId);
    // Not wired (forgotten by abortAll meanwhile): observed still, for its persister and its errors, with no run.
    actor.subscribe(wiring ?? new Wiring(this, taskId, actor, persister, undefined));
    if (wiring) this.wire(taskId, wiring);
    actor.start();
  }

  private wire(taskId: string, wiring: Wiring): void {
    const { actor, persister } = wiring;
    const execution = wiring.execution ?? this.startRun(actor);
    if (!execution) {
      this.wired.delete(taskId);
      return;
    }
    wiring.execution = execution;
    // Emitted in the transition's deferred effects, where the invoke's `sendTo` delivered them.
    actor.on('*', this.onRunMessage);
    // The persister is what `saveCheckpoint` waits on (ToolExecution lets the event reach the actor first).
    // eslint-disable-next-line @typescript-eslint/unbound-method -- xstate's Actor binds `send` in its constructor: no sink closure per task
    execution.attach(actor.send, persister);
  }

  /** Aborts every run (the server stops). */
  abortAll(reason: string): void {
    for (const wiring of this.wired.values()) wiring.execution?.abort(new DOMException(reason, 'AbortError'));
    this.wired.clear();
  }

  /** The task left `active` (or its actor stopped or failed): its run is detached and aborted. */
  end(wiring: Wiring): void {
    // Still detached after abortAll (which forgot it): a run that goes on must not send to a stopped actor.
    if (this.wired.get(wiring.taskId) === wiring) this.wired.delete(wiring.taskId);
    const execution = wiring.execution;
    if (!execution) return;
    execution.detach();
    execution.abort(TASK_ENDED);
  }

  /** Starts the run of a task that has none yet: a fresh `always` task, or a `replay` after restart. */
  private startRun(actor: TaskActor): ToolExecution | undefined {
    const context = actor.getSnapshot().context;
    const tool = this.options.tools.get(context.tool);
    if (!tool) return undefined;
    return new ToolExecution({
      // `resume`: continue from the last saved progress; `replay` starts over by definition.
      ...(tool.options.resume === 'resume' && context.checkpoint !== undefined ? { checkpoint: context.checkpoint } : {}),
      tool,
      args: context.args,
      principal: context.owner,
      ...(context.grants ? { grants: context.grants } : {}),
      taskId: context.taskId,
      inputMode: 'wait',
      answers: context.answers,
      issuedKeys: context.issuedKeys,
      ...(context.sleeps ? { sleeps: context.sleeps } : {}),
      // Only when there are some: the run keeps its options, and most tasks start with none.
      ...(hasOwnKeys(context.inputRequests) ? { outstandingKeys: Object.keys(context.inputRequests) } : {}),
      ...(context.clientCapabilities ? { clientCapabilities: context.clientCapabilities } : {}),
      ...(context.trace ? { trace: context.trace } : {}),
      maxPendingInputRequests: this.options.maxPendingInputRequestsPerTask,
      now: this.options.now,
    });
  }
}

/**
 * The reason `ctx.signal` gives when a task ends: an `AbortError` without a
 * stack (it would show only the actor's cleanup inside xstate). One for every
 * task: it says nothing about a particular one, and building a DOMException
 * per task cost 0.8% of a durable create's CPU at c=64.
 */
const TASK_ENDED: DOMException = (() => {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new DOMException('The task ended', 'AbortError');
  } finally {
    Error.stackTraceLimit = limit;
  }
})();
