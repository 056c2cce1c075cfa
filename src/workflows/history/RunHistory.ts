/**
 * Run history, as muster offers it (its `core_workflow_execution_*` tools): every workflow run —
 * a task or a synchronous call — is one record in the configured task store,
 * with its step records, readable per principal through
 * `core_workflow_execution_list` / `core_workflow_execution_get` and by the
 * admin through `taskvisor workflows runs`.
 *
 * No second store: a run made as a task is its task record (the checkpoint
 * holds the steps); a synchronous run gets a record of its own, marked
 * `historyOnly` (never a task: `tasks/*` do not know it), written live like a
 * task's (at each step's start and end) and with `ttlMs` = the retention, so
 * the task reaper purges it too. Retention: runs that ended more than
 * `retentionMs` ago are hidden at once and deleted by {@link RunHistory.prune},
 * as are the oldest finished runs beyond `maxRuns`.
 */
import type { TaskError, TaskStatus } from '../../../machines/task/index.js';
import type { JsonObject } from '../../core/json.js';
import type { Logger } from '../../runtime/Logger.js';
import type { TaskStore } from '../../store/TaskStore.js';
import type { TaskRecord } from '../../tasks/TaskRecord.js';
import type { StepRecord, WorkflowCheckpoint } from '../engine/checkpoint.js';

/** The most a record keeps of one value (muster's payload guard, 256 KiB of JSON). */
export const MAX_RECORDED_VALUE_BYTES = 256 * 1024;

/** muster's default retention: 21 days. */
export const DEFAULT_HISTORY_RETENTION_MS = 21 * 24 * 60 * 60 * 1000;
/** muster's default bound: the newest 10,000 runs. */
export const DEFAULT_HISTORY_MAX_RUNS = 10_000;

/** A run's status in the history: muster's three, plus what a task run can also be. */
export type RunStatus = 'inprogress' | 'input_required' | 'completed' | 'failed' | 'cancelled';
export const RUN_STATUSES: readonly RunStatus[] = ['inprogress', 'input_required', 'completed', 'failed', 'cancelled'];

/** One run in a listing (muster's `core_workflow_execution_list` item). */
export interface RunSummary {
  execution_id: string;
  workflow_name: string;
  status: RunStatus;
  /** Whether the run is (or was) a task: its id is then a task id too. */
  task: boolean;
  started_at: string;
  completed_at?: string;
  duration_ms: number;
  step_count: number;
  error?: string;
}

/** One step of a run (muster's `WorkflowExecutionStep`, plus taskvisor's phase and attempts). */
export interface RunStep {
  step_id: string;
  phase: 'main' | 'onFailure';
  tool?: string;
  status: StepRecord['status'];
  started_at: string;
  completed_at?: string;
  duration_ms?: number;
  input?: unknown;
  result?: unknown;
  error?: string;
  attempts?: number;
  /** The input or result was too big to keep (over 256 KiB of JSON): a marker stands in for it. */
  truncated?: true;
}

/** One run in full (muster's `core_workflow_execution_get`). */
export interface RunDetail extends RunSummary {
  input: unknown;
  result?: unknown;
  steps?: RunStep[];
  definition_hash?: string;
}

export interface RunListQuery {
  /** Only this principal's runs; absent = every principal's (the admin view). */
  owner?: string;
  workflow?: string;
  status?: RunStatus;
  /** Default 50, at most 1000 (muster's). */
  limit?: number;
  offset?: number;
}

export interface RunList {
  executions: RunSummary[];
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

export interface RunHistoryOptions {
  store: TaskStore;
  /** How long a finished run stays. Default 21 days. */
  retentionMs?: number;
  /** How many finished runs the store keeps at most (the oldest go first). Default 10,000. */
  maxRuns?: number;
  logger?: Logger;
  now?: () => number;
}

/** What a synchronous run writes as it goes. */
export interface RunState {
  status: TaskStatus;
  checkpoint: WorkflowCheckpoint;
  statusMessage?: string;
  result?: JsonObject;
  error?: TaskError;
}

/** Writes one synchronous run's history record; every write is queued behind the previous one. */
export interface RunRecorder {
  readonly executionId: string;
  save(state: RunState): Promise<void>;
  /** Removes the record: the run became a task (its task record is its history) or unwound for MRTR input (the retry is recorded). */
  discard(): Promise<void>;
}

/** A synchronous run's result over 256 KiB of JSON is kept as a marker (muster's payload guard); the caller got it whole. */
function guardedResult(result: JsonObject): JsonObject {
  const bytes = Buffer.byteLength(JSON.stringify(result));
  return bytes <= MAX_RECORDED_VALUE_BYTES ? result : { truncated: true, bytes, limit: MAX_RECORDED_VALUE_BYTES };
}

const isWorkflowRun = (record: TaskRecord): boolean =>
  (record.checkpoint as Partial<WorkflowCheckpoint> | undefined)?.kind === 'taskvisor.workflow';

const TERMINAL = new Set<TaskStatus>(['completed', 'failed', 'cancelled']);

export class RunHistory {
  readonly retentionMs: number;
  readonly maxRuns: number;
  private readonly now: () => number;
  /** Runs recorded since the last prune, plus what that prune left: a prune runs only when this passes `maxRuns`. */
  private known = Number.POSITIVE_INFINITY;
  private pruning: Promise<number> | undefined;

