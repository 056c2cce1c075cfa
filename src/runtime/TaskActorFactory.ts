/**
 * Builds task actors: the task machine, each actor wired to its own
 * persister and to its run (RunWiring: no child actor);
 * each started actor's ttl deadline goes to the process's one deadline timer
 * (LiveDeadlines).
 *
 * Everything it needs comes in as options (tools, clock, limits, store,
 * callbacks). It never reads the supervisor's maps.
 */
import { createActor, type InspectionEvent, type Snapshot } from 'xstate';
import { taskMachine, TASK_MACHINE_VERSION, type TaskInput } from '../../machines/task/index.js';
import type { TaskStore } from '../store/TaskStore.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import type { Logger } from './Logger.js';
import { deadlineOf } from './LiveDeadlines.js';
import { Persister, type PersisterOptions } from './Persister.js';
import { RunWiring, type TaskActor } from './RunWiring.js';
import { releaseStartOptions, sharedTaskSystem, type SharedSystemOptions } from './TaskActorSystem.js';
import type { ToolExecution } from './ToolExecution.js';

export type { TaskActor } from './RunWiring.js';

/** A built, not yet started, task actor and the persister that writes it. */
export interface TaskHandle {
  readonly actor: TaskActor;
  readonly persister: Persister;
}

export interface TaskActorFactoryOptions {
  store: TaskStore;
  tools: Pick<ToolRegistry, 'get'>;
  logger: Logger;
  now: () => number;
  /** Input requests a run may have outstanding at once. */
  maxPendingInputRequestsPerTask: number;
  /** Also receives every inspection event of every task actor (opt-in: costs nothing when absent). */
  inspect?: ((event: InspectionEvent) => void) | undefined;
  /** A task's record was stored (the one durable-publish path: Persister). */
  onWritten: (record: TaskRecord) => void;
  /** The store refused a task's write: another instance claimed it (fencing). */
  onFenced: (taskId: string) => void;
  /** Where a started actor's ttl deadline goes: the one timer that sends it `DEADLINE` (T-26). */
  deadlines: { add(taskId: string, deadline: number | null): void };
}

export class TaskActorFactory {
  private readonly runs: RunWiring;
  /** The user's inspector, wrapped once (see `inspection`). */
  private userInspect: ((event: InspectionEvent) => void) | undefined;
  /** Without an inspector: every task actor's `parent`, the one system they share (TaskActorSystem). */
  private readonly shared = sharedTaskSystem();

  /** The options of every task's persister: one object and one `onError` closure, not one per live task. */
  private readonly persisterOptions: PersisterOptions;

  constructor(private readonly options: TaskActorFactoryOptions) {
    this.runs = new RunWiring({
      ...options,
      onActorError: (error, taskId) => options.logger.error(`task ${taskId} actor failed`, error),
    });
    this.persisterOptions = {
      store: options.store,
      machineVersion: TASK_MACHINE_VERSION,
      onError: (error, taskId) => options.logger.error(`could not store task ${taskId}; retrying`, error),
      onFenced: options.onFenced,
      onWritten: options.onWritten,
    };
  }

  /**
   * A new task's actor, constructed, not started: its run starts with it,
   * after its record is stored (I-1). `execution` is a run already under way
   * (`auto` promotion) for the task to adopt.
   */
  create(input: TaskInput, execution?: ToolExecution): TaskHandle {
    const persister = this.newPersister(1);
    const actor = createActor(taskMachine, { input, ...this.inspection });
    this.runs.add(input.taskId, actor, persister, execution);
    return { actor, persister };
  }

  /**
   * The actor of a stored unfinished task, restored from its snapshot, not
   * started. A snapshot the machine cannot restore throws here (recovery then
   * fails the task), never starts into an actor in error that xstate would
   * rethrow from a timer.
   */
  restore(record: TaskRecord): TaskHandle {
    const persister = this.newPersister(record.version);
    const actor = createActor(taskMachine, {
      // Cast: a stored snapshot is plain JSON, not xstate's Snapshot type; xstate checks it as it restores
      // and throwIfUnrestorable (below) reports one it cannot use.
      snapshot: record.snapshot as Snapshot<unknown>,
      // xstate restores the snapshot and ignores `input`, but its options type requires one for a
      // machine with input (statelyai/xstate#4915): the task's own, as far as the record shows it.
      input: inputOf(record),
      ...this.inspection,
    });
    throwIfUnrestorable(actor);
    this.runs.add(record.taskId, actor, persister);
    return { actor, persister };
  }

  /**
   * Starts a built actor whose record (`stored`) is in the store: from now on
   * each change is written, and its run starts (or goes on, adopted).
   * `projected`: `stored` was projected from this actor as it is (a new
   * task), so its unchanged start writes nothing.
   */
  start({ actor, persister }: TaskHandle, stored: TaskRecord, projected = false): void {
    // The run's wiring observes the actor and tells the persister first (one observer per actor).
    persister.attach(actor, stored, projected, false);
    this.runs.start(stored.taskId, actor, persister);
    releaseStartOptions(actor);
    // After start: a deadline already past is sent on the timer's next turn, to a running actor (I-8).
    this.options.deadlines.add(stored.taskId, deadlineOf(actor));
  }

  /** Forgets a built actor that will never start (its record could not be stored; the caller stops its run). */
  discard(taskId: string): void {
    this.runs.discard(taskId);
  }

  /** Aborts every run (the server stops). */
  abortAll(reason: string): void {
    this.runs.abortAll(reason);
  }

  private newPersister(version: number): Persister {
    return new Persister(this.persisterOptions, version);
  }

  /**
   * The `inspect` option of every task actor: the user's inspector when one is
   * configured (a throw is logged, never reaches xstate), and then each actor
   * is a root with a system of its own (inspection is per system); else no
   * inspector and the one shared system — xstate then delivers no inspection
   * events (the persister subscribes instead).
   */
  private get inspection(): { inspect: (event: InspectionEvent) => void } | SharedSystemOptions {
    const extra = this.options.inspect;
    if (!extra) return this.shared;
    this.userInspect ??= (event) => {
      try {
        extra(event);
      } catch (error) {
        this.options.logger.error('inspector failed', error);
      }
    };
    return { inspect: this.userInspect };
  }
}

/**
 * A task actor's input as far as the stored record shows it (its args are not kept): what a fresh actor
 * built from the record starts with (recovery), and what a restore passes for xstate to ignore.
 */
export function inputOf(record: TaskRecord): TaskInput {
  return {
    taskId: record.taskId,
    owner: record.owner,
    tool: record.tool,
    args: {},
    now: record.createdAt,
    ttlMs: record.ttlMs,
    ...(record.pollIntervalMs !== undefined ? { pollIntervalMs: record.pollIntervalMs } : {}),
    ...(record.statusMessage !== undefined ? { statusMessage: record.statusMessage } : {}),
    ...(record.trace !== undefined ? { trace: record.trace } : {}),
  };
}

/** Throws the error of an actor whose stored snapshot could not be restored (before it is started). */
export function throwIfUnrestorable(actor: { getSnapshot(): { status: string; error?: unknown } }): void {
  const snapshot = actor.getSnapshot();
  if (snapshot.status === 'error') throw snapshot.error instanceof Error ? snapshot.error : new Error(String(snapshot.error));
}
