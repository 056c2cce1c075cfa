/**
 * One workflow run: the tool handler of a `workflow_<name>` tool. It drives
 * the workflow machine (machines/workflow), whose invoked `runStep` actor is
 * provided here: templates, conditions, the tool call through the
 * {@link ToolInvoker}, input requests.
 *
 * Durability: the machine's persisted snapshot and the step records are the
 * task's checkpoint (`ctx.saveCheckpoint`), written when a step starts and
 * when it ends; a step starts only after its start record is stored. After a
 * restart the task is resumed (`resume: 'resume'`) from that checkpoint: the
 * step that was in flight runs again (at-least-once per step), except a step
 * waiting out a durable retry backoff, which goes on at its next attempt
 * (see {@link WorkflowRun.durableBackoff}).
 */
import { createActor, fromPromise, type Actor, type InspectionEvent, type Snapshot } from 'xstate';
import {
  WORKFLOW_MACHINE_VERSION,
  workflowMachine,
  type StepRunInput,
  type StepRunOutput,
  type WorkflowContext,
} from '../../../machines/workflow/index.js';
import type { JsonObject } from '../../../machines/task/index.js';
import { isInputRequiredSignal } from '../../runtime/ToolExecution.js';
import type { ElicitParams, ToolContext, ToolHandler, ToolResult } from '../../tools/ToolDefinition.js';
import type { WorkflowCondition, WorkflowDefinition, WorkflowStep, WorkflowSubStep } from '../model/definition.js';
import type { StepBackoff, StepRecord, WorkflowCheckpoint } from './checkpoint.js';
import { render, TemplateError, type TemplateEngine, type TemplateScope } from '../templates/render.js';
import type { ToolInvoker } from './ToolInvoker.js';
import { parseDuration, showDuration } from '../model/duration.js';
import { toolsCalledBy } from '../model/toolsCalledBy.js';
import { ancestors, dependencies, isDag } from '../model/dag.js';
import { createHash } from 'node:crypto';
import { publish } from '../../core/diagnostics.js';
import { newTaskId } from '../../core/ids.js';
import { MAX_RECORDED_VALUE_BYTES, type RunHistory, type RunRecorder, type RunState } from '../history/RunHistory.js';

export type { StepBackoff, StepRecord, WorkflowCheckpoint } from './checkpoint.js';

type WorkflowActor = Actor<typeof workflowMachine>;

/** Step outcome inside a composite step. */
type Outcome =
  | { status: 'completed'; result: unknown }
  | { status: 'skipped' }
  | { status: 'failed'; message: string; code?: number; result?: unknown; kind?: FailureKind };

/** What made a step fail, for `retry.on`: a thrown error, an `isError` result, or its timeout. */
type FailureKind = 'error' | 'isError' | 'timeout' | 'invalid';

/**
 * What later steps see of a step: its result; for a failed step its error
 * result, or — when it has none (a thrown error, a timeout) — muster's
 * `{ error, success: false, isError: true }`; null when skipped.
 */
const resultOf = (outcome: Outcome): unknown =>
  outcome.status === 'completed' ? outcome.result : outcome.status === 'failed' ? failedValue(outcome) : null;

const failedValue = (outcome: Extract<Outcome, { status: 'failed' }>): unknown =>
  outcome.result ?? { error: outcome.message, success: false, isError: true };

class StepFailure extends Error {
  constructor(
    message: string,
    readonly code?: number,
    readonly result?: unknown,
  ) {
    super(message);
  }
}

/** The value `results.<id>` holds for a tool's CallToolResult: structured content, else JSON text, else text. */
export function resultValue(result: JsonObject): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const content = Array.isArray(result.content) ? (result.content as Array<{ type?: string; text?: unknown }>) : [];
  const texts = content.filter((block) => block.type === 'text' && typeof block.text === 'string').map((block) => block.text as string);
  if (texts.length === 0) return result;
  const text = texts.join('\n');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function errorText(result: JsonObject): string {
  const value = resultValue(result);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const now = () => new Date().toISOString();

/** What a workflow handler needs from the runtime. */
export interface WorkflowRunnerDeps {
  invoker: ToolInvoker;
  /** Receives the workflow actor's inspection events (the runtime's inspector or trace). */
  inspect?: (event: InspectionEvent) => void;
  /** Where every run is recorded (item 7); without it a synchronous run leaves no record. */
  history?: RunHistory;
  /** The workflow's tool name (what a history record names). */
  toolName?: string;
}

/** `_meta` key of a synchronous run's result naming its record in the run history. */
export const EXECUTION_ID_META_KEY = 'io.taskvisor/executionId';

/** The tool handler running `definition`. */
export function workflowHandler(definition: WorkflowDefinition, deps: WorkflowRunnerDeps): ToolHandler {
  return (args, ctx) => new WorkflowRun(pinnedDefinition(ctx.checkpoint) ?? definition, deps, args, ctx).run();
}

/** The definition a checkpoint pinned, when it has one. */
function pinnedDefinition(checkpoint: unknown): WorkflowDefinition | undefined {
  const c = checkpoint as Partial<WorkflowCheckpoint> | undefined;
  if (!c || c.kind !== 'taskvisor.workflow' || !c.definition || !Array.isArray(c.definition.steps)) return undefined;
  return c.definition;
}

/** The hash pinned next to a definition: sha256 of its JSON. */
export const definitionHash = (definition: WorkflowDefinition): string =>
  createHash('sha256').update(JSON.stringify(definition)).digest('hex');

/** A step's or the run's time limit ran out. */
class TimeLimit extends Error {
  override name = 'TimeoutError';
}

/** A signal that fires with the parent, or after `ms` with a {@link TimeLimit} reason. */
function limited(parent: AbortSignal, ms: number, message: string): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent.reason);
  if (parent.aborted) controller.abort(parent.reason);
  else parent.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => controller.abort(new TimeLimit(message)), Math.max(0, ms));
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      parent.removeEventListener('abort', onAbort);
    },
  };
}

