/**
 * One workflow run: the tool handler of a `workflow_<name>` tool. It wires
 * the run's parts — the workflow machine (machines/workflow), which records
 * how each step ended and decides what comes next; the {@link Scheduler};
 * the {@link StepExecutor} with its conditions, expansion and retry policy;
 * the {@link Checkpointer} — records the run in the run history, and turns
 * the machine's final state into the tool result.
 *
 * Durability: see checkpointing.ts. After a restart the task is resumed
 * (`resume: 'resume'`) from its checkpoint, with the definition it pinned.
 */
import { createActor, type Actor, type InspectionEvent } from 'xstate';
import {
  persistWorkflowSnapshot,
  restorableWorkflowSnapshot,
  workflowMachine,
  type ExecuteStep,
  type WorkflowInput,
} from '../../../machines/workflow/index.js';
import type { JsonObject } from '../../core/json.js';
import { newTaskId } from '../../core/ids.js';
import { isInputRequiredSignal } from '../../runtime/ToolExecution.js';
import type { ToolContext, ToolHandler, ToolResult } from '../../tools/ToolDefinition.js';
import type { RunHistory } from '../history/RunHistory.js';
import type { WorkflowDefinition } from '../model/definition.js';
import { isDag } from '../model/dag.js';
import { toolsCalledBy } from '../model/toolsCalledBy.js';
import { render } from '../templates/render.js';
import { Checkpointer, pinnedDefinition } from './checkpointing.js';
import { shapeDefaultResult } from './results.js';
import { RetryWaits } from './retryPolicy.js';
import { runSteps } from './runSteps.js';
import { scopeOf, type RunEnv } from './RunEnv.js';
import { Scheduler } from './scheduler.js';
import { StepExecutor } from './StepExecutor.js';
import type { ToolInvoker } from './ToolInvoker.js';

export type { StepBackoff, StepRecord, WorkflowCheckpoint } from './checkpoint.js';

type WorkflowActor = Actor<typeof workflowMachine>;

/** What a workflow handler needs from the runtime. */
export interface WorkflowRunnerDeps {
  invoker: ToolInvoker;
  /** Receives the workflow actor's inspection events (the runtime's inspector or trace). */
  inspect?: (event: InspectionEvent) => void;
  /** Where every run is recorded; without it a synchronous run leaves no record. */
  history?: RunHistory;
  /** The workflow's tool name (what a history record names). */
  toolName?: string;
}

/** `_meta` key of a synchronous run's result naming its record in the run history. */
export const EXECUTION_ID_META_KEY = 'io.taskvisor/executionId';

/** The tool handler running `definition` (or, resuming a run, the definition its checkpoint pinned). */
export function workflowHandler(definition: WorkflowDefinition, deps: WorkflowRunnerDeps): ToolHandler {
  return (args, ctx) => new WorkflowRun(pinnedDefinition(ctx.checkpoint) ?? definition, deps, args, ctx).run();
}

class WorkflowRun {
  private actor: WorkflowActor | undefined;
  private readonly env: RunEnv;
  private readonly checkpoints: Checkpointer;
  private readonly scheduler: Scheduler;

  constructor(
    definition: WorkflowDefinition,
    private readonly deps: WorkflowRunnerDeps,
    input: JsonObject,
    ctx: ToolContext,
  ) {
    this.env = { definition, input, ctx, invoker: deps.invoker, engine: definition.templates ?? 'jsonata', stepStatus: '' };
    this.checkpoints = new Checkpointer(this.env, () => (this.actor ? persistWorkflowSnapshot(this.actor) : undefined));
    const waits = new RetryWaits(this.env, this.checkpoints, () => this.scheduler.inFlight.size);
    this.scheduler = new Scheduler(this.env, this.checkpoints, new StepExecutor(this.env, this.checkpoints, waits));
  }

  /**
   * Runs the workflow and records it in the run history: a task run is its
   * task record; a synchronous run writes a record of its own as it goes,
   * ending `completed` (an `isError` result shows as a failed run), `failed`
   * (the executor broke) or `cancelled`.
   */
  async run(): Promise<ToolResult> {
    const { history } = this.deps;
    const { ctx, definition } = this.env;
    if (history && ctx.taskId === undefined) {
      this.checkpoints.recorder = history.recorder(newTaskId(), ctx.principal, this.deps.toolName ?? definition.name);
    } else if (history && !ctx.checkpoint) history.noteTaskRun();
    try {
      const result = await this.execute();
      // A copy: ToolResult is a (public) interface, so not assignable to JsonObject although it is JSON; its spread is.
      await this.checkpoints.recordEnd({ status: 'completed', result: { ...result } });
      const recorder = this.checkpoints.recorder;
      return recorder ? { ...result, _meta: { ...result._meta, [EXECUTION_ID_META_KEY]: recorder.executionId } } : result;
    } catch (error) {
      if (isInputRequiredSignal(error)) {
        // An MRTR round: the call is answered input_required and retried as a new run, which is recorded.
        await this.checkpoints.recorder?.discard();
      } else if (ctx.signal.aborted && this.actor?.getSnapshot().value === 'cancelled') {
        await this.checkpoints.recordEnd({ status: 'cancelled' });
      } else {
        const message = error instanceof Error ? error.message : String(error);
        await this.checkpoints.recordEnd({ status: 'failed', error: { code: -32603, message } });
      }
      throw error;
    }
  }

