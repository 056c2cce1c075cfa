/**
 * The workflow machine: the executor of one workflow run, free of I/O.
 *
 *   starting → running (one top-level step at a time) → succeeded
 *         ↘ scheduling (DAG: the runtime runs the steps whose needs are met and reports them) → succeeded
 *   running / scheduling: step failed without allowFailure → compensating (onFailure steps) → failed
 *   any active state —CANCEL→ cancelled;  the step executor itself broke → crashed
 *
 * A step is run by the invoked `runStep` actor (provided by the runtime: it
 * resolves templates and calls the tool); the machine only decides what runs
 * next and records how each step ended. Its persisted snapshot is the run's
 * checkpoint: restored after a restart, the in-flight `runStep` starts again
 * (at-least-once per step).
 *
 * Restore safety (I-8): no `after:` delays, the one invoke has an explicit id,
 * named guards and actions, nothing but JSON in context.
 */
import { assign, fromPromise, setup } from 'xstate';
import type { StepRunInput, StepRunOutput, WorkflowContext, WorkflowEvent, WorkflowInput } from './types.js';

/**
 * Stamped next to every persisted snapshot. Bump it when a change to states,
 * context or invoke ids makes older snapshots unsafe to restore as they are.
 */
export const WORKFLOW_MACHINE_VERSION = 1;

type StepDone = { output: StepRunOutput };

const outputOf = (event: unknown): StepRunOutput => (event as StepDone).output;

const isHardFailure = (output: StepRunOutput) => output.status === 'failed' && !output.allowFailure;