/** `promise`, or a rejection with the signal's reason as soon as it fires (a callee that ignores its signal cannot hold the step). */
function raced<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

const sleep = (ms: number, signal: AbortSignal) => raced(new Promise<void>((resolve) => setTimeout(resolve, ms).unref?.()), signal);

/** A top-level (or onFailure) step as `runStep` runs it: `deadline` (epoch ms) is when the workflow `timeout` ends it, Infinity without one. */
interface TopStep {
  deadline: number;
}

const ms = (value: string | number | undefined, fallback: number): number => {
  if (value === undefined) return fallback;
  const parsed = parseDuration(value);
  return typeof parsed === 'number' ? parsed : fallback;
};

class WorkflowRun {
  private actor: WorkflowActor | undefined;
  private records: StepRecord[] = [];
  private saving: Promise<void> = Promise.resolve();
  /** A non-JSON error that broke the step executor (e.g. the MRTR input signal): rethrown as is. */
  private fatal: unknown;
  /** The statusMessage naming the step in flight; a callee's progress is appended to it. */
  private stepStatus = '';
  private readonly byId = new Map<string, { step: WorkflowStep | WorkflowSubStep; phase: 'main' | 'onFailure' }>();
  /** DAG runs (`needs:`): each main step's dependencies, what it may see, and the steps this process runs now. */
  private readonly dag: boolean;
  private readonly needs: Map<string, string[]>;
  private readonly visible: Map<string, Set<string>>;
  private readonly inFlight = new Set<string>();
  /**
   * The DAG steps' signal: fires with the run's (a cancel) and when the run
   * ends while branches are still in flight (the executor broke, or a
   * synchronous call unwound for MRTR input), so no sibling branch outlives
   * its run.
   */
  private readonly branches = new AbortController();
  private readonly hash: string;
  /** When the run started; restored from the checkpoint after a restart. */
  private startedAt = now();
  /** The run's history record while it is not a task (a synchronous call, or an `auto` call not promoted yet). */
  private recorder: RunRecorder | undefined;
  /** Restored records of steps that were waiting out a durable retry backoff, by `phase:id`: taken by their step when it runs again. */
  private readonly backoffs = new Map<string, StepRecord>();

  constructor(
    private readonly definition: WorkflowDefinition,
    private readonly deps: WorkflowRunnerDeps,
    private readonly input: JsonObject,
    private readonly ctx: ToolContext,
  ) {
    for (const step of definition.steps) this.byId.set(step.id, { step, phase: 'main' });
    for (const step of definition.onFailure ?? []) this.byId.set(step.id, { step, phase: 'onFailure' });
    this.hash = definitionHash(definition);
    this.dag = isDag(definition.steps);
    this.needs = dependencies(definition.steps);
    this.visible = ancestors(definition.steps);
  }

  /**
   * Runs the workflow and records it in the run history: a task run is its
   * task record; a synchronous run writes a record of its own as it goes,
   * ending `completed` (an `isError` result shows as a failed run), `failed`
   * (the executor broke) or `cancelled`.
   */
  async run(): Promise<ToolResult> {
    const history = this.deps.history;
    if (history && this.ctx.taskId === undefined) {
      this.recorder = history.recorder(newTaskId(), this.ctx.principal, this.deps.toolName ?? this.definition.name);
    } else if (history && !this.ctx.checkpoint) history.noteTaskRun();
    try {
      const result = await this.execute();
      // Cast: ToolResult is a (public) interface, so not assignable to JsonObject although it is JSON.
      await this.recordEnd({ status: 'completed', result: result as unknown as JsonObject });
      return this.recorder ? { ...result, _meta: { ...result._meta, [EXECUTION_ID_META_KEY]: this.recorder.executionId } } : result;
    } catch (error) {
      if (isInputRequiredSignal(error)) {
        // An MRTR round: the call is answered input_required and retried as a new run, which is recorded.
        await this.recorder?.discard();
      } else if (this.ctx.signal.aborted && this.actor?.getSnapshot().value === 'cancelled') {
        await this.recordEnd({ status: 'cancelled' });
      } else {
        const message = error instanceof Error ? error.message : String(error);
        await this.recordEnd({ status: 'failed', error: { code: -32603, message } });
      }
      throw error;
    }
  }

  /** The last write of a synchronous run's record. */
  private async recordEnd(end: Omit<RunState, 'checkpoint'>): Promise<void> {
    if (!this.recorder) return;
    if (this.ctx.taskId === undefined) return this.recorder.save({ ...end, checkpoint: this.checkpointNow() });
    // Promoted to a task: the task record is the run's history.
    await this.recorder.discard();
    this.recorder = undefined;
  }

