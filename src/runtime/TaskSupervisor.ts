/**
 * The router of task operations: creates tasks (write-ahead, I-1) and routes
 * `get`, `update` and `cancel` by task id to the live actor or the store. The
 * jobs behind it each live in their own part:
 *
 * - {@link TaskRegistry}: the live task actors and their owners' admission slots;
 * - {@link TaskActorFactory}: builds task actors with their runs and persisters;
 * - `Persister`: the one durable-publish path (a change is stored, then published);
 * - {@link TaskRecovery}: takes over unfinished stored tasks, through machine events (I-3);
 * - {@link TaskReaper}: purges expired finished tasks (T-26);
 * - {@link TaskPassivation}: keeps tasks that only wait for input in the store, not in memory.
 */
import { TASK_MACHINE_VERSION } from '../../machines/task/index.js';
import { RecoveringError, ShuttingDownError } from '../core/errors.js';
import { newTaskId } from '../core/ids.js';
import { DEFAULT_LIMITS } from '../limits/Limits.js';
import { isTerminal, recordOf, shown, visibleKey } from '../tasks/project.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { TaskCommand } from '../store/TaskStore.js';
import type { Slot } from './AdmissionSlots.js';
import { readStoredTask } from './readStoredTask.js';
import { LiveDeadlines } from './LiveDeadlines.js';
import { TaskActorFactory, type TaskHandle } from './TaskActorFactory.js';
import { TaskPassivation } from './TaskPassivation.js';
import { TaskReaper } from './TaskReaper.js';
import { TaskRecovery, type RecoveryCause } from './TaskRecovery.js';
import { TaskRegistry } from './TaskRegistry.js';
import { taskInputOf, type CreateTaskOptions, type TaskChangeListener, type TaskSupervisorOptions } from './TaskSupervisorOptions.js';

export type { CreateTaskOptions, TaskChangeListener, TaskSupervisorOptions } from './TaskSupervisorOptions.js';

export class TaskSupervisor {
  private readonly registry: TaskRegistry;
  private readonly factory: TaskActorFactory;
  private readonly reaper: TaskReaper;
  private readonly passivation: TaskPassivation;
  /** The ttl deadlines of every live task: one timer (T-26). */
  private readonly deadlines: LiveDeadlines;
  /** Takes over unfinished stored tasks (start-up, cluster adoption). */
  readonly recovery: TaskRecovery;
  private readonly listeners = new Set<TaskChangeListener>();
  private readonly now: () => number;
  private stopping = false;

  constructor(private readonly options: TaskSupervisorOptions) {
    const { store, tools, logger } = options;
    this.now = options.now ?? Date.now;
    const limits = options.limits ?? DEFAULT_LIMITS;
    this.registry = new TaskRegistry(limits.maxLiveTasksPerPrincipal);
    this.deadlines = new LiveDeadlines({ now: this.now, registry: this.registry });
    this.factory = new TaskActorFactory({
      deadlines: this.deadlines,
      store,
      tools,
      logger,
      now: this.now,
      maxPendingInputRequestsPerTask: limits.maxPendingInputRequestsPerTask,
      inspect: options.inspect,
      onWritten: (record) => this.published(record),
      onFenced: (taskId) => this.relinquish(taskId),
    });
    this.recovery = new TaskRecovery({
      store,
      tools,
      logger,
      factory: this.factory,
      registry: this.registry,
      now: this.now,
      publish: (record) => this.emit(record),
      hold: (record) => this.passivation.hold(record),
    });
    this.reaper = new TaskReaper({ store, logger, now: this.now, live: this.registry, finishedRetentionMs: options.finishedRetentionMs });
    const { registry, recovery, now } = this;
    this.passivation = new TaskPassivation({ ...options, registry, recovery, now, publish: (record) => this.publish(record) });
  }

  /** Number of task actors in memory (non-terminal tasks only, I-10). */
  get liveCount(): number {
    return this.registry.size;
  }

  /** Number of passivated tasks: unfinished, this process's, no actor in memory. */
  get passivatedCount(): number {
    return this.registry.passivatedSize;
  }

  /** Recovers unfinished tasks from the store and starts the reaper. */
  async start(): Promise<{ resumed: number; failed: number; quarantined: number }> {
    let outcome = { resumed: 0, failed: 0, quarantined: 0 };
    if (this.options.recoverOnStart !== false) outcome = await this.recovery.recoverAll();
    this.reaper.start(this.options.reapIntervalMs ?? 60_000);
    return outcome;
  }

