/**
 * One taskvisor instance's part in a cluster sharing a store that implements
 * {@link TaskOwnership} (Postgres):
 *
 * - lease: renewed every `leaseMs / 3`; when it cannot be renewed in time the
 *   instance stops its tasks without writing (someone else may own them now)
 *   and joins again under a new id;
 * - adoption: on every beat, the unfinished tasks of instances whose lease
 *   expired are claimed atomically (new fencing token) and each goes through
 *   the supervisor's restart path (`resumeAll`, TaskRecovery);
 * - command routing: `tasks/update` and `tasks/cancel` received by another
 *   instance arrive as command rows; this one applies those of its live tasks;
 * - cross-instance listen: a write of a task by another instance arrives on
 *   the change feed (task id + version); if a local listen watches that task
 *   the row is read and published; after the feed reconnects every watched
 *   task is re-read (a NOTIFY sent while disconnected is lost).
 */
import type { ChangeBus } from './ChangeBus.js';
import type { TaskSupervisor } from './TaskSupervisor.js';
import type { Logger } from './Logger.js';
import type { TaskChange, TaskOwnership, TaskStore } from '../store/TaskStore.js';
import { isTerminal, visibleKey } from '../tasks/project.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { publish } from '../core/diagnostics.js';

/** What the cluster needs of the runtime's fan-out: which tasks a local subscriber watches, and publishing a change made elsewhere. */
export type WatchedTasks = Pick<ChangeBus, 'watches' | 'watchedTaskIds' | 'publishTask'>;

export interface ClusterNodeOptions {
  store: TaskStore;
  ownership: TaskOwnership;
  supervisor: TaskSupervisor;
  hub: WatchedTasks;
  logger: Logger;
  /** How often the lease is renewed and expired instances are looked for. Default `leaseMs / 3`. */
  beatMs?: number;
  /** Told how many instances hold a live lease, after each renewal (rate limits share their rates by it). */
  onLiveInstances?: (count: number) => void;
}

export class ClusterNode {
  readonly #options: ClusterNodeOptions;
  #timer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  /** Serializes sweeps and command intake: a claimed task is resumed before its commands are applied. */
  #chain: Promise<void> = Promise.resolve();
  #commandsPending = false;
  /** When the last successful renewal was sent: the lease holds until this + leaseMs at the latest. */
  #renewedAt = 0;
  #mustRejoin = false;
  #stopped = false;
  #beating = false;
  #sweepQueued = false;
  #beatMs = 1_000;
  /** Last visible state published per watched remote task (the feed also reports invisible writes). */
  readonly #published = new Map<string, string>();
  #adopted = 0;

  constructor(options: ClusterNodeOptions) {
    this.#options = options;
  }

  /** This instance's id in the cluster. */
  get instanceId(): string {
    return this.#options.ownership.instanceId;
  }

  /**
   * Whether this instance holds a live lease now (readiness):
   * renewed in time and not lost; false before `start`, after `stop` and
   * while it joins again.
   */
  get leaseHeld(): boolean {
    return !this.#stopped && !this.#mustRejoin && this.#renewedAt > 0 && Date.now() < this.#renewedAt + this.#options.ownership.leaseMs;
  }

  /** Tasks this instance adopted from others so far. */
  get adopted(): number {
    return this.#adopted;
  }

