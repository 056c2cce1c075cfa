/**
 * The router of task operations: creates task actors (write-ahead, I-1),
 * routes `get`, `update` and `cancel` by task id, persists changes, evicts
 * terminal actors (I-10), recovers unfinished tasks on start and purges
 * expired ones.
 *
 * Task actors are independent root actors in a registry, never children of
 * one parent: spawn cost grows with the number of siblings (xstate-notes §5).
 */
import { createActor, fromCallback, type Actor, type InspectionEvent } from 'xstate';
import {
  taskMachine,
  TASK_MACHINE_VERSION,
  type JsonObject,
  type TaskEvent,
  type TaskInput,
  type WorkerInput,
  type WorkerMessage,
} from '../../machines/task/index.js';
import { ShuttingDownError, TaskExpiredError, taskNotFound, TaskRecordDamagedError } from '../core/errors.js';
import { newTaskId, TASK_ID_PATTERN } from '../core/ids.js';
import { TaskDamagedError, type TaskCommand, type TaskStore } from '../store/TaskStore.js';
import { taskRecordProblem } from '../tasks/recordProblem.js';
import { recordOf, isTerminal, visibleKey } from '../tasks/project.js';
import { isExpired, type TaskRecord } from '../tasks/TaskRecord.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import type { ToolDefinition } from '../tools/ToolDefinition.js';
import { Persister } from './Persister.js';
import type { PollPolicy } from './PollPolicy.js';
import { ToolExecution } from './ToolExecution.js';
import type { Logger } from './Logger.js';
import { DEFAULT_LIMITS, limitExceeded, type Limits } from '../limits/Limits.js';

/** Unfinished tasks recovered concurrently per batch on start. */
const RECOVERY_BATCH = 500;

/** The provided task machine: real worker and deadline timer. */
type TaskActor = Actor<typeof taskMachine>;

interface LiveTask {
  actor: TaskActor;
  persister: Persister;
  lastVisible: string;
}

export interface TaskSupervisorOptions {
  store: TaskStore;
  tools: ToolRegistry;
  logger: Logger;
  /** How often expired tasks are purged; 0 disables the reaper. */
  reapIntervalMs?: number;
  /**
   * Also receives every inspection event of every task actor (the Stately
   * inspector, a trace). Opt-in: when absent, actors carry only the persister.
   */
  inspect?: (event: InspectionEvent) => void;
  /** A finished task stays readable at least this long after it finished. Default 60 s. */
  finishedRetentionMs?: number;
  /** Sets the `pollIntervalMs` a task is shown with (T-27); without it the stored hint is shown. */
  pollPolicy?: PollPolicy;
  /** Live tasks per principal, pending input requests per task. Default: `DEFAULT_LIMITS`. */
  limits?: Pick<Limits, 'maxLiveTasksPerPrincipal' | 'maxPendingInputRequestsPerTask'>;
  now?: () => number;
  /**
   * Recover the store's unfinished tasks in `start()` (default true). A
   * cluster turns it off: its instances adopt tasks through leases instead.
   */
  recoverOnStart?: boolean;
  /**
   * Routes `update`/`cancel` of an unfinished task that runs on another
   * instance (shared store); without it such a call is acknowledged only.
   */
  forward?: (record: TaskRecord, command: TaskCommand) => Promise<void>;
}

export interface CreateTaskOptions {
  tool: ToolDefinition;
  args: JsonObject;
  principal: string;
  ttlMs: number | null;
  pollIntervalMs?: number;
  clientCapabilities?: JsonObject;
  /** W3C trace context of the creating call (issue 16.3). */
  trace?: TaskInput['trace'];
  /** A run already under way (`auto` promotion); otherwise the worker starts one after the write. */
  execution?: ToolExecution;
}

/** Listener of visible task changes (status, statusMessage, inputRequests, result, error). */
export type TaskChangeListener = (record: TaskRecord) => void;

export class TaskSupervisor {
  private readonly live = new Map<string, LiveTask>();
  /** Runs by task id, for the worker actor to adopt or start. */
  private readonly executions = new Map<string, ToolExecution>();
  private readonly listeners = new Set<TaskChangeListener>();
  /** Unfinished tasks per owner: live actors plus creations under way (so concurrent creates cannot overshoot). */
  private readonly liveByOwner = new Map<string, number>();
  private readonly limits: Pick<Limits, 'maxLiveTasksPerPrincipal' | 'maxPendingInputRequestsPerTask'>;
  private readonly machine;
  private readonly now: () => number;
  private reaper: NodeJS.Timeout | undefined;
  private stopping = false;