  private async execute(): Promise<ToolResult> {
    // muster's availability rule: a new run whose steps (or onFailure steps, or tool conditions) name a
    // tool that does not exist is refused before anything runs. A resumed run goes on: its steps ran.
    if (!this.restorable()) {
      const missing = toolsCalledBy(this.definition).filter((tool) => !this.deps.invoker.has(tool));
      if (missing.length > 0) {
        const text = `Workflow ${this.definition.name} is not available: missing tools ${missing.join(', ')}`;
        return {
          content: [{ type: 'text', text }],
          isError: true,
          structuredContent: { workflow: this.definition.name, status: 'failed', error: { message: text }, missingTools: missing },
        };
      }
    }
    const machine = workflowMachine.provide({
      actors: {
        runStep: fromPromise<StepRunOutput, StepRunInput>(({ input, signal }) => this.runTopStep(input, signal)),
      },
    });
    const input = {
      workflow: this.definition.name,
      stepIds: this.definition.steps.map((step) => step.id),
      ...(this.dag ? { dag: true } : {}),
      onFailureIds: (this.definition.onFailure ?? []).map((step) => step.id),
      ...(this.ctx.taskId !== undefined ? { taskId: this.ctx.taskId } : {}),
    };
    const restored = this.restorable();
    if (restored) {
      if (restored.startedAt) this.startedAt = restored.startedAt;
      // The step that was in flight when the server died runs again (at-least-once): its record says so.
      // One waiting between attempts in a durable backoff was not working: it goes on (runStep takes its record).
      this.records = restored.steps.map((record) => {
        if (record.status !== 'running') return record;
        if (record.backoff) {
          const kept = { ...record };
          this.backoffs.set(`${kept.phase}:${kept.id}`, kept);
          return kept;
        }
        return {
          ...record,
          status: 'interrupted',
          endedAt: now(),
          error: { message: 'The server stopped during this step; it runs again' },
        };
      });
      this.actor = createActor(machine, {
        snapshot: restored.snapshot as Snapshot<unknown>,
        // xstate restores the snapshot and ignores `input`, but its options type requires one for a
        // machine with input (statelyai/xstate#4915): the same input a fresh run gets.
        input,
        ...(this.deps.inspect ? { inspect: this.deps.inspect } : {}),
      });
    } else {
      this.actor = createActor(machine, {
        input,
        ...(this.deps.inspect ? { inspect: this.deps.inspect } : {}),
      });
    }
    const actor = this.actor;
    const finished = new Promise<void>((resolve) => {
      actor.subscribe({
        next: (snapshot) => {
          // Every transition (a step ended, the run ended) is checkpointed.
          // Not awaited here: the next persist() chains on it (and the run awaits its own last one).
          void this.persist().catch(() => {});
          if (snapshot.value === 'scheduling') queueMicrotask(() => this.schedule());
          if (snapshot.status === 'done') resolve();
        },
        error: () => resolve(),
      });
    });
    const onAbort = () => {
      actor.send({ type: 'CANCEL' });
      this.branches.abort(this.ctx.signal.reason);
    };
    this.ctx.signal.addEventListener('abort', onAbort, { once: true });
    try {
      actor.start();
      if (this.ctx.signal.aborted) onAbort();
      // A restored DAG run starts again the steps that were in flight, then what is ready.
      this.schedule();
      await finished;
      if (actor.getSnapshot().value === 'cancelled') {
        // The aborted step may not have recorded its end yet: the record says how the run left it.
        for (const record of this.records) {
          if (record.status === 'running') Object.assign(record, { status: 'cancelled', endedAt: now() });
        }
      }
      await this.persist();
      return await this.finish(actor.getSnapshot());
    } finally {
      this.ctx.signal.removeEventListener('abort', onAbort);
      this.branches.abort(this.ctx.signal.reason ?? new DOMException('The workflow run ended', 'AbortError'));
      actor.stop();
    }
  }

  /** The checkpoint to resume from, when there is one and it fits this definition. */
  private restorable(): WorkflowCheckpoint | undefined {
    const checkpoint = this.ctx.checkpoint as Partial<WorkflowCheckpoint> | undefined;
    if (!checkpoint || checkpoint.kind !== 'taskvisor.workflow') return undefined;
    if (checkpoint.machineVersion !== WORKFLOW_MACHINE_VERSION) {
      throw new Error(
        `Workflow ${this.definition.name}: its checkpoint was written by workflow machine version ${checkpoint.machineVersion}, this server runs ${WORKFLOW_MACHINE_VERSION}`,
      );
    }
    const context = (checkpoint.snapshot as { context?: WorkflowContext } | undefined)?.context;
    const ids = this.definition.steps.map((step) => step.id).join(',');
    const failIds = (this.definition.onFailure ?? []).map((step) => step.id).join(',');
    if (!context || context.stepIds.join(',') !== ids || context.onFailureIds.join(',') !== failIds) {
      throw new Error(
        `Workflow ${this.definition.name} changed since this run was checkpointed (its steps differ); the run cannot be resumed`,
      );
    }
    return checkpoint as WorkflowCheckpoint;
  }

  /** The checkpoint of the run as it stands. */
  private checkpointNow(): WorkflowCheckpoint {
    return {
      kind: 'taskvisor.workflow',
      workflow: this.definition.name,
      machineVersion: WORKFLOW_MACHINE_VERSION,
      snapshot: this.actor?.getPersistedSnapshot(),
      steps: this.records,
      definition: this.definition,
      definitionHash: this.hash,
      startedAt: this.startedAt,
      input: this.input,
    };
  }

  /**
   * Queues a checkpoint write of the current state; resolves when it (and
   * earlier ones) are stored. While the run is not a task, its history record
   * gets the same write; once it became a task (an `auto` call promoted), the
   * task record is its history and the synchronous record goes.
   */
  private persist(): Promise<void> {
    this.saving = this.saving
      .catch(() => {})
      .then(async () => {
        const checkpoint = this.checkpointNow();
        await this.ctx.saveCheckpoint(checkpoint);
        if (!this.recorder) return;
        if (this.ctx.taskId === undefined) await this.recorder.save({ status: 'working', checkpoint, statusMessage: this.stepStatus });
        else {
          await this.recorder.discard();
          this.recorder = undefined;
        }
      });
    return this.saving;
  }

  private get engine(): TemplateEngine {
    return this.definition.templates ?? 'jsonata';
  }

