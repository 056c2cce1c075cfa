/**
 * Which top-level step runs when. In a sequence the workflow machine walks
 * the steps and asks for each ({@link Scheduler.runTopStep}); in a DAG run
 * (`needs:`) the scheduler starts every step whose needs have ended, up to
 * the workflow's `maxConcurrency`, and reports starts and ends to the
 * machine, which records them and decides when the run is over. Composite
 * steps expand in the step executor (see expansion.ts).
 */
import type { Actor } from 'xstate';
import type { StepRunInput, StepRunOutput, workflowMachine } from '../../../machines/workflow/index.js';
import type { WorkflowStep, WorkflowSubStep } from '../model/definition.js';
import { ancestors, dependencies } from '../model/dag.js';
import { showDuration } from '../model/duration.js';
import type { Checkpointer } from './checkpointing.js';
import { failedValue, now } from './outcome.js';
import { scopeOf, type RunEnv } from './RunEnv.js';
import type { StepExecutor } from './StepExecutor.js';
import { limited, ms, TimeLimit } from './timeLimits.js';

type WorkflowActor = Actor<typeof workflowMachine>;

export class Scheduler {
  /** The top-level steps this process runs now (DAG runs; a sequence has at most its one). */
  readonly inFlight = new Set<string>();
  /**
   * The DAG steps' signal: fires with the run's (a cancel) and when the run
   * ends while branches are still in flight (the executor broke, or a
   * synchronous call unwound for MRTR input), so no sibling branch outlives
   * its run.
   */
  readonly branches = new AbortController();
  /** A non-JSON error that broke the step executor (e.g. the MRTR input signal): the run rethrows it as is. */
  fatal: unknown;
  private readonly byId = new Map<string, { step: WorkflowStep | WorkflowSubStep; phase: 'main' | 'onFailure' }>();
  /** DAG runs: each main step's dependencies, and what it may see. */
  private readonly needs: Map<string, string[]>;
  private readonly visible: Map<string, Set<string>>;
  private actor: WorkflowActor | undefined;

  constructor(
    private readonly run: RunEnv,
    private readonly checkpoints: Checkpointer,
    private readonly executor: StepExecutor,
  ) {
    const { definition } = run;
    for (const step of definition.steps) this.byId.set(step.id, { step, phase: 'main' });
    for (const step of definition.onFailure ?? []) this.byId.set(step.id, { step, phase: 'onFailure' });
    this.needs = dependencies(definition.steps);
    this.visible = ancestors(definition.steps);
  }

  /** The workflow actor whose DAG steps this scheduler starts. */
  attach(actor: WorkflowActor): void {
    this.actor = actor;
  }

  /**
   * DAG runs: starts every main step whose needs have all ended, up to the
   * workflow's `maxConcurrency` — none after a hard failure; steps the
   * machine lists as running but this process does not run (a restored
   * checkpoint) run again from their start (at-least-once).
   */
  schedule(): void {
    const actor = this.actor;
    if (!actor) return;
    const snapshot = actor.getSnapshot();
    if (snapshot.status !== 'active' || snapshot.value !== 'scheduling') return;
    const context = snapshot.context;
    for (const id of context.running ?? []) if (!this.inFlight.has(id)) this.startDagStep(actor, id, false);
    if (context.failure) return;
    const limit = this.run.definition.maxConcurrency ?? Number.POSITIVE_INFINITY;
    for (const step of this.run.definition.steps) {
      if (this.inFlight.size >= limit) return;
      if (Object.hasOwn(context.outcomes, step.id) || this.inFlight.has(step.id)) continue;
      if (!(this.needs.get(step.id) ?? []).every((need) => Object.hasOwn(context.outcomes, need))) continue;
      this.startDagStep(actor, step.id, true);
    }
  }

  private startDagStep(actor: WorkflowActor, stepId: string, announce: boolean): void {
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
    const index = this.run.definition.steps.findIndex((step) => step.id === stepId);
    this.runTopStep({ phase: 'main', index, stepId, results: pick(results), outcomes: pick(outcomes) }, this.branches.signal).then(
      (output) => send({ type: 'STEP_DONE', stepId, output }),
      (error: unknown) => send({ type: 'STEP_CRASHED', error: error instanceof Error ? error.message : String(error) }),
    );
  }

  /**
   * Runs one top-level (or onFailure) step for the machine: names it in the
   * task's status (T-32), bounds a main step by the workflow `timeout`
   * (counted from the run's start, across restarts; onFailure cleanup still
   * runs), and turns its outcome into what the machine records.
   */
  async runTopStep(input: StepRunInput, signal: AbortSignal): Promise<StepRunOutput> {
    const { definition, ctx } = this.run;
    const entry = this.byId.get(input.stepId);
    if (!entry) throw new Error(`Workflow ${definition.name} has no step ${input.stepId}`);
    const forced = input.phase === 'onFailure';
    const total = input.phase === 'main' ? definition.steps.length : (definition.onFailure ?? []).length;
    this.run.stepStatus = `${input.phase === 'main' ? 'Step' : 'onFailure step'} ${input.index + 1}/${total}: ${input.stepId}`;
    const resumed = this.checkpoints.resumedBackoff(input.phase, input.stepId);
    // A step resumed in its backoff: the task goes on showing the retry message it stored.
    if (!resumed) ctx.setStatus(this.run.stepStatus);
    const budget =
      definition.timeout !== undefined && input.phase === 'main'
        ? ms(definition.timeout, 0) - (Date.now() - Date.parse(this.checkpoints.startedAt))
        : undefined;
    const overall = `Workflow ${definition.name} timed out after ${showDuration(definition.timeout ?? 0)}`;
    if (budget !== undefined && budget <= 0) {
      if (resumed) {
        // Woken after the run's time ran out: the step waited for nothing, and ends with the run.
        this.checkpoints.takeBackoff(input.phase, input.stepId);
        delete resumed.backoff;
        Object.assign(resumed, { status: 'failed', endedAt: now(), error: { message: overall } });
      }
      return { status: 'failed', message: overall, allowFailure: false };
    }
    const limit = budget !== undefined ? limited(signal, budget, overall) : undefined;
    try {
      const outcome = await this.executor.runStep(
        {
          step: entry.step,
          phase: input.phase,
          scope: scopeOf(this.run, input.results),
          outcomes: input.outcomes,
          recordId: input.stepId,
          keyPrefix: '',
          signal: limit?.signal ?? signal,
        },
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
}