  constructor(private readonly options: TaskSupervisorOptions) {
    this.now = options.now ?? Date.now;
    this.limits = options.limits ?? DEFAULT_LIMITS;
    this.machine = taskMachine.provide({
      actors: {
        worker: fromCallback<WorkerMessage, WorkerInput>(({ input, sendBack, receive }) => {
          const execution = this.executions.get(input.taskId) ?? this.startWorker(input);
          if (!execution) return () => {};
          this.executions.set(input.taskId, execution);
          execution.attach(
            (event: TaskEvent) => sendBack(event),
            // Let the event reach the actor (and its persister) before waiting for the write (and its retries).
            async () => {
              await Promise.resolve();
              await this.live.get(input.taskId)?.persister.flushed();
            },
          );
          receive((message) => {
            if (message.type === 'ABORT') execution.cancel();
            else execution.deliver(message.responses);
          });
          return () => {
            execution.detach();
            execution.abort(new DOMException('The task ended', 'AbortError'));
            this.executions.delete(input.taskId);
          };
        }),
        deadline: fromCallback<{ type: never }, { deadline: number | null }>(({ input, sendBack }) => {
          if (input.deadline === null) return () => {};
          const deadline = input.deadline;
          let timer: NodeJS.Timeout | undefined;
          // setTimeout overflows past 2^31-1 ms: re-arm in steps.
          const arm = () => {
            const left = deadline - this.now();
            if (left <= 0) sendBack({ type: 'DEADLINE', at: this.now() } satisfies TaskEvent);
            else timer = setTimeout(arm, Math.min(left, 2 ** 31 - 1));
          };
          arm();
          return () => clearTimeout(timer);
        }),
      },
    });
  }

  /** Number of task actors in memory (non-terminal tasks only, I-10). */
  get liveCount(): number {
    return this.live.size;
  }

  /** Recovers unfinished tasks from the store and starts the reaper. */
  async start(): Promise<{ resumed: number; failed: number; quarantined: number }> {
    const outcome = this.options.recoverOnStart === false ? { resumed: 0, failed: 0, quarantined: 0 } : await this.recover();
    const interval = this.options.reapIntervalMs ?? 60_000;
    if (interval > 0) {
      this.reaper = setInterval(() => void this.reap().catch((error) => this.options.logger.error('reaper failed', error)), interval);
      this.reaper.unref();
    }
    return outcome;
  }

