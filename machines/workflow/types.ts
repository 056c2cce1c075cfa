/**
 * Types of the workflow machine: the executor of one workflow run. Its state
 * is plain JSON, so a persisted snapshot survives a JSON round trip (I-8);
 * its one dependency, the {@link ExecuteStep}, comes in with its `input`
 * and never reaches a persisted snapshot (see snapshots.ts).
 */

/** Which list of steps a cursor walks: the main steps, or `onFailure` after a failure. */
export type WorkflowPhase = 'main' | 'onFailure';

/**
 * Runs one step and reports how it ended (templates, conditions, the tool
 * call, retries): the runtime's step executor. A rejection means the
 * executor itself broke, not the step: the run crashes.
 */
export type ExecuteStep = (step: StepRunInput, signal: AbortSignal) => Promise<StepRunOutput>;

/** What the machine is started with. */
export interface WorkflowInput {
  /** Runs each step of a sequence (and of `onFailure`); DAG steps are run by the runtime's scheduler. */
  executeStep: ExecuteStep;
  workflow: string;
  /** The task the run belongs to, when it is one (for traces and the inspector). */
  taskId?: string;
  /** Ids of the top-level steps, in order. */
  stepIds: string[];
  /** Ids of the `onFailure` steps, in order. */
  onFailureIds: string[];
  /**
   * The main steps form a DAG (a step names the steps it `needs`): the runtime
   * schedules them and reports each start and end; the machine records them
   * and decides when the run is over.
   */
  dag?: boolean;
}

/** Why a run failed: the step that failed without `allowFailure`, and its error. */
export interface WorkflowFailure {
  stepId: string;
  message: string;
  code?: number;
}

export interface WorkflowContext {
  /**
   * The step executor from the input: a dependency, not state. The one
   * member that is not JSON: left out of every persisted snapshot and given
   * again on restore (snapshots.ts), so stored snapshots keep their shape.
   */
  executeStep: ExecuteStep;
  workflow: string;
  taskId?: string;
  stepIds: string[];
  onFailureIds: string[];
  phase: WorkflowPhase;
  /** Index of the step in flight (or next) within the phase's list. */
  cursor: number;
  /** Step results by step id, as templates see them (`results.<id>`). */
  results: Record<string, unknown>;
  /** How each step ended, by id. */
  outcomes: Record<string, 'completed' | 'failed' | 'skipped'>;
  failure?: WorkflowFailure;
  /** The step executor itself failed (not a step): the run cannot go on. */
  crash?: string;
  /** DAG runs: the main steps in flight (restored ones run again: at-least-once). */
  running?: string[];
}

/** What the invoked `runStep` actor is started with. */
export interface StepRunInput {
  phase: WorkflowPhase;
  index: number;
  stepId: string;
  /** The results so far: what the step's templates see. */
  results: Record<string, unknown>;
  outcomes: Record<string, 'completed' | 'failed' | 'skipped'>;
}

/** What the invoked `runStep` actor gets: the step, and the executor that runs it (left out of persisted snapshots). */
export interface StepRunRequest extends StepRunInput {
  executeStep: ExecuteStep;
}

/** How a step ended, as the step executor reports it. */
export type StepRunOutput =
  | { status: 'completed'; result: unknown }
  | { status: 'skipped' }
  | { status: 'failed'; message: string; code?: number; allowFailure: boolean; result?: unknown };

export type WorkflowEvent =
  | { type: 'CANCEL' }
  /** DAG runs: the runtime started a main step. */
  | { type: 'STEP_STARTED'; stepId: string }
  /** DAG runs: a main step ended. */
  | { type: 'STEP_DONE'; stepId: string; output: StepRunOutput }
  /** DAG runs: the step executor itself broke. */
  | { type: 'STEP_CRASHED'; error: string };