  /** Joins (a fresh lease), starts listening, adopts what is already orphaned, then beats. */
  async start(): Promise<void> {
    const { ownership } = this.#options;
    const sentAt = Date.now();
    await ownership.join();
    this.#renewedAt = sentAt;
    publish('taskvisor:cluster.lease', () => ({ event: 'joined', instanceId: ownership.instanceId }));
    await this.#countInstances();
    this.#unsubscribe = ownership.subscribe({
      onChange: (change) =>
        void this.#remoteChange(change).catch((error) => this.#options.logger.error('could not read a changed task', error)),
      onCommand: () => this.#scheduleCommands(),
      onResync: () => {
        this.#scheduleCommands();
        void this.#resync().catch((error) => this.#options.logger.error('could not re-read watched tasks', error));
      },
    });
    await this.#enqueue(() => this.#sweep());
    this.#beatMs = this.#options.beatMs ?? Math.max(50, Math.floor(ownership.leaseMs / 3));
    this.#timer = setInterval(
      () => void this.#beat().catch((error) => this.#options.logger.error('cluster heartbeat failed', error)),
      this.#beatMs,
    );
    this.#timer.unref();
  }

  /** Tells `onLiveInstances` how many instances hold a lease; a failed count keeps the last one (logged). */
  async #countInstances(): Promise<void> {
    const { ownership, onLiveInstances, logger } = this.#options;
    if (!onLiveInstances || !ownership.liveInstances) return;
    try {
      onLiveInstances(await ownership.liveInstances());
    } catch (error) {
      logger.error('could not count the live instances', error);
    }
  }

  /** Stops beating and listening (the supervisor then stops; {@link leave} afterwards). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#unsubscribe?.();
    await this.#chain;
  }

  /** Gives up the lease at once so survivors adopt this instance's unfinished tasks without waiting. */
  async leave(): Promise<void> {
    try {
      if (!this.#mustRejoin) await this.#options.ownership.leave();
    } catch (error) {
      this.#options.logger.error('could not give up the lease (survivors adopt after it expires)', error);
    }
  }

  #enqueue(job: () => Promise<void>): Promise<void> {
    this.#chain = this.#chain.then(job).catch((error) => this.#options.logger.error('cluster maintenance failed', error));
    return this.#chain;
  }

  /**
   * Renews the lease on its own (not behind a long adoption sweep, which could
   * otherwise outlast the lease), then queues a sweep.
   */
  async #beat(): Promise<void> {
    // One beat at a time: a slow renewal or rejoin is not overtaken by the next tick.
    if (this.#stopped || this.#beating) return;
    this.#beating = true;
    try {
      await this.#beatOnce();
    } finally {
      this.#beating = false;
    }
  }

  async #beatOnce(): Promise<void> {
    const { ownership, supervisor, logger } = this.#options;
    if (this.#mustRejoin) {
      await this.#rejoin();
      return;
    }
    const sentAt = Date.now();
    // Past this point the lease cannot be proven. A stalled database answers nothing, not even an error: a
    // renewal still unanswered then counts as lost, so this instance stops its tasks by the time the lease ends,
    // before a survivor (which claims on its next beat after that) may adopt them, not
    // when the stall ends. Not earlier: on a busy pool a renewal waits its turn, and giving a lease up
    // early would make a loaded instance lose and re-adopt its own tasks over and over.
    const provableUntil = this.#renewedAt + ownership.leaseMs;
    let renewed: boolean | undefined;
    // Twice on an error: a pooled connection killed meanwhile (a blip) fails once, the retry gets a fresh one.
    for (let attempt = 1; attempt <= 2 && renewed === undefined && !this.#stopped && Date.now() < provableUntil; attempt++) {
      try {
        renewed = await answeredWithin(ownership.renewLease(), provableUntil - Date.now(), 'the lease renewal');
      } catch (error) {
        logger.error(`could not renew the instance lease (attempt ${attempt})`, error);
        publish('taskvisor:cluster.lease', () => ({ event: 'renewal-failed', instanceId: ownership.instanceId }));
      }
    }
    if (this.#stopped) return;
    if (renewed) {
      this.#renewedAt = sentAt;
      publish('taskvisor:cluster.lease', () => ({ event: 'renewed', instanceId: ownership.instanceId }));
      await this.#countInstances();
    }
    // Expired in the database, or the next beat would come after the lease ends: others may claim our
    // tasks, so stop running them here before they run twice (fencing refuses our writes anyway).
    else if (renewed === false || Date.now() + this.#beatMs >= this.#renewedAt + ownership.leaseMs) {
      logger.error(`instance ${ownership.instanceId} lost its lease: stopping its tasks here; survivors adopt them`);
      publish('taskvisor:cluster.lease', () => ({ event: 'lost', instanceId: ownership.instanceId }));
      supervisor.relinquishAll();
      this.#mustRejoin = true;
      // At once: a task created meanwhile would be owned by the expired id (and adopted while it runs here).
      await this.#rejoin();
      return;
    }
    if (!this.#sweepQueued) {
      this.#sweepQueued = true;
      void this.#enqueue(async () => {
        this.#sweepQueued = false;
        if (!this.#mustRejoin) await this.#sweep();
      });
    }
  }

  /** Registers under a new instance id; on failure (database unreachable) the next beat tries again. */
  async #rejoin(): Promise<void> {
    const { ownership, logger } = this.#options;
    const sentAt = Date.now();
    try {
      // Bounded too: a join stuck in a stalled database must not stop the beats that retry it.
      await answeredWithin(ownership.join(), ownership.leaseMs, 'joining the cluster');
    } catch (error) {
      logger.error('could not join the cluster again; retrying', error);
      return;
    }
    this.#mustRejoin = false;
    this.#renewedAt = sentAt;
    publish('taskvisor:cluster.lease', () => ({ event: 'joined', instanceId: ownership.instanceId }));
    logger.info(`joined the cluster again as instance ${ownership.instanceId}`);
  }

  /** Adopts orphaned tasks, then applies waiting commands. */
  async #sweep(): Promise<void> {
    if (this.#stopped) return;
    const { ownership, supervisor, logger } = this.#options;
    const claimed = await ownership.claimExpired();
    if (claimed.length > 0) {
      const { resumed, failed } = await supervisor.resumeAll(claimed, 'adopted');
      this.#adopted += claimed.length;
      publish('taskvisor:cluster.lease', () => ({ event: 'adopted', instanceId: ownership.instanceId, count: claimed.length }));
      logger.info(`adopted ${claimed.length} unfinished tasks of expired instances: ${resumed} resumed, ${failed} failed`);
    }
    await this.#applyCommands();
  }

  #scheduleCommands(): void {
    if (this.#commandsPending || this.#stopped) return;
    this.#commandsPending = true;
    void this.#enqueue(async () => {
      this.#commandsPending = false;
      await this.#applyCommands();
    });
  }

  async #applyCommands(): Promise<void> {
    const { ownership, supervisor, logger } = this.#options;
    for (const { taskId, command } of await ownership.takeCommands()) {
      // Only tasks running here: anything else finished or moved (moved commands are re-addressed by the store).
      if (!supervisor.isLive(taskId)) continue;
      try {
        if (command.type === 'cancel') await supervisor.cancel(taskId, command.principal);
        else await supervisor.update(taskId, command.principal, command.responses);
      } catch (error) {
        logger.error(`could not apply a routed ${command.type} to task ${taskId}`, error);
      }
    }
  }

  async #remoteChange(change: TaskChange): Promise<void> {
    // Our own writes reach local listens through the supervisor already.
    if (change.instanceId === this.#options.ownership.instanceId || this.#options.supervisor.isLive(change.taskId)) return;
    if (!this.#options.hub.watches(change.taskId)) {
      this.#published.delete(change.taskId);
      return;
    }
    const record = await this.#options.store.get(change.taskId);
    if (record) this.#publish(record);
  }

  async #resync(): Promise<void> {
    for (const taskId of [...this.#published.keys()]) if (!this.#options.hub.watches(taskId)) this.#published.delete(taskId);
    await Promise.all(
      this.#options.hub.watchedTaskIds().map(async (taskId) => {
        if (this.#options.supervisor.isLive(taskId)) return;
        const record = await this.#options.store.get(taskId);
        if (record) this.#publish(record);
      }),
    );
  }

  #publish(record: TaskRecord): void {
    const key = visibleKey(record);
    if (this.#published.get(record.taskId) === key) return;
    // A finished task changes no more (I-2) and the hub stops watching it: nothing to remember.
    if (isTerminal(record)) this.#published.delete(record.taskId);
    else this.#published.set(record.taskId, key);
    this.#options.hub.publishTask(record);
  }
}

/**
 * `operation`, or a rejection once `ms` passed without an answer (the
 * operation itself goes on; its late answer is ignored).
 */
async function answeredWithin<T>(operation: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: the database did not answer within ${Math.round(ms)} ms`)), Math.max(0, ms));
  });
  try {
    return await Promise.race([operation, late]);
  } finally {
    clearTimeout(timer);
    // A late failure of the abandoned operation is not unhandled.
    operation.catch(() => undefined);
  }
}