  /**
   * Graceful stop: writes in flight finish, then nothing is written again
   * (I-9), then actors stop (their workers are aborted). Unfinished tasks
   * stay unfinished in the store and are recovered on the next start.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.reaper);
    const lives = [...this.live.values()];
    // The writes in flight only: a write waiting to be retried (full disk) must not hold the stop up.
    await Promise.all(lives.map((live) => live.persister.settled()));
    for (const live of lives) live.persister.stop();
    for (const live of lives) live.actor.stop();
    this.live.clear();
    this.liveByOwner.clear();
    for (const execution of this.executions.values()) execution.abort(new DOMException('The server is stopping', 'AbortError'));
    this.executions.clear();
  }

  /** Calls `listener` after every visible change of any task; returns the unsubscribe function. */
  onChange(listener: TaskChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Creates a task. The record is durably stored before the actor starts and
   * before this resolves, so the caller may answer `CreateTaskResult` (I-1, T-07).
   */
  async create(options: CreateTaskOptions): Promise<TaskRecord> {
    if (this.stopping) throw new ShuttingDownError();
    // Counted per owner only: one principal at its limit never blocks another (I-7).
    const owned = this.liveByOwner.get(options.principal) ?? 0;
    if (owned >= this.limits.maxLiveTasksPerPrincipal) {
      options.execution?.abort(new DOMException('Too many unfinished tasks', 'AbortError'));
      throw limitExceeded(
        'maxLiveTasksPerPrincipal',
        this.limits.maxLiveTasksPerPrincipal,
        'too many unfinished tasks for this principal; wait for some to finish or cancel them',
      );
    }
    this.liveByOwner.set(options.principal, owned + 1);
    const taskId = options.execution?.taskId ?? newTaskId();
    const input: TaskInput = {
      taskId,
      owner: options.principal,
      tool: options.tool.name,
      args: options.args,
      now: this.now(),
      ttlMs: options.ttlMs,
      ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
      ...(options.execution?.statusMessage !== undefined ? { statusMessage: options.execution.statusMessage } : {}),
      ...(options.clientCapabilities !== undefined ? { clientCapabilities: options.clientCapabilities } : {}),
      ...(options.trace !== undefined ? { trace: options.trace } : {}),
    };
    if (options.execution) {
      options.execution.becomeTask(taskId);
      this.executions.set(taskId, options.execution);
    }
    const persister = this.newPersister(1);
    let actor: TaskActor;
    let record: TaskRecord;
    try {
      actor = createActor(this.machine, { input, inspect: this.inspectFor(persister) });
      // Constructed, not started: the worker has not run, the snapshot holds the invokes to start (I-1).
      record = recordOf(actor.getSnapshot(), actor.getPersistedSnapshot(), 1, TASK_MACHINE_VERSION);
      await this.options.store.create(record);
    } catch (error) {
      // Nothing was adopted: the run stops and the owner's slot is given back.
      options.execution?.abort(new DOMException('The task could not be stored', 'AbortError'));
      this.executions.delete(taskId);
      this.releaseOwned(options.principal);
      throw error;
    }
    this.adopt(actor, persister, record);
    return record;
  }

  /** The task as its owner may see it; unknown, expired and foreign ids are one error (T-14, I-7). */
  async get(taskId: string, principal: string): Promise<TaskRecord> {
    const live = this.lookupLive(taskId, principal);
    if (live) {
      // Only what is durable is shown (issue 13 item 1): a crash right after a
      // client saw a status must not bring the task back in an earlier one
      // (I-1 for every change of a task's life, I-2). Never waits for a write:
      // one that failed, hangs or sits on its retry timer leaves the task
      // answering its last stored state until the write lands.
      return this.present(shown(live.persister.durable!));
    }
    return this.present(await this.stored(taskId, principal));
  }

  /**
   * Delivers input responses (T-20). Responses under keys that are not
   * outstanding are ignored by the machine (T-22); a finished task ignores
   * them all.
   */
  async update(taskId: string, principal: string, responses: Record<string, unknown>): Promise<void> {
    const live = this.lookupLive(taskId, principal);
    if (live) {
      live.actor.send({ type: 'INPUT_RESPONSES', at: this.now(), responses });
      return;
    }
    const record = await this.stored(taskId, principal);
    // Running on another instance: its worker gets the responses there (T-20 acknowledges at once).
    if (!isTerminal(record) && this.options.forward) await this.options.forward(record, { type: 'update', principal, responses });
  }

  /** Requests cooperative cancellation (T-24). A finished task is left as it is (T-28). */
  async cancel(taskId: string, principal: string): Promise<void> {
    const live = this.lookupLive(taskId, principal);
    if (live) {
      live.actor.send({ type: 'CANCEL', at: this.now() });
      return;
    }
    const record = await this.stored(taskId, principal);
    // Running on another instance: cancellation is eventually consistent (T-24), the owner applies it.
    if (!isTerminal(record) && this.options.forward) await this.options.forward(record, { type: 'cancel', principal });
  }

  /**
   * Purges finished tasks whose ttl has run out (T-26); live ones end through
   * their own deadline timer first.
   */
  async reap(): Promise<number> {
    let purged = 0;
    const now = this.now();
    // Ask past the live ones and the recently finished ones so they cannot stall the sweep.
    for (let limit = 500 + this.live.size; ; limit *= 2) {
      const expired = await this.options.store.listExpired(now, limit);
      for (const id of expired) {
        if (this.live.has(id)) continue;
        // A damaged record is the operator's to look at (taskvisor tasks check), never the reaper's to purge.
        const record = await this.options.store.get(id).catch((error: unknown) => {
          if (error instanceof TaskDamagedError) return undefined;
          throw error;
        });
        if (
          record &&
          isTerminal(record) &&
          isExpired(record, now, this.options.finishedRetentionMs) &&
          (await this.options.store.delete(id))
        )
          purged++;
      }
      if (expired.length < limit) return purged;
    }
  }

  /** Resolves when every live task's changes so far are stored. */
  async flushed(): Promise<void> {
    await Promise.all([...this.live.values()].map((live) => live.persister.flushed()));
  }

  /** Whether a task runs in this process. */
  isLive(taskId: string): boolean {
    return this.live.has(taskId);
  }

  /**
   * Stops running a task here without writing anything (I-9): another
   * instance claimed it (stale fencing token) or this instance's lease lapsed.
   */
  relinquish(taskId: string): void {
    const live = this.live.get(taskId);
    if (!live) return;
    live.persister.stop();
    this.live.delete(taskId);
    live.actor.stop();
    // The task left this process: its owner's slot goes back (issue 13.5; it used to stay taken until restart).
    this.releaseOwned(live.actor.getSnapshot().context.owner);
    this.options.logger.info(`task ${taskId} is no longer run by this instance (claimed by another)`);
  }

  /** Stops running every task here without writing (see {@link relinquish}). */
  relinquishAll(): void {
    for (const taskId of [...this.live.keys()]) this.relinquish(taskId);
  }

  private lookupLive(taskId: string, principal: string): LiveTask | undefined {
    const live = this.live.get(taskId);
    if (live && live.actor.getSnapshot().context.owner === principal) return live;
    return undefined;
  }

  private async stored(taskId: string, principal: string): Promise<TaskRecord> {
    if (typeof taskId !== 'string' || !TASK_ID_PATTERN.test(taskId)) throw taskNotFound();
    let record: TaskRecord | undefined;
    try {
      // Issue 12.6: ownership first, in the store: another principal's record is never loaded or parsed.
      record = await this.options.store.get(taskId, principal);
    } catch (error) {
      // Unreadable or set aside: the store reported it once; the client gets a stable error (issue 13 item 3).
      if (error instanceof TaskDamagedError) throw new TaskRecordDamagedError();
      throw error;
    }
    if (!record) throw taskNotFound();
    const problem = taskRecordProblem(record, taskId);
    if (problem !== undefined) {
      // Another principal's damaged task stays indistinguishable from a missing one (I-7).
      if (typeof record.owner === 'string' && record.owner !== principal) throw taskNotFound();
      await this.setAside(taskId, problem);
      throw new TaskRecordDamagedError();
    }
    // A history-only record (a synchronous workflow run) was never a task: unknown to tasks/* (T-14).
    if (record.owner !== principal || record.historyOnly) throw taskNotFound();
    if (isTerminal(record) && isExpired(record, this.now(), this.options.finishedRetentionMs)) {
      throw new TaskExpiredError();
    }
    return record;
  }

  /** The record as clients see it now: with the current polling hint (T-27). */
  private present(record: TaskRecord): TaskRecord {
    const hint = this.options.pollPolicy?.current(record, this.now());
    return hint === undefined || hint === record.pollIntervalMs ? record : { ...record, pollIntervalMs: hint };
  }

  /** The persister's hook, plus the user's inspector when one is configured (costs nothing otherwise). */
  private inspectFor(persister: Persister): (event: InspectionEvent) => void {
    const extra = this.options.inspect;
    if (!extra) return persister.inspect;
    return (event) => {
      persister.inspect(event);
      try {
        extra(event);
      } catch (error) {
        this.options.logger.error('inspector failed', error);
      }
    };
  }

  private newPersister(version: number): Persister {
    return new Persister({
      store: this.options.store,
      machineVersion: TASK_MACHINE_VERSION,
      version,
      onError: (error, taskId) => this.options.logger.error(`could not store task ${taskId}; retrying`, error),
      onFenced: (taskId) => this.relinquish(taskId),
      onWritten: (record) => this.published(record),
    });
  }

  /** Registers and starts a task actor whose record is stored. */
  private adopt(actor: TaskActor, persister: Persister, record: TaskRecord): void {
    const live: LiveTask = { actor, persister, lastVisible: visibleKey(record) };
    this.live.set(record.taskId, live);
    persister.attach(actor, record);
    actor.subscribe({ error: (error) => this.options.logger.error(`task ${record.taskId} actor failed`, error) });
    actor.start();
  }

  /**
   * A live task's record was stored: the one place a change is published
   * (persisted, then published: issue 19 item 2). Listeners see visible
   * changes only, in write order; a finished task then leaves memory (I-10).
   */
  private published(record: TaskRecord): void {
    const live = this.live.get(record.taskId);
    if (!live) return;
    const visible = visibleKey(record);
    if (visible !== live.lastVisible) {
      live.lastVisible = visible;
      if (isTerminal(record)) this.options.pollPolicy?.observe(record);
      this.emit(this.present(shown(record)));
    }
    if (isTerminal(record)) this.evict(record.taskId);
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

  /**
   * A terminal task leaves memory once its final record is stored (I-10):
   * until then `get` keeps answering from the actor, never from a stale record.
   */
  private evict(taskId: string): void {
    const live = this.live.get(taskId);
    if (!live) return;
    live.persister.stop();
    live.actor.stop();
    this.live.delete(taskId);
    this.releaseOwned(live.actor.getSnapshot().context.owner);
  }

  private releaseOwned(owner: string): void {
    const owned = (this.liveByOwner.get(owner) ?? 1) - 1;
    if (owned > 0) this.liveByOwner.set(owner, owned);
    else this.liveByOwner.delete(owner);
  }

  /** Starts the run of a task whose worker has none yet: a fresh `always` task, or a `replay` after restart. */
  private startWorker(input: WorkerInput): ToolExecution | undefined {
    const tool = this.options.tools.get(input.tool);
    const live = this.live.get(input.taskId);
    if (!tool || !live) return undefined;
    const context = live.actor.getSnapshot().context;
    return new ToolExecution({
      // `resume`: continue from the last saved progress; `replay` starts over by definition.
      ...(tool.options.resume === 'resume' && context.checkpoint !== undefined ? { checkpoint: context.checkpoint } : {}),
      tool,
      args: input.args,
      principal: context.owner,
      taskId: input.taskId,
      inputMode: 'wait',
      // From the context, not `input`: a restored invoke keeps the input it was first started with,
      // which predates the answers given since (a replay would ask again under a used key and hang).
      answers: context.answers,
      issuedKeys: context.issuedKeys,
      outstandingKeys: Object.keys(context.inputRequests),
      ...(context.clientCapabilities ? { clientCapabilities: context.clientCapabilities } : {}),
      ...(context.trace ? { trace: context.trace } : {}),
      maxPendingInputRequests: this.limits.maxPendingInputRequestsPerTask,
      now: this.now,
    });
  }

  /**
   * Every unfinished task found in the store is resumed or failed (see
   * {@link resumeRecord}): nothing stays `working` forever.
   */
  private async recover(): Promise<{ resumed: number; failed: number; quarantined: number }> {
    const { resumed, failed, quarantined } = await this.resumeAll(await this.options.store.listNonTerminal());
    return { resumed, failed, quarantined };
  }

  /**
   * {@link resumeRecord} for many stored tasks (start-up recovery, cluster
   * adoption), in bounded concurrent batches: a store with group commit turns
   * each batch into few fsyncs (one at a time cost ~0.9 ms per task on
   * sqlite: 100k tasks took minutes).
   */
  async resumeAll(
    records: readonly TaskRecord[],
    /** `adopted`: taken over from an instance whose lease expired (its tasks end saying so, issue 13 item 4). */
    cause: 'restart' | 'adopted' = 'restart',
  ): Promise<{ resumed: number; failed: number; live: number; quarantined: number }> {
    const counts = { resumed: 0, failed: 0, live: 0, quarantined: 0 };
    for (let start = 0; start < records.length; start += RECOVERY_BATCH) {
      const outcomes = await Promise.all(records.slice(start, start + RECOVERY_BATCH).map((record) => this.resumeRecord(record, cause)));
      for (const outcome of outcomes) counts[outcome]++;
    }
    return counts;
  }

  /**
   * Takes over one unfinished stored task whose actor is not running in this
   * process (found on start, or adopted from an instance that died): a tool
   * with `resume: 'replay'` or `'resume'` runs again from its restored
   * snapshot (`resume` with its last checkpoint); any other ends `failed` with
   * a `statusMessage` saying why. A task already live here is left alone.
   */
  async resumeRecord(record: TaskRecord, cause: 'restart' | 'adopted' = 'restart'): Promise<'resumed' | 'failed' | 'live' | 'quarantined'> {
    if (this.live.has(record.taskId)) return 'live';
    // A record that cannot be recovered never stops start-up: it is set aside and the rest go on (issue 13 item 3).
    const problem = taskRecordProblem(record);
    if (problem !== undefined) {
      await this.setAside(record.taskId, problem);
      return 'quarantined';
    }
    const tool = this.options.tools.get(record.tool);
    const reason = record.historyOnly
      ? 'The server stopped during this synchronous run; its caller got no answer'
      : record.machineVersion !== TASK_MACHINE_VERSION || record.snapshot === undefined
        ? `The server restarted with a task machine version it cannot restore (stored ${record.machineVersion}, running ${TASK_MACHINE_VERSION})`
        : !tool
          ? `The server restarted and no longer has the tool ${record.tool}`
          : tool.options.resume !== 'replay' && tool.options.resume !== 'resume'
            ? cause === 'adopted'
              ? ADOPTED_MESSAGE
              : undefined // the machine's own restart error
            : null; // run again
    try {
      if (reason === null) {
        this.restore(record);
        return 'resumed';
      }
      await this.failOnRestart(record, reason);
      return 'failed';
    } catch (error) {
      this.options.logger.error(`could not recover task ${record.taskId}`, error);
      try {
        await this.failOnRestart(record, `The server restarted and could not restore this task: ${(error as Error).message}`);
        return 'failed';
      } catch (again) {
        // Not even its failure can be stored (the store refuses the record): set aside, never retried in a loop.
        await this.setAside(record.taskId, `recovery could not store it: ${(again as Error).message}`);
        return 'quarantined';
      }
    }
  }

  /**
   * Quarantines a damaged record (issue 13 item 3): kept in the store as it
   * is, no longer served or recovered; logged here, once, with its id.
   */
  private async setAside(taskId: string, reason: string): Promise<void> {
    this.options.logger.error(`task ${taskId}: stored record is damaged (${reason}); set aside in quarantine (see taskvisor tasks check)`);
    try {
      await this.options.store.quarantine(taskId, reason);
    } catch (error) {
      this.options.logger.error(`task ${taskId}: could not quarantine it`, error);
    }
  }

  private restore(record: TaskRecord): void {
    const persister = this.newPersister(record.version);
    const actor = createActor(this.machine, {
      snapshot: record.snapshot as never,
      input: undefined as never,
      inspect: this.inspectFor(persister),
    });
    // A snapshot the machine cannot restore: thrown here (recovery then fails the task), never started into an
    // actor in error that xstate would rethrow from a timer (issue 13 item 3).
    throwIfUnrestorable(actor);
    // A recovered task counts against its owner's limit, but is never refused for it (it exists already).
    this.liveByOwner.set(record.owner, (this.liveByOwner.get(record.owner) ?? 0) + 1);
    this.adopt(actor, persister, record);
  }

  /** Ends an unfinished stored task `failed` without running anything (T-15, T-34). */
  private async failOnRestart(record: TaskRecord, reason: string | undefined): Promise<void> {
    const at = this.now();
    let next: TaskRecord;
    const viaMachine = reason === undefined || reason === ADOPTED_MESSAGE;
    if (viaMachine && record.snapshot !== undefined) {
      // The unprovided machine has inert workers: this runs only the transition.
      const actor = createActor(taskMachine, { snapshot: record.snapshot as never, input: undefined as never });
      throwIfUnrestorable(actor);
      actor.start();
      actor.send({ type: 'SERVER_RESTARTED', at, ...(reason !== undefined ? { message: reason } : {}) });
      next = recordOf(actor.getSnapshot(), undefined, record.version + 1, TASK_MACHINE_VERSION);
      actor.stop();
    } else {
      const message = reason ?? 'The server restarted while this task was running';
      const { snapshot: _dropped, inputRequests: _none, ...rest } = record;
      next = {
        ...rest,
        status: 'failed',
        statusMessage: message,
        error: { code: -32603, message },
        lastUpdatedAt: Math.max(record.lastUpdatedAt, at),
        version: record.version + 1,
      };
    }
    await this.options.store.put(next);
    for (const listener of this.listeners) listener(next);
  }
}

/**
 * Why an adopted task that cannot be resumed ends `failed`: its instance did
 * not restart, it lost its lease (issue 13 item 4: a stalled database made
 * live tasks end "The server restarted" in a process that never restarted).
 */
const ADOPTED_MESSAGE =
  'The instance running this task lost its cluster lease (it died, stalled, or was cut off from the database) and the instance that took the task over cannot resume it';

/** Throws the error of an actor whose stored snapshot could not be restored (before it is started). */
function throwIfUnrestorable(actor: { getSnapshot(): { status: string; error?: unknown } }): void {
  const snapshot = actor.getSnapshot();
  if (snapshot.status === 'error') throw snapshot.error instanceof Error ? snapshot.error : new Error(String(snapshot.error));
}

/** A stored record as clients and listeners get it: without the machine snapshot (as a live actor's view always was). */
function shown(record: TaskRecord): TaskRecord {
  const { snapshot: _internal, ...rest } = record;
  return rest;
}