export const workflowMachine = setup({
  types: {
    context: {} as WorkflowContext,
    events: {} as WorkflowEvent,
    input: {} as WorkflowInput,
  },
  actors: {
    /** Placeholder: the runtime provides the step executor (templates, conditions, tool calls). */
    runStep: fromPromise<StepRunOutput, StepRunInput>(() => Promise.resolve({ status: 'skipped' })),
  },
  guards: {
    failedHardWithCleanup: ({ context, event }) => isHardFailure(outputOf(event)) && context.onFailureIds.length > 0,
    failedHard: ({ event }) => isHardFailure(outputOf(event)),
    hasNextStep: ({ context }) => context.cursor + 1 < (context.phase === 'main' ? context.stepIds : context.onFailureIds).length,
    isDag: ({ context }) => context.running !== undefined,
    // A DAG run ends once nothing is in flight: after a hard failure (no new step starts), or when every step ended.
    dagFailedWithCleanup: ({ context }) =>
      context.failure !== undefined && (context.running ?? []).length === 0 && context.onFailureIds.length > 0,
    dagFailed: ({ context }) => context.failure !== undefined && (context.running ?? []).length === 0,
    dagDone: ({ context }) => (context.running ?? []).length === 0 && context.stepIds.every((id) => Object.hasOwn(context.outcomes, id)),
  },
  actions: {
    recordStep: assign(({ context, event }) => {
      const output = outputOf(event);
      const stepId = (context.phase === 'main' ? context.stepIds : context.onFailureIds)[context.cursor]!;
      const result = output.status === 'completed' ? output.result : output.status === 'failed' ? (output.result ?? null) : null;
      // fromEntries: a step id is user text; it must stay a plain own key.
      return {
        results: Object.fromEntries([...Object.entries(context.results), [stepId, result]]),
        outcomes: Object.fromEntries([...Object.entries(context.outcomes), [stepId, output.status]]),
      };
    }),
    recordFailure: assign(({ context, event }) => {
      const output = outputOf(event);
      if (output.status !== 'failed') return {};
      return {
        failure: {
          stepId: context.stepIds[context.cursor]!,
          message: output.message,
          ...(output.code !== undefined ? { code: output.code } : {}),
        },
      };
    }),
    markStarted: assign({
      running: ({ context, event }) => {
        const { stepId } = event as Extract<WorkflowEvent, { type: 'STEP_STARTED' }>;
        const running = context.running ?? [];
        return running.includes(stepId) ? running : [...running, stepId];
      },
    }),
    recordDagStep: assign(({ context, event }) => {
      const { stepId, output } = event as Extract<WorkflowEvent, { type: 'STEP_DONE' }>;
      const result = output.status === 'completed' ? output.result : output.status === 'failed' ? (output.result ?? null) : null;
      // The first hard failure is the run's; steps still in flight end and are recorded, none starts.
      const failure =
        context.failure ??
        (isHardFailure(output) && output.status === 'failed'
          ? { stepId, message: output.message, ...(output.code !== undefined ? { code: output.code } : {}) }
          : undefined);
      return {
        results: Object.fromEntries([...Object.entries(context.results), [stepId, result]]),
        outcomes: Object.fromEntries([...Object.entries(context.outcomes), [stepId, output.status]]),
        running: (context.running ?? []).filter((id) => id !== stepId),
        ...(failure ? { failure } : {}),
      };
    }),
    advance: assign({ cursor: ({ context }) => context.cursor + 1 }),
    startCleanup: assign({ phase: 'onFailure' as const, cursor: 0 }),
    recordCrash: assign({
      crash: ({ event }) => {
        const error = (event as { error?: unknown }).error;
        return error instanceof Error ? error.message : String(error);
      },
    }),
  },
}).createMachine({
  id: 'workflow',
  context: ({ input }) => ({
    workflow: input.workflow,
    ...(input.taskId !== undefined ? { taskId: input.taskId } : {}),
    stepIds: input.stepIds,
    onFailureIds: input.onFailureIds,
    phase: 'main',
    cursor: 0,
    results: {},
    outcomes: {},
    ...(input.dag ? { running: [] } : {}),
  }),
  initial: 'starting',
  states: {
    starting: {
      always: [{ guard: 'isDag', target: 'scheduling' }, { target: 'running' }],
    },
    // DAG runs: the runtime starts every step whose needs have ended (STEP_STARTED) and reports its end (STEP_DONE).
    scheduling: {
      on: {
        STEP_STARTED: { actions: 'markStarted' },
        STEP_DONE: { actions: 'recordDagStep' },
        STEP_CRASHED: { target: 'crashed', actions: 'recordCrash' },
        CANCEL: 'cancelled',
      },
      always: [
        { guard: 'dagFailedWithCleanup', target: 'compensating', actions: 'startCleanup' },
        { guard: 'dagFailed', target: 'failed' },
        { guard: 'dagDone', target: 'succeeded' },
      ],
    },
    running: {
      invoke: {
        id: 'step',
        src: 'runStep',
        input: ({ context }): StepRunInput => ({
          phase: 'main',
          index: context.cursor,
          stepId: context.stepIds[context.cursor]!,
          results: context.results,
          outcomes: context.outcomes,
        }),
        onDone: [
          { guard: 'failedHardWithCleanup', target: 'compensating', actions: ['recordStep', 'recordFailure', 'startCleanup'] },
          { guard: 'failedHard', target: 'failed', actions: ['recordStep', 'recordFailure'] },
          { guard: 'hasNextStep', target: 'running', reenter: true, actions: ['recordStep', 'advance'] },
          { target: 'succeeded', actions: 'recordStep' },
        ],
        onError: { target: 'crashed', actions: 'recordCrash' },
      },
      on: { CANCEL: 'cancelled' },
    },
    // onFailure steps run best effort, each as if allowFailure were set; then the run fails.
    compensating: {
      invoke: {
        id: 'step',
        src: 'runStep',
        input: ({ context }): StepRunInput => ({
          phase: 'onFailure',
          index: context.cursor,
          stepId: context.onFailureIds[context.cursor]!,
          results: context.results,
          outcomes: context.outcomes,
        }),
        onDone: [
          { guard: 'hasNextStep', target: 'compensating', reenter: true, actions: ['recordStep', 'advance'] },
          { target: 'failed', actions: 'recordStep' },
        ],
        onError: { target: 'crashed', actions: 'recordCrash' },
      },
      on: { CANCEL: 'cancelled' },
    },
    succeeded: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
    crashed: { type: 'final' },
  },
});

export type WorkflowMachine = typeof workflowMachine;