  /** Graceful stop: writes in flight finish, nothing is written after (I-9), actors stop; unfinished tasks await the next start. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.reaper.stop();
    this.deadlines.stop();
    await this.passivation.stop();
    const lives = this.registry.all();
    // The writes in flight only: a write waiting to be retried (full disk) must not hold the stop up.
    await Promise.all(lives.map((live) => live.persister.settled()));
    for (const live of lives) live.persister.stop();
    for (const live of lives) this.registry.remove(live.taskId);
    this.factory.abortAll('The server is stopping');
  }

  /** Calls `listener` after every visible change of any task; returns the unsubscribe function. */
  onChange(listener: TaskChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Creates a task, stored durably before its actor starts and before this resolves: `CreateTaskResult` may go out (I-1, T-07). */
  async create(options: CreateTaskOptions): Promise<TaskRecord> {
    if (this.stopping) throw new ShuttingDownError();
    let slot: Slot;
    try {
      // Counted per owner only: one principal at its limit never blocks another (I-7).
      slot = this.registry.slots.acquire(options.principal);
    } catch (error) {
      options.execution?.abort(new DOMException('Too many unfinished tasks', 'AbortError'));
      throw error;
    }
    const taskId = options.execution?.taskId ?? newTaskId();
    const input = taskInputOf(options, taskId, this.now());
    options.execution?.becomeTask(taskId);
    let record: TaskRecord;
    let task: TaskHandle;
    try {
      task = this.factory.create(input, options.execution);
      // Constructed, not started: its run starts after this write (I-1). A function: recordOf reshapes it.
      record = recordOf(task.actor.getSnapshot(), () => task.actor.getPersistedSnapshot(), 1, TASK_MACHINE_VERSION);
      await this.options.store.create(record);
    } catch (error) {
      // Nothing was adopted: the run stops and the owner's slot is given back.
      options.execution?.abort(new DOMException('The task could not be stored', 'AbortError'));
      this.factory.discard(taskId);
      slot.release();
      throw error;
    }
    this.passivation.written(this.registry.add(task, record, slot), record);
    // `record` was projected from this actor, unchanged since (not started): its start writes nothing.
    this.factory.start(task, record, true);
    return record;
  }

  /** The task as its owner may see it; unknown, expired and foreign ids are one error (T-14, I-7). */
  async get(taskId: string, principal: string): Promise<TaskRecord> {
    const live = this.registry.owned(taskId, principal);
    if (live) {
      // Only what is durable is shown (I-1, I-2), never waiting for a write: one that
      // failed, hangs or waits to retry leaves the last stored state showing until it lands.
      return this.present(shown(live.persister.durable!));
    }
    // A passivated task is answered from the store, where it is exactly as its actor left it.
    return this.present(shown(await readStoredTask(this.options, taskId, principal, this.now())));
  }

  /** Delivers input responses (T-20), to a passivated task too (it runs again); keys not outstanding are ignored (T-22). */
  async update(taskId: string, principal: string, responses: Record<string, unknown>): Promise<void> {
    const live = this.registry.owned(taskId, principal);
    if (live) live.actor.send({ type: 'INPUT_RESPONSES', at: this.now(), responses });
    else if (!(await this.passivation.deliver(taskId, principal, { type: 'INPUT_RESPONSES', at: this.now(), responses })))
      await this.commandStored(taskId, principal, { type: 'update', principal, responses });
  }

  /** Requests cooperative cancellation (T-24). A finished task is left as it is (T-28). */
  async cancel(taskId: string, principal: string): Promise<void> {
    const live = this.registry.owned(taskId, principal);
    if (live) live.actor.send({ type: 'CANCEL', at: this.now() });
    // A passivated task waits for input: cancelled at once, as a live one in input_required is (T-24).
    else if (!(await this.passivation.deliver(taskId, principal, { type: 'CANCEL', at: this.now() })))
      await this.commandStored(taskId, principal, { type: 'cancel', principal });
  }

  /** Update/cancel of a task not live here: forwarded to its owner (T-20, T-24), or retryable while recovery has not taken it over. */
  private async commandStored(taskId: string, principal: string, command: TaskCommand): Promise<void> {
    const record = await readStoredTask(this.options, taskId, principal, this.now());
    if (isTerminal(record)) return;
    if (this.options.forward) await this.options.forward(record, command);
    else if (this.recovery.running) throw new RecoveringError();
  }

  /** Resolves when every live task's changes so far are stored. */
  async flushed(): Promise<void> {
    await Promise.all(this.registry.all().map((live) => live.persister.flushed()));
  }

  /** Whether a task runs in this process. */
  isLive(taskId: string): boolean {
    return this.registry.has(taskId);
  }

  /** Stops running a task here without writing (I-9): another instance claimed it (stale fencing token) or our lease lapsed. */
  relinquish(taskId: string): void {
    // The task leaves this process: its owner's slot goes back at once, not at restart.
    if (!this.registry.remove(taskId)) return;
    this.options.logger.info(`task ${taskId} is no longer run by this instance (claimed by another)`);
  }

  /** Stops running every task here without writing (see {@link relinquish}), passivated ones included. */
  relinquishAll(): void {
    for (const taskId of this.registry.ids()) this.relinquish(taskId);
  }

  /** The record as clients see it now: with the current polling hint (T-27). */
  private present(record: TaskRecord): TaskRecord {
    const hint = this.options.pollPolicy?.current(record, this.now());
    return hint === undefined || hint === record.pollIntervalMs ? record : { ...record, pollIntervalMs: hint };
  }

  /** A live task's record was stored: the one place a change is published (stored, then published). */
  private published(record: TaskRecord): void {
    const live = this.registry.get(record.taskId);
    if (!live) return;
    const visible = visibleKey(record);
    if (visible !== live.lastVisible) {
      live.lastVisible = visible;
      this.publish(record);
    }
    this.passivation.written(live, record);
    // A terminal task leaves memory once its final record is stored (I-10): until then `get` answers from the actor.
    if (isTerminal(record)) this.registry.remove(record.taskId);
  }

  /** A visible change is published (a live task's, or a passivated task's end). */
  private publish(record: TaskRecord): void {
    if (isTerminal(record)) this.options.pollPolicy?.observe(record);
    this.emit(this.present(shown(record)));
  }

  private emit(shown: TaskRecord): void {
    for (const listener of this.listeners) {
      try {
        listener(shown);
      } catch (error) {
        this.options.logger.error('task change listener failed', error);
      }
    }
  }

  /** {@link TaskRecovery.resumeAll}: start-up recovery, cluster adoption (`adopted`: from an instance whose lease expired). */
  resumeAll(records: readonly TaskRecord[], cause: RecoveryCause = 'restart'): ReturnType<TaskRecovery['resumeAll']> {
    return this.recovery.resumeAll(records, cause);
  }
}