  private scope(results: Record<string, unknown>, vars: Record<string, unknown> = {}): TemplateScope {
    return { input: this.input, results: withFlatNames(this.definition, results), vars };
  }

  /**
   * DAG runs: starts every main step whose needs have all ended, up to the
   * workflow's `maxConcurrency` — none after a hard failure; steps the
   * machine lists as running but this process does not run (a restored
   * checkpoint) run again from their start (at-least-once).
   */
  private schedule(): void {
    const actor = this.actor;
    if (!actor) return;
    const snapshot = actor.getSnapshot();
    if (snapshot.status !== 'active' || snapshot.value !== 'scheduling') return;
    const context = snapshot.context;
    for (const id of context.running ?? []) if (!this.inFlight.has(id)) this.startDagStep(id, false);
    if (context.failure) return;
    const limit = this.definition.maxConcurrency ?? Number.POSITIVE_INFINITY;
    for (const step of this.definition.steps) {
      if (this.inFlight.size >= limit) return;
      if (Object.hasOwn(context.outcomes, step.id) || this.inFlight.has(step.id)) continue;
      if (!(this.needs.get(step.id) ?? []).every((need) => Object.hasOwn(context.outcomes, need))) continue;
      this.startDagStep(step.id, true);
    }
  }

  private startDagStep(stepId: string, announce: boolean): void {
    const actor = this.actor!;
    this.inFlight.add(stepId);
    if (announce) actor.send({ type: 'STEP_STARTED', stepId });
    const { results, outcomes } = actor.getSnapshot().context;
    // A step sees the steps it transitively needs, never a sibling branch (whose timing would decide what it finds).
    const visible = this.visible.get(stepId) ?? new Set<string>();
    const pick = <T>(record: Record<string, T>) => Object.fromEntries(Object.entries(record).filter(([id]) => visible.has(id)));
    const send = (event: Parameters<WorkflowActor['send']>[0]) => {
      this.inFlight.delete(stepId);
      if (actor.getSnapshot().status === 'active') actor.send(event);
    };
    const index = this.definition.steps.findIndex((step) => step.id === stepId);
    this.runTopStep({ phase: 'main', index, stepId, results: pick(results), outcomes: pick(outcomes) }, this.branches.signal).then(
      (output) => send({ type: 'STEP_DONE', stepId, output }),
      (error: unknown) => send({ type: 'STEP_CRASHED', error: error instanceof Error ? error.message : String(error) }),
    );
  }

  /** Runs one top-level (or onFailure) step for the machine. */
  private async runTopStep(input: StepRunInput, signal: AbortSignal): Promise<StepRunOutput> {
    const entry = this.byId.get(input.stepId);
    if (!entry) throw new Error(`Workflow ${this.definition.name} has no step ${input.stepId}`);
    const forced = input.phase === 'onFailure';
    const total = input.phase === 'main' ? this.definition.steps.length : (this.definition.onFailure ?? []).length;
    this.stepStatus = `${input.phase === 'main' ? 'Step' : 'onFailure step'} ${input.index + 1}/${total}: ${input.stepId}`;
    const resumed = this.backoffs.get(`${input.phase}:${input.stepId}`);
    // A step resumed in its backoff: the task goes on showing the retry message it stored.
    if (!resumed) this.ctx.setStatus(this.stepStatus);
    // The workflow's timeout bounds the main steps, counted from the run's start; onFailure cleanup still runs.
    const budget =
      this.definition.timeout !== undefined && input.phase === 'main'
        ? ms(this.definition.timeout, 0) - (Date.now() - Date.parse(this.startedAt))
        : undefined;
    const overall = `Workflow ${this.definition.name} timed out after ${showDuration(this.definition.timeout ?? 0)}`;
    if (budget !== undefined && budget <= 0) {
      if (resumed) {
        // Woken after the run's time ran out: the step waited for nothing, and ends with the run.
        this.backoffs.delete(`${input.phase}:${input.stepId}`);
        delete resumed.backoff;
        Object.assign(resumed, { status: 'failed', endedAt: now(), error: { message: overall } });
      }
      return { status: 'failed', message: overall, allowFailure: false };
    }
    const limit = budget !== undefined ? limited(signal, budget, overall) : undefined;
    try {
      const outcome = await this.runStep(
        entry.step,
        input.phase,
        this.scope(input.results),
        input.outcomes,
        input.stepId,
        '',
        limit?.signal ?? signal,
        { deadline: budget !== undefined ? Date.now() + budget : Number.POSITIVE_INFINITY },
      );
      if (limit?.signal.aborted && limit.signal.reason instanceof TimeLimit && !signal.aborted) {
        return { status: 'failed', message: overall, allowFailure: false };
      }
      if (outcome.status !== 'failed') return outcome;
      const allowFailure = forced || entry.step.allowFailure === true;
      return {
        status: 'failed',
        message: outcome.message,
        allowFailure,
        ...(outcome.code !== undefined ? { code: outcome.code } : {}),
        result: failedValue(outcome),
      };
    } catch (error) {
      // Only a broken executor (or the MRTR unwinding) gets here: step errors are outcomes.
      this.fatal = error;
      throw error;
    } finally {
      limit?.dispose();
    }
  }

