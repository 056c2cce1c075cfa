/**
 * What a workflow run keeps durably: its step records and its checkpoint
 * (the task's `checkpoint`, or a synchronous run's history record).
 */
import type { JsonObject } from '../../core/json.js';
import type { WorkflowDefinition } from '../model/definition.js';

/** One step record, written live into the run's checkpoint. */
export interface StepRecord {
  /** Step id; sub-steps as `parent.sub` (parallel) or `parent[i].sub` (forEach). */
  id: string;
  phase: 'main' | 'onFailure';
  /** Tool called, or `input` for an input step. */
  tool?: string;
  status: 'running' | 'completed' | 'failed' | 'skipped' | 'interrupted' | 'cancelled';
  /** ISO 8601. */
  startedAt: string;
  endedAt?: string;
  durationMs?: number;
  /** Resolved arguments (tool steps) or request (input steps). */
  input?: unknown;
  result?: unknown;
  error?: { message: string; code?: number };
  /**
   * Attempts, when the step has `retry` and needed more than one: while it
   * waits between attempts, the number of the attempt it waits to make.
   */
  attempts?: number;
  /**
   * The step waits out a retry backoff in a durable sleep (`ctx.sleep`, see
   * {@link StepBackoff}): a run resumed from this checkpoint (a passivated
   * task woken, a restart) goes on with this record, sleeping `key` again
   * (which wakes at the stored time) and then making attempt `failed + 1`;
   * the record stays `running`, not `interrupted`. Absent in checkpoints
   * written before it existed: their `running` records restore as before.
   */
  backoff?: StepBackoff;
  /** Its input or result was over 256 KiB of JSON and is recorded as a marker (muster's payload guard). */
  truncated?: true;
}

/** A step between two attempts, sleeping durably (see {@link StepRecord.backoff}). */
export interface StepBackoff {
  /** The attempt that failed (1-based): the next one is `failed + 1`. */
  failed: number;
  /** The `ctx.sleep` key of this wait, unique for the task's life. */
  key: string;
  /** When the next attempt is due (ISO 8601), as the run computed it; the task's stored sleep is what wakes it. */
  until: string;
}

/** What a workflow run keeps in its task's `checkpoint`. */
export interface WorkflowCheckpoint {
  kind: 'taskvisor.workflow';
  workflow: string;
  machineVersion: number;
  /** The workflow actor's persisted snapshot. */
  snapshot: unknown;
  steps: StepRecord[];
  /**
   * The definition the run started with, and its hash: a resumed run goes on
   * with it, whatever the file says now (a reload never changes a running run).
   */
  definition?: WorkflowDefinition;
  definitionHash?: string;
  /** When the run started (ISO 8601): the workflow `timeout` counts from here, across restarts. */
  startedAt?: string;
  /** The run's validated arguments (the run history shows them). */
  input?: JsonObject;
}
