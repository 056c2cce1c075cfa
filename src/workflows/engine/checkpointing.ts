/**
 * Checkpointing of one run (I-1, I-8): the step records and the machine's
 * persisted snapshot are the task's checkpoint (`ctx.saveCheckpoint`),
 * written when a step starts and when it ends; a step starts only after its
 * start record is stored. After a restart the run resumes from it: the step
 * that was in flight runs again (at-least-once per step), except a step
 * waiting out a durable retry backoff, which goes on at its next attempt.
 *
 * A run that is not a task (a synchronous call, or an `auto` call not
 * promoted yet) also writes its run-history record with every checkpoint.
 */
import { createHash } from 'node:crypto';
import { WORKFLOW_MACHINE_VERSION, type WorkflowContext } from '../../../machines/workflow/index.js';
import type { RunRecorder, RunState } from '../history/RunHistory.js';
import type { WorkflowDefinition } from '../model/definition.js';
import type { StepRecord, WorkflowCheckpoint } from './checkpoint.js';
import { now } from './outcome.js';
import type { RunEnv } from './RunEnv.js';

/** The definition a checkpoint pinned, when it has one: a resumed run goes on with it, whatever the file says now. */
export function pinnedDefinition(checkpoint: unknown): WorkflowDefinition | undefined {
  const c = checkpoint as Partial<WorkflowCheckpoint> | undefined;
  if (!c || c.kind !== 'taskvisor.workflow' || !c.definition || !Array.isArray(c.definition.steps)) return undefined;
  return c.definition;
}

/** The hash pinned next to a definition: sha256 of its JSON. */
export const definitionHash = (definition: WorkflowDefinition): string =>
  createHash('sha256').update(JSON.stringify(definition)).digest('hex');

export class Checkpointer {
  /** The step records, in the order the steps started; restored whole, so they only grow. */
  readonly records: StepRecord[] = [];
  /** When the run started; restored from the checkpoint after a restart (the workflow `timeout` counts from here). */
  startedAt = now();
  /** The run's history record while it is not a task. */
  recorder: RunRecorder | undefined;
  private saving: Promise<void> = Promise.resolve();
  private readonly hash: string;
  /** Restored records of steps that were waiting out a durable retry backoff, by `phase:id`: taken by their step when it runs again. */
  private readonly backoffs = new Map<string, StepRecord>();

  constructor(
    private readonly run: RunEnv,
    /** The workflow actor's persisted snapshot as it stands (undefined before the actor exists). */
    private readonly snapshot: () => unknown,
  ) {
    this.hash = definitionHash(run.definition);
  }

  /** The checkpoint to resume from, when there is one and it fits this definition. */
  restorable(): WorkflowCheckpoint | undefined {
    const { definition, ctx } = this.run;
    const checkpoint = ctx.checkpoint as Partial<WorkflowCheckpoint> | undefined;
    if (!checkpoint || checkpoint.kind !== 'taskvisor.workflow') return undefined;
    if (checkpoint.machineVersion !== WORKFLOW_MACHINE_VERSION) {
      throw new Error(
        `Workflow ${definition.name}: its checkpoint was written by workflow machine version ${checkpoint.machineVersion}, this server runs ${WORKFLOW_MACHINE_VERSION}`,
      );
    }
    const context = (checkpoint.snapshot as { context?: WorkflowContext } | undefined)?.context;
    const ids = definition.steps.map((step) => step.id).join(',');
    const failIds = (definition.onFailure ?? []).map((step) => step.id).join(',');
    if (!context || context.stepIds.join(',') !== ids || context.onFailureIds.join(',') !== failIds) {
      throw new Error(`Workflow ${definition.name} changed since this run was checkpointed (its steps differ); the run cannot be resumed`);
    }
    return checkpoint as WorkflowCheckpoint;
  }

  /**
   * Takes the records of a restored checkpoint. The step that was in flight
   * when the server died runs again (at-least-once): its record says so. One
   * waiting between attempts in a durable backoff was not working: it goes
   * on (its step takes its record, {@link takeBackoff}).
   */
  restore(checkpoint: WorkflowCheckpoint): void {
    if (checkpoint.startedAt) this.startedAt = checkpoint.startedAt;
    const records = checkpoint.steps.map((record): StepRecord => {
      if (record.status !== 'running') return record;
      if (record.backoff) {
        const kept = { ...record };
        this.backoffs.set(`${kept.phase}:${kept.id}`, kept);
        return kept;
      }
      return { ...record, status: 'interrupted', endedAt: now(), error: { message: 'The server stopped during this step; it runs again' } };
    });
    this.records.splice(0, this.records.length, ...records);
  }

  /** The restored record of a top step resumed in its backoff, if it is one (it stays until taken). */
  resumedBackoff(phase: string, id: string): StepRecord | undefined {
    return this.backoffs.get(`${phase}:${id}`);
  }

  /** Takes the restored record of a step resumed in its backoff: the step goes on with it. */
  takeBackoff(phase: string, id: string): StepRecord | undefined {
    const record = this.backoffs.get(`${phase}:${id}`);
    this.backoffs.delete(`${phase}:${id}`);
    return record;
  }

  /** A run cancelled mid-step: the aborted step may not have recorded its end yet, the record says how the run left it. */
  markCancelled(): void {
    for (const record of this.records) {
      if (record.status === 'running') Object.assign(record, { status: 'cancelled', endedAt: now() });
    }
  }

  /** The checkpoint of the run as it stands. */
  current(): WorkflowCheckpoint {
    const { definition, input } = this.run;
    return {
      kind: 'taskvisor.workflow',
      workflow: definition.name,
      machineVersion: WORKFLOW_MACHINE_VERSION,
      snapshot: this.snapshot(),
      steps: this.records,
      definition,
      definitionHash: this.hash,
      startedAt: this.startedAt,
      input,
    };
  }

  /**
   * Queues a checkpoint write of the current state; resolves when it (and
   * earlier ones) are stored. While the run is not a task, its history record
   * gets the same write; once it became a task (an `auto` call promoted), the
   * task record is its history and the synchronous record goes.
   */
  persist(): Promise<void> {
    this.saving = this.saving
      .catch(() => {})
      .then(async () => {
        const checkpoint = this.current();
        await this.run.ctx.saveCheckpoint(checkpoint);
        if (!this.recorder) return;
        if (this.run.ctx.taskId === undefined)
          await this.recorder.save({ status: 'working', checkpoint, statusMessage: this.run.stepStatus });
        else {
          await this.recorder.discard();
          this.recorder = undefined;
        }
      });
    return this.saving;
  }

  /** The last write of a synchronous run's record. */
  async recordEnd(end: Omit<RunState, 'checkpoint'>): Promise<void> {
    if (!this.recorder) return;
    if (this.run.ctx.taskId === undefined) return this.recorder.save({ ...end, checkpoint: this.current() });
    // Promoted to a task: the task record is the run's history.
    await this.recorder.discard();
    this.recorder = undefined;
  }
}