  /** muster's availability rule: a new run whose steps (or onFailure steps, or tool conditions) name a missing tool is refused. */
  private unavailable(): ToolResult | undefined {
    const { definition, invoker } = this.env;
    const missing = toolsCalledBy(definition).filter((tool) => !invoker.has(tool));
    if (missing.length === 0) return undefined;
    // muster's wording, which its clients match on.
    const text = `Workflow ${definition.name} is not available (missing required tools): ${missing.join(', ')}`;
    return {
      content: [{ type: 'text', text }],
      isError: true,
      structuredContent: { workflow: definition.name, status: 'failed', error: { message: text }, missingTools: missing },
    };
  }

  private async execute(): Promise<ToolResult> {
    const { ctx, definition } = this.env;
    const restored = this.checkpoints.restorable();
    // A resumed run goes on even if a tool went away since: its steps ran.
    if (!restored) {
      const refused = this.unavailable();
      if (refused) return refused;
    }
    const executeStep: ExecuteStep = (step, signal) => this.scheduler.runTopStep(step, signal);
    const input: WorkflowInput = {
      executeStep,
      workflow: definition.name,
      stepIds: definition.steps.map((step) => step.id),
      ...(isDag(definition.steps) ? { dag: true } : {}),
      onFailureIds: (definition.onFailure ?? []).map((step) => step.id),
      ...(ctx.taskId !== undefined ? { taskId: ctx.taskId } : {}),
    };
    const inspect = this.deps.inspect ? { inspect: this.deps.inspect } : {};
    if (restored) {
      this.checkpoints.restore(restored);
      this.actor = createActor(workflowMachine, {
        snapshot: restorableWorkflowSnapshot(restored.snapshot, executeStep),
        // xstate restores the snapshot and ignores `input`, but its options type requires one for a
        // machine with input (statelyai/xstate#4915): the same input a fresh run gets.
        input,
        ...inspect,
      });
    } else {
      this.actor = createActor(workflowMachine, { input, ...inspect });
    }
    const actor = this.actor;
    this.scheduler.attach(actor);
    const finished = new Promise<void>((resolve) => {
      actor.subscribe({
        next: (snapshot) => {
          // Every transition (a step ended, the run ended) is checkpointed.
          // Not awaited here: the next persist() chains on it (and the run awaits its own last one).
          void this.checkpoints.persist().catch(() => {});
          if (snapshot.value === 'scheduling') queueMicrotask(() => this.scheduler.schedule());
          if (snapshot.status === 'done') resolve();
        },
        error: () => resolve(),
      });
    });
    const onAbort = () => {
      actor.send({ type: 'CANCEL' });
      this.scheduler.branches.abort(ctx.signal.reason);
    };
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    try {
      actor.start();
      if (ctx.signal.aborted) onAbort();
      // A restored DAG run starts again the steps that were in flight, then what is ready.
      this.scheduler.schedule();
      await finished;
      if (actor.getSnapshot().value === 'cancelled') this.checkpoints.markCancelled();
      await this.checkpoints.persist();
      return await this.finish(actor.getSnapshot());
    } finally {
      ctx.signal.removeEventListener('abort', onAbort);
      this.scheduler.branches.abort(ctx.signal.reason ?? new DOMException('The workflow run ended', 'AbortError'));
      actor.stop();
    }
  }

  /** The run's CallToolResult (or its error) from the machine's final state. */
  private async finish(snapshot: ReturnType<WorkflowActor['getSnapshot']>): Promise<ToolResult> {
    const context = snapshot.context;
    const state = snapshot.value as string;
    if (state === 'cancelled') throw this.env.ctx.signal.reason ?? new DOMException('The workflow was cancelled', 'AbortError');
    if (state === 'crashed' || snapshot.status === 'error')
      throw this.scheduler.fatal ?? new Error(`Workflow ${this.env.definition.name} failed: ${context.crash ?? 'internal error'}`);
    const name = this.env.definition.name;
    if (state === 'failed') {
      const failure = context.failure!;
      // T-16: a failing step is a tool-level error result (the task completes), naming the step.
      const text = `Workflow ${name} failed at step ${failure.stepId}: ${failure.message}`;
      return withJsonText(text, true, {
        workflow: name,
        status: 'failed',
        input: this.env.input,
        failedStep: failure.stepId,
        error: { message: failure.message, ...(failure.code !== undefined ? { code: failure.code } : {}) },
        results: context.results,
        steps: runSteps(this.env.definition, this.checkpoints.records),
      });
    }
    if (this.env.definition.output !== undefined) {
      let output: unknown;
      try {
        output = await render(
          this.env.definition.output,
          scopeOf(this.env, context.results),
          { workflow: name, field: 'output' },
          false,
          this.env.engine,
        );
      } catch (error) {
        // muster's rule: the step results stay recoverable next to the error (`output_error`).
        const message = `Workflow ${name} failed to render its output template: ${(error as Error).message}`;
        const shaped = shapeDefaultResult(this.env.definition, context.results, this.checkpoints.records, this.env.input);
        return withJsonText(message, true, { ...shaped, output_error: message });
      }
      const text = typeof output === 'string' ? output : JSON.stringify(output);
      const structured = output !== null && typeof output === 'object' && !Array.isArray(output);
      return { content: [{ type: 'text', text }], ...(structured ? { structuredContent: output as JsonObject } : {}) };
    }
    const structuredContent = shapeDefaultResult(this.env.definition, context.results, this.checkpoints.records, this.env.input);
    return { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent };
  }
}

/**
 * An error answer: its sentence, then its structured content as JSON text (the
 * MCP rule for structured results, and the block muster's clients parse).
 */
function withJsonText(text: string, isError: boolean, structuredContent: JsonObject): ToolResult {
  return {
    content: [
      { type: 'text', text },
      { type: 'text', text: JSON.stringify(structuredContent) },
    ],
    isError,
    structuredContent,
  };
}