  /**
   * Runs a step of any kind; `recordId` is its id in the step records. `top`
   * is given for a top-level (or onFailure) step, never for a sub-step of
   * `forEach`/`parallel`: only a top step may wait out its retry backoff
   * durably ({@link durableBackoff}), and only a top step is resumed there.
   */
  private async runStep(
    step: WorkflowStep | WorkflowSubStep,
    phase: 'main' | 'onFailure',
    scope: TemplateScope,
    outcomes: Record<string, string>,
    recordId: string,
    keyPrefix: string,
    signal: AbortSignal,
    top?: TopStep,
  ): Promise<Outcome> {
    // A top step restored between two attempts goes on with its record (still `running`, its attempts counted).
    const resumed = top ? this.backoffs.get(`${phase}:${recordId}`) : undefined;
    if (resumed) this.backoffs.delete(`${phase}:${recordId}`);
    const record: StepRecord = resumed ?? { id: recordId, phase, startedAt: now(), status: 'running' };
    if (!resumed) {
      if (step.tool !== undefined) record.tool = step.tool;
      else if (step.input !== undefined) record.tool = 'input';
    }
    const started = resumed ? Date.parse(resumed.startedAt) : Date.now();
    const end = (outcome: Outcome): Outcome => {
      // A cancel (the caller's signal) is `cancelled`; a step's own time limit is a failure.
      record.status = signal.aborted && !(signal.reason instanceof TimeLimit) && outcome.status === 'failed' ? 'cancelled' : outcome.status;
      record.endedAt = now();
      record.durationMs = Date.now() - started;
      if (outcome.status === 'completed') record.result = guarded(record, outcome.result);
      if (outcome.status === 'failed')
        record.error = { message: outcome.message, ...(outcome.code !== undefined ? { code: outcome.code } : {}) };
      publish('taskvisor:workflow.step', () => ({
        workflow: this.definition.name,
        step: recordId,
        outcome: record.status,
        durationMs: record.durationMs!,
      }));
      return outcome;
    };
    if (!resumed) this.records.push(record);
    try {
      const retry = step.retry;
      const attempts = retry?.attempts ?? 1;
      let attempt = 1;
      if (resumed?.backoff) {
        // Its condition held and `failed` attempts ran before the run stopped: the wait goes on (the same
        // sleep key wakes at its stored time, at once if that has passed), then the next attempt. None runs again.
        const { failed, key, until } = resumed.backoff;
        try {
          await raced(this.ctx.sleep(key, Math.max(0, Date.parse(until) - Date.now()) || 0), signal);
        } finally {
          delete record.backoff;
        }
        attempt = failed + 1;
      } else if (step.condition && !(await this.conditionHolds(step.condition, scope, outcomes, recordId, signal))) {
        return end({ status: 'skipped' });
      }
      for (; ; attempt++) {
        const limit =
          step.timeout !== undefined
            ? limited(signal, ms(step.timeout, 0), `Step ${recordId} timed out after ${showDuration(step.timeout)}`)
            : undefined;
        let outcome: Outcome;
        try {
          outcome = await this.attempt(step, phase, scope, outcomes, recordId, keyPrefix, limit?.signal ?? signal, record);
        } finally {
          limit?.dispose();
        }
        const retryOn: FailureKind[] = retry?.on ?? ['error', 'timeout'];
        if (outcome.status !== 'failed' || attempt >= attempts || signal.aborted || !retryOn.includes(outcome.kind ?? 'error')) {
          return end(outcome);
        }
        // Exponential backoff between attempts; a cancel interrupts the wait.
        const initial = ms(retry?.initialDelay, 1000);
        const delay = Math.min(initial * (retry?.multiplier ?? 2) ** (attempt - 1), ms(retry?.maxDelay, 60_000));
        await this.backoff(record, attempt, delay, outcome.message, this.durableBackoff(top, delay), signal);
      }
    } catch (error) {
      if (isInputRequiredSignal(error)) throw error;
      if (error instanceof StepFailure)
        return end({ status: 'failed', message: error.message, ...(error.code !== undefined ? { code: error.code } : {}) });
      const coded = error as { code?: unknown; message?: unknown };
      const message = error instanceof TemplateError ? error.message : typeof coded.message === 'string' ? coded.message : String(error);
      return end({ status: 'failed', message, ...(typeof coded.code === 'number' ? { code: coded.code } : {}) });
    }
  }

  /**
   * Whether a retry backoff of `delay` ms may be a durable sleep
   * (`ctx.sleep`), which lets the task be passivated while it waits (its
   * actor stopped, its whole handler run dropped, then run again at the wake
   * time from the checkpoint). The rule: only when nothing else of the run
   * is working during the wait, since passivation would abort it —
   *
   * - a top step (`top`): in a sequence, or the only DAG step in flight
   *   (its own entry in `inFlight`; none starts while it waits, as steps
   *   start only when one ends). Never a sub-step of `parallel`/`forEach`:
   *   siblings may be running, and a resumed run starts such a step over
   *   from its start anyway, so a durable wait would buy nothing;
   * - not cut short by the workflow `timeout` (it would abort the wait
   *   while the sleep stays pending, and the run would go on, onFailure
   *   steps included, as a task the runtime believes asleep).
   *
   * Otherwise the wait is a plain timer in this process, as before.
   */
  private durableBackoff(top: TopStep | undefined, delay: number): boolean {
    return top !== undefined && this.inFlight.size <= 1 && Date.now() + delay < top.deadline;
  }

  /**
   * Waits `delay` ms before attempt `attempt + 1` of the step. The record
   * counts the attempt to come and the status says why it waits; both are
   * stored before the wait starts. A durable wait also stores its sleep in
   * the record (`backoff`), so a run resumed from this checkpoint goes on
   * waiting for the same sleep and then makes the next attempt, without
   * running again the attempts that failed. Its key is unique for the
   * task's life (sleep keys are their own namespace, apart from input keys):
   * the record's index in the run's records, which only grow and are
   * restored whole, tells a step run again (interrupted, then a new record)
   * from the one that slept.
   */
  private async backoff(record: StepRecord, attempt: number, delay: number, message: string, durable: boolean, signal: AbortSignal) {
    record.attempts = attempt + 1;
    this.ctx.setStatus(`${this.stepStatus} — attempt ${attempt} failed (${message}); retrying in ${delay} ms`);
    if (!durable) {
      await this.persist();
      return sleep(delay, signal);
    }
    const backoff: StepBackoff = {
      failed: attempt,
      key: `${record.id}#${this.records.indexOf(record)}/retry${attempt}`,
      until: new Date(Date.now() + delay).toISOString(),
    };
    record.backoff = backoff;
    try {
      await this.persist();
      await raced(this.ctx.sleep(backoff.key, delay), signal);
    } finally {
      delete record.backoff;
    }
  }