  constructor(private readonly options: RunHistoryOptions) {
    this.retentionMs = options.retentionMs ?? DEFAULT_HISTORY_RETENTION_MS;
    this.maxRuns = options.maxRuns ?? DEFAULT_HISTORY_MAX_RUNS;
    this.now = options.now ?? Date.now;
    if (!(this.retentionMs > 0)) throw new RangeError('historyRetentionMs must be positive');
    if (!Number.isInteger(this.maxRuns) || this.maxRuns < 1) throw new RangeError('historyMaxRuns must be a positive integer');
  }

  /** The recorder of a new synchronous run of `tool` for `principal`. */
  recorder(executionId: string, principal: string, tool: string): RunRecorder {
    let version = 0;
    let created = false;
    let discarded = false;
    let queue: Promise<void> = Promise.resolve();
    const createdAt = this.now();
    const enqueue = (write: () => Promise<void>): Promise<void> => {
      queue = queue.then(write).catch((error: unknown) => {
        // History never fails a run: the run's own answer matters more (muster logs too).
        this.options.logger?.error(`could not record workflow run ${executionId}`, error);
      });
      return queue;
    };
    return {
      executionId,
      save: (state) =>
        enqueue(async () => {
          if (discarded) return;
          version++;
          const record: TaskRecord = {
            taskId: executionId,
            owner: principal,
            tool,
            status: state.status,
            ...(state.statusMessage !== undefined ? { statusMessage: state.statusMessage } : {}),
            createdAt,
            lastUpdatedAt: Math.max(createdAt, this.now()),
            // The reaper purges it like a task at the end of its life: the retention.
            ttlMs: this.retentionMs,
            ...(state.result !== undefined ? { result: guardedResult(state.result) } : {}),
            ...(state.error !== undefined ? { error: state.error } : {}),
            version,
            machineVersion: 0,
            checkpoint: state.checkpoint,
            historyOnly: true,
          };
          if (created) await this.options.store.put(record);
          else {
            await this.options.store.create(record);
            created = true;
            this.known++;
          }
          if (TERMINAL.has(state.status)) void this.pruneIfFull();
        }),
      discard: () =>
        enqueue(async () => {
          discarded = true;
          if (created) await this.options.store.delete(executionId);
        }),
    };
  }

  /** Counts a run that is a task (its record is written by the task itself). */
  noteTaskRun(): void {
    this.known++;
    void this.pruneIfFull();
  }

  /** The runs `query` selects, newest first, paged. */
  async list(query: RunListQuery = {}): Promise<RunList> {
    const limit = Math.min(Math.max(1, Math.floor(query.limit ?? 50)), 1000);
    const offset = Math.max(0, Math.floor(query.offset ?? 0));
    const now = this.now();
    const runs = (await this.options.store.list(query.owner !== undefined ? { owner: query.owner } : {}))
      .filter((record) => isWorkflowRun(record) && this.retained(record, now))
      .map((record) => summaryOf(record, now))
      .filter(
        (run) =>
          (query.workflow === undefined || run.workflow_name === query.workflow) &&
          (query.status === undefined || run.status === query.status),
      );
    return {
      executions: runs.slice(offset, offset + limit),
      total: runs.length,
      limit,
      offset,
      has_more: offset + limit < runs.length,
    };
  }

  /**
   * One run, or `undefined` when it is unknown, not a workflow run, past its
   * retention, or another principal's (all the same answer, as for tasks: I-7).
   */
  async get(executionId: string, owner?: string): Promise<RunDetail | undefined> {
    if (typeof executionId !== 'string' || !/^[A-Za-z0-9_-]{1,200}$/.test(executionId)) return undefined;
    // Ownership before loading: another principal's record is never read or parsed (as tasks/get: another principal's id is unknown, I-7).
    const record = await this.options.store.get(executionId, owner);
    const now = this.now();
    if (!record || !isWorkflowRun(record) || (owner !== undefined && record.owner !== owner) || !this.retained(record, now))
      return undefined;
    return detailOf(record, now);
  }

  /**
   * Deletes finished runs past the retention and the oldest finished runs
   * beyond `maxRuns`; resolves how many went. Runs still going are never
   * deleted. One prune at a time.
   */
  prune(): Promise<number> {
    this.pruning ??= this.pruneNow().finally(() => (this.pruning = undefined));
    return this.pruning;
  }