  /** One attempt of a step (after its condition held); errors become failed outcomes with their kind. */
  private async attempt(
    step: WorkflowStep | WorkflowSubStep,
    phase: 'main' | 'onFailure',
    scope: TemplateScope,
    outcomes: Record<string, string>,
    recordId: string,
    keyPrefix: string,
    signal: AbortSignal,
    record: StepRecord,
  ): Promise<Outcome> {
    try {
      if ('forEach' in step && step.forEach) return await this.runForEach(step, phase, scope, outcomes, recordId, keyPrefix, signal);
      if ('parallel' in step && step.parallel) return await this.runParallel(step, phase, scope, outcomes, recordId, keyPrefix, signal);
      const site = { workflow: this.definition.name, step: recordId };
      if (step.input) {
        const params: ElicitParams = {
          message: String(await render(step.input.message, scope, { ...site, field: 'input.message' }, false, this.engine)),
          requestedSchema: {
            type: 'object',
            properties: step.input.requestedSchema.properties,
            ...(step.input.requestedSchema.required !== undefined ? { required: step.input.requestedSchema.required } : {}),
          },
        };
        record.input = guarded(record, params);
        // The start record is stored before anything runs (and before the client is asked).
        await this.persist();
        const answer = await raced(this.ctx.elicit(`${keyPrefix}${step.input.key ?? recordId}`, params), signal);
        const result = { action: answer.action, ...(answer.content !== undefined ? { content: answer.content } : {}) };
        // Documented rule: decline or cancel fails the step (allowFailure lets the run go on and branch on it).
        if (answer.action !== 'accept')
          return {
            status: 'failed',
            message: `The input request was ${answer.action === 'decline' ? 'declined' : 'cancelled'}`,
            result,
          };
        return { status: 'completed', result };
      }
      const args = (await render(step.args ?? {}, scope, { ...site, field: 'args' }, false, this.engine)) as JsonObject;
      record.input = guarded(record, args);
      await this.persist();
      const result = await raced(
        this.deps.invoker.invoke({
          name: step.tool!,
          args,
          principal: this.ctx.principal,
          signal,
          requestInput: (key, request) => this.ctx.requestInput(`${keyPrefix}${recordId}/${key}`, request),
          onStatus: (message) => this.ctx.setStatus(`${this.stepStatus} — ${message}`),
          // Every step joins the run's trace (issue 16.3).
          ...(this.ctx.trace ? { trace: this.ctx.trace } : {}),
        }),
        signal,
      );
      if (result.isError === true)
        return {
          status: 'failed',
          message: `Tool ${step.tool} returned an error: ${errorText(result)}`,
          result: resultValue(result),
          kind: 'isError',
        };
      return { status: 'completed', result: resultValue(result) };
    } catch (error) {
      if (isInputRequiredSignal(error)) throw error;
      if (signal.aborted && signal.reason instanceof TimeLimit)
        return { status: 'failed', message: signal.reason.message, kind: 'timeout' };
      // A bad template or item list fails the same way every time: never retried.
      if (error instanceof StepFailure)
        return { status: 'failed', message: error.message, kind: 'invalid', ...(error.code !== undefined ? { code: error.code } : {}) };
      if (error instanceof TemplateError) return { status: 'failed', message: error.message, kind: 'invalid' };
      const coded = error as { code?: unknown; message?: unknown };
      const message = typeof coded.message === 'string' ? coded.message : String(error);
      return { status: 'failed', message, kind: 'error', ...(typeof coded.code === 'number' ? { code: coded.code } : {}) };
    }
  }

  private async conditionHolds(
    condition: WorkflowCondition,
    scope: TemplateScope,
    outcomes: Record<string, string>,
    stepId: string,
    signal: AbortSignal,
  ): Promise<boolean> {
    const site = { workflow: this.definition.name, step: stepId };
    if ('template' in condition) {
      const value = await render(condition.template, scope, { ...site, field: 'condition.template' }, true, this.engine);
      return value === true || value === 'true';
    }
    let succeeded: boolean;
    let value: unknown;
    if ('tool' in condition) {
      // muster's tool condition: the call's success (no error, no isError) and its result value are tested.
      const args = (await render(condition.args ?? {}, scope, { ...site, field: 'condition.args' }, false, this.engine)) as JsonObject;
      try {
        const result = await this.deps.invoker.invoke({
          name: condition.tool,
          args,
          principal: this.ctx.principal,
          signal,
          ...(this.ctx.trace ? { trace: this.ctx.trace } : {}),
        });
        succeeded = result.isError !== true;
        value = resultValue(result);
      } catch (error) {
        if (signal.aborted) throw error;
        succeeded = false;
        value = null;
      }
    } else {
      const from = condition.fromStep;
      if (!Object.hasOwn(outcomes, from) && !Object.hasOwn(scope.results, from)) {
        throw new StepFailure(`workflow ${this.definition.name}, step ${stepId}, field condition.fromStep: step ${from} has not run`);
      }
      succeeded = outcomes[from] === 'completed';
      value = scope.results[from];
    }
    const matches = async (expect: NonNullable<typeof condition.expect>, field: string): Promise<boolean> => {
      if (expect.success !== undefined && succeeded !== expect.success) return false;
      for (const [path, expected] of Object.entries(expect.jsonPath ?? {})) {
        const want = await render(expected, scope, { ...site, field: `${field}.jsonPath.${path}` }, false, this.engine);
        if (JSON.stringify(valueAt(value, path)) !== JSON.stringify(want)) return false;
      }
      return true;
    };
    if (condition.expect && !(await matches(condition.expect, 'condition.expect'))) return false;
    if (condition.expectNot && (await matches(condition.expectNot, 'condition.expectNot'))) return false;
    return true;
  }

  private async runForEach(
    step: WorkflowStep,
    phase: 'main' | 'onFailure',
    scope: TemplateScope,
    outcomes: Record<string, string>,
    recordId: string,
    keyPrefix: string,
    signal: AbortSignal,
  ): Promise<Outcome> {
    const forEach = step.forEach!;
    const items = await render(
      forEach.items,
      scope,
      { workflow: this.definition.name, step: recordId, field: 'forEach.items' },
      false,
      this.engine,
    );
    if (!Array.isArray(items))
      throw new StepFailure(
        `workflow ${this.definition.name}, step ${recordId}, field forEach.items: expected an array, got ${JSON.stringify(items)?.slice(0, 100)}`,
      );
    const as = forEach.as ?? 'item';
    const iterations: Array<Record<string, unknown>> = [];
    let failure: Outcome | undefined;
    // One iteration: its sub-steps in order, each seeing the earlier ones of the same iteration.
    const iterate = async (index: number): Promise<void> => {
      const item = items[index];
      const local: Record<string, unknown> = {};
      iterations[index] = local;
      const localOutcomes: Record<string, string> = { ...outcomes };
      for (const sub of forEach.steps) {
        if (failure) return;
        signal.throwIfAborted();
        const subScope = {
          input: this.input,
          results: { ...scope.results, ...local },
          vars: { ...scope.vars, [as]: item, [`${as}_index`]: index },
        };
        const id = `${recordId}[${index}].${sub.id}`;
        const outcome = await this.runStep(sub, phase, subScope, localOutcomes, id, keyPrefix, signal);
        localOutcomes[sub.id] = outcome.status;
        local[sub.id] = resultOf(outcome);
        if (outcome.status === 'failed' && !sub.allowFailure) {
          failure ??= {
            status: 'failed',
            message: `${id}: ${outcome.message}`,
            ...(outcome.code !== undefined ? { code: outcome.code } : {}),
            ...(outcome.kind !== undefined ? { kind: outcome.kind } : {}),
          };
          return;
        }
      }
    };
    // Sequential by default (muster's rule); maxConcurrency lets that many items run at once. After a
    // failure no new item starts; those in flight finish.
    await pool(items.length, forEach.maxConcurrency ?? 1, iterate, () => failure !== undefined);
    if (failure) return { ...(failure as Extract<Outcome, { status: 'failed' }>), result: iterations.filter(Boolean) };
    return { status: 'completed', result: iterations };
  }

  private async runParallel(
    step: WorkflowStep,
    phase: 'main' | 'onFailure',
    scope: TemplateScope,
    outcomes: Record<string, string>,
    recordId: string,
    keyPrefix: string,
    signal: AbortSignal,
  ): Promise<Outcome> {
    // Siblings see the results from before the parallel step, not each other's; maxConcurrency caps how many run at once.
    const subs = step.parallel!;
    const settled: Array<{ sub: WorkflowSubStep; outcome: Outcome }> = [];
    await pool(subs.length, step.maxConcurrency ?? subs.length, async (i) => {
      const sub = subs[i]!;
      settled[i] = { sub, outcome: await this.runStep(sub, phase, scope, outcomes, `${recordId}.${sub.id}`, keyPrefix, signal) };
    });
    const result = Object.fromEntries(settled.map(({ sub, outcome }) => [sub.id, resultOf(outcome)]));
    const failed = settled.find(({ sub, outcome }) => outcome.status === 'failed' && !sub.allowFailure);
    if (failed && failed.outcome.status === 'failed') {
      return {
        status: 'failed',
        message: `${recordId}.${failed.sub.id}: ${failed.outcome.message}`,
        ...(failed.outcome.code !== undefined ? { code: failed.outcome.code } : {}),
        result,
      };
    }
    return { status: 'completed', result };
  }

  /** The run's CallToolResult (or its error) from the machine's final state. */
  private async finish(snapshot: ReturnType<WorkflowActor['getSnapshot']>): Promise<ToolResult> {
    const context = snapshot.context;
    const state = snapshot.value as string;
    if (state === 'cancelled') throw this.ctx.signal.reason ?? new DOMException('The workflow was cancelled', 'AbortError');
    if (state === 'crashed' || snapshot.status === 'error')
      throw this.fatal ?? new Error(`Workflow ${this.definition.name} failed: ${context.crash ?? 'internal error'}`);
    const name = this.definition.name;
    if (state === 'failed') {
      const failure = context.failure!;
      // T-16: a failing step is a tool-level error result (the task completes), naming the step.
      const text = `Workflow ${name} failed at step ${failure.stepId}: ${failure.message}`;
      return {
        content: [{ type: 'text', text }],
        isError: true,
        structuredContent: {
          workflow: name,
          status: 'failed',
          failedStep: failure.stepId,
          error: { message: failure.message, ...(failure.code !== undefined ? { code: failure.code } : {}) },
          results: context.results,
        },
      };
    }
    if (this.definition.output !== undefined) {
      let output: unknown;
      try {
        output = await render(this.definition.output, this.scope(context.results), { workflow: name, field: 'output' }, false, this.engine);
      } catch (error) {
        return { content: [{ type: 'text', text: `Workflow ${name} failed at step output: ${(error as Error).message}` }], isError: true };
      }
      const text = typeof output === 'string' ? output : JSON.stringify(output);
      const structured = output !== null && typeof output === 'object' && !Array.isArray(output);
      return { content: [{ type: 'text', text }], ...(structured ? { structuredContent: output as JsonObject } : {}) };
    }
    const structuredContent = shapeDefaultResult(this.definition, context.results);
    return { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent };
  }
}