  /**
   * Prunes now and then every `intervalMs` (default: the retention, at most
   * an hour), so runs past their retention leave the store even when no new
   * run comes; returns the function that stops it.
   */
  sweep(intervalMs = Math.min(this.retentionMs, 3_600_000)): () => void {
    const run = () =>
      void this.prune().catch((error: unknown) => this.options.logger?.error('could not prune the workflow run history', error));
    run();
    const timer = setInterval(run, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  private async pruneIfFull(): Promise<void> {
    if (this.known <= this.maxRuns) return;
    try {
      await this.prune();
    } catch (error) {
      this.options.logger?.error('could not prune the workflow run history', error);
    }
  }

  private async pruneNow(): Promise<number> {
    const now = this.now();
    const runs = (await this.options.store.list()).filter(isWorkflowRun);
    // Down to 90% of the bound when it is passed, so a full history is not scanned again on every run.
    const keep = this.maxRuns - Math.floor(this.maxRuns / 10);
    let kept = 0;
    let deleted = 0;
    for (const record of runs) {
      const finished = TERMINAL.has(record.status);
      const over = finished && (!this.retained(record, now) || kept >= keep);
      if (over && (await this.options.store.delete(record.taskId))) deleted++;
      else if (!over) kept++;
    }
    this.known = kept;
    return deleted;
  }

  private retained(record: TaskRecord, now: number): boolean {
    return !TERMINAL.has(record.status) || record.lastUpdatedAt + this.retentionMs > now;
  }
}

/** A run's history status: a completed task or call whose result is `isError` is a failed run (muster records those completed). */
function statusOf(record: TaskRecord): RunStatus {
  switch (record.status) {
    case 'working':
      return 'inprogress';
    case 'completed':
      return record.result?.isError === true ? 'failed' : 'completed';
    default:
      return record.status;
  }
}

function errorOf(record: TaskRecord): string | undefined {
  if (record.status === 'failed') return record.error?.message ?? record.statusMessage;
  if (record.status !== 'completed' || record.result?.isError !== true) return undefined;
  const content = record.result.content;
  const text = Array.isArray(content)
    ? (content as Array<{ type?: unknown; text?: unknown }>).find((block) => block.type === 'text' && typeof block.text === 'string')?.text
    : undefined;
  return typeof text === 'string' ? text : 'The run returned an error result';
}

function summaryOf(record: TaskRecord, now: number): RunSummary {
  const checkpoint = record.checkpoint as WorkflowCheckpoint;
  const started = checkpoint.startedAt ?? new Date(record.createdAt).toISOString();
  const finished = TERMINAL.has(record.status);
  const ended = finished ? record.lastUpdatedAt : now;
  const error = errorOf(record);
  return {
    execution_id: record.taskId,
    workflow_name: checkpoint.workflow,
    status: statusOf(record),
    task: record.historyOnly !== true,
    started_at: started,
    ...(finished ? { completed_at: new Date(record.lastUpdatedAt).toISOString() } : {}),
    duration_ms: Math.max(0, ended - Date.parse(started)),
    step_count: checkpoint.steps.length,
    ...(error !== undefined ? { error } : {}),
  };
}

function detailOf(record: TaskRecord, now: number): RunDetail {
  const checkpoint = record.checkpoint as WorkflowCheckpoint;
  return {
    ...summaryOf(record, now),
    input: checkpoint.input ?? null,
    ...(record.result !== undefined ? { result: record.result } : {}),
    steps: checkpoint.steps.map((step) =>
      // A run cancelled while passivated (waiting for input, or in a durable retry backoff) ended without its
      // handler running (T-24, the idle cancel): its waiting step shows as a live cancel records it.
      record.status === 'cancelled' && step.status === 'running' ? stepOf({ ...step, status: 'cancelled' }) : stepOf(step),
    ),
    ...(checkpoint.definitionHash !== undefined ? { definition_hash: checkpoint.definitionHash } : {}),
  };
}

function stepOf(step: StepRecord): RunStep {
  return {
    step_id: step.id,
    phase: step.phase,
    ...(step.tool !== undefined ? { tool: step.tool } : {}),
    status: step.status,
    started_at: step.startedAt,
    ...(step.endedAt !== undefined ? { completed_at: step.endedAt } : {}),
    ...(step.durationMs !== undefined ? { duration_ms: step.durationMs } : {}),
    ...(step.input !== undefined ? { input: step.input } : {}),
    ...(step.result !== undefined ? { result: step.result } : {}),
    ...(step.error !== undefined ? { error: step.error.message } : {}),
    ...(step.attempts !== undefined ? { attempts: step.attempts } : {}),
    ...(step.truncated ? { truncated: true as const } : {}),
  };
}