/**
 * muster's payload guard: a step record keeps a value (input or result) of at
 * most MAX_RECORDED_VALUE_BYTES of JSON; a bigger one is replaced by a marker
 * and the record says `truncated`. Only the record: later steps and the run's
 * result see the whole value (it lives in the machine's context), so a large
 * result is not rewritten with every later step record.
 */
function guarded(record: StepRecord, value: unknown): unknown {
  const bytes = Buffer.byteLength(JSON.stringify(value) ?? '');
  if (bytes <= MAX_RECORDED_VALUE_BYTES) return value;
  record.truncated = true;
  return { truncated: true, bytes, limit: MAX_RECORDED_VALUE_BYTES };
}

/** Runs `task(0..count-1)` with at most `limit` at once, starting no new one once `stop()` says so. */
async function pool(
  count: number,
  limit: number,
  task: (index: number) => Promise<void>,
  stop: () => boolean = () => false,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count && !stop()) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, count)) }, worker));
}

/**
 * The result of a run without an `output` map: `{ workflow, status, results }`.
 * When the file uses muster's `output`/`store` step flags, they are honoured
 * as muster does: `results` holds only the steps flagged true (sub-steps by
 * their flat names), and the last step's object result, when that step is a
 * tool step not flagged, is merged into the top level (its keys never replace
 * `workflow`, `status` or `results`). Every result stays referencable in
 * templates either way.
 */
export function shapeDefaultResult(definition: WorkflowDefinition, results: Record<string, unknown>): JsonObject {
  const flag = (step: { output?: boolean | undefined; store?: boolean | undefined }) => step.output ?? step.store;
  const all = definition.steps.flatMap((step) => [step, ...subStepsOf(step)]);
  if (!all.some((step) => flag(step) !== undefined)) return { workflow: definition.name, status: 'completed', results };
  const flat = withFlatNames(definition, results);
  const shown: Record<string, unknown> = {};
  for (const step of all) if (flag(step) === true && Object.hasOwn(flat, step.id)) shown[step.id] = flat[step.id];
  const shaped: Record<string, unknown> = { workflow: definition.name, status: 'completed', results: shown };
  const last = definition.steps[definition.steps.length - 1]!;
  const lastValue = results[last.id];
  if (last.tool !== undefined && flag(last) !== true && lastValue !== null && typeof lastValue === 'object' && !Array.isArray(lastValue)) {
    for (const [key, value] of Object.entries(lastValue)) if (!Object.hasOwn(shaped, key)) shaped[key] = value;
  }
  return shaped;
}

/** Every sub-step under a step, at any depth (loops nest). */
function subStepsOf(step: WorkflowStep | WorkflowSubStep): WorkflowSubStep[] {
  return (step.parallel ?? step.forEach?.steps ?? []).flatMap((sub) => [sub, ...subStepsOf(sub)]);
}

/**
 * muster's flat result names next to taskvisor's nested ones: a parallel
 * sub-step's result is also `results.<subId>`, a forEach sub-step's is
 * `results.<subId>_<i>` per iteration and `results.<subId>` for the last one.
 * Loops nest, and the names with them: inside iteration `i` of an outer
 * forEach, an inner forEach's sub-step is `<subId>_<i>_<j>`, `<subId>_<i>` for
 * the last `j` of that iteration, and `<subId>` for the last of all; a
 * parallel inside iteration `i` names its sub-steps `<subId>_<i>` (and
 * `<subId>`). A flat name never hides a step's own (nested) name.
 */
export function withFlatNames(definition: WorkflowDefinition, results: Record<string, unknown>): Record<string, unknown> {
  const flat: Record<string, unknown> = {};
  const put = (id: string, suffix: string, value: unknown) => {
    flat[id + suffix] = value;
    if (suffix !== '') flat[id] = value;
  };
  const visit = (step: WorkflowStep | WorkflowSubStep, value: unknown, suffix: string) => {
    if (step.parallel && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const sub of step.parallel) {
        if (!Object.hasOwn(value, sub.id)) continue;
        const subValue = (value as Record<string, unknown>)[sub.id];
        put(sub.id, suffix, subValue);
        visit(sub, subValue, suffix);
      }
    } else if (step.forEach && Array.isArray(value)) {
      value.forEach((iteration, i) => {
        if (iteration === null || typeof iteration !== 'object') return;
        for (const sub of step.forEach!.steps) {
          if (!Object.hasOwn(iteration, sub.id)) continue;
          const subValue = (iteration as Record<string, unknown>)[sub.id];
          put(sub.id, `${suffix}_${i}`, subValue);
          put(sub.id, suffix, subValue);
          visit(sub, subValue, `${suffix}_${i}`);
        }
      });
    }
  };
  for (const step of definition.steps) visit(step, results[step.id], '');
  return { ...flat, ...results };
}

/** The value at a dotted path with `[i]` indexes (`a.b[0].c`), or `undefined`. */
export function valueAt(value: unknown, path: string): unknown {
  let current = value;
  for (const part of path.split(/\.|\[(\d+)\]/).filter((p) => p !== undefined && p !== '')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = Object.hasOwn(current, part) ? (current as Record<string, unknown>)[part] : undefined;
  }
  return current;
}
