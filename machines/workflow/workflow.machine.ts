/**
 * The workflow machine: the executor of one workflow run, free of I/O.
 *
 *   starting → running (one top-level step at a time) → succeeded
 *         ↘ scheduling (DAG: the runtime runs the steps whose needs are met and reports them) → succeeded
 *   running / scheduling: step failed without allowFailure → compensating (onFailure steps) → failed
 *   any active state —CANCEL→ cancelled;  the step executor itself broke → crashed
 *
 * A step of a sequence is run by the invoked `runStep` actor, which calls
 * the step executor the machine got in its `input` (resolving templates,
 * calling the tool); the machine only decides what runs next and records how
 * each step ended. Its persisted snapshot is the run's checkpoint: restored
 * after a restart, the in-flight `runStep` starts again (at-least-once per
 * step).
 *
 * Restore safety (I-8): no `after:` delays, the one invoke has an explicit id,
 * named guards and actions, nothing but JSON in persisted snapshots (the
 * executor is left out and given again on restore, see snapshots.ts).
 */
import { assertEvent, assign, fromPromise, setup } from 'xstate';
import type { StepRunOutput, StepRunRequest, WorkflowContext, WorkflowEvent, WorkflowInput } from './types.js';

/**
 * Stamped next to every persisted snapshot. Bump it when a change to states,
 * context or invoke ids makes older snapshots unsafe to restore as they are.
 */
export const WORKFLOW_MACHINE_VERSION = 1;

/** How the step of a sequence ended: the invoke's output, handed to the guards and actions as params. */
interface Ended {
  output: StepRunOutput;
}

const isHardFailure = (output: StepRunOutput) => output.status === 'failed' && !output.allowFailure;

/** The value `results.<id>` holds for a step that ended with `output`. */
const resultOf = (output: StepRunOutput): unknown =>
  output.status === 'completed' ? output.result : output.status === 'failed' ? (output.result ?? null) : null;

const workflowSetup = setup({
  types: {
    context: {} as WorkflowContext,
    events: {} as WorkflowEvent,
    input: {} as WorkflowInput,
  },
  actors: {
    /** Runs a step with the executor the machine was given (its input carries it, see StepRunRequest). */
    runStep: fromPromise<StepRunOutput, StepRunRequest>(({ input, signal }) => {
      const { executeStep, ...step } = input;
      return executeStep(step, signal);
    }),
  },
  guards: {
    failedHardWithCleanup: ({ context }, { output }: Ended) => isHardFailure(output) && context.onFailureIds.length > 0,
    failedHard: (_, { output }: Ended) => isHardFailure(output),
    hasNextStep: ({ context }) => context.cursor + 1 < (context.phase === 'main' ? context.stepIds : context.onFailureIds).length,
    isDag: ({ context }) => context.running !== undefined,
    // A DAG run ends once nothing is in flight: after a hard failure (no new step starts), or when every step ended.
    dagFailedWithCleanup: ({ context }) =>
      context.failure !== undefined && (context.running ?? []).length === 0 && context.onFailureIds.length > 0,
    dagFailed: ({ context }) => context.failure !== undefined && (context.running ?? []).length === 0,
    dagDone: ({ context }) => (context.running ?? []).length === 0 && context.stepIds.every((id) => Object.hasOwn(context.outcomes, id)),
  },
  actions: {
    recordStep: assign(({ context }, { output }: Ended) => {
      const stepId = (context.phase === 'main' ? context.stepIds : context.onFailureIds)[context.cursor]!;
      const result = resultOf(output);
      // fromEntries: a step id is user text; it must stay a plain own key.
      return {
        results: Object.fromEntries([...Object.entries(context.results), [stepId, result]]),
        outcomes: Object.fromEntries([...Object.entries(context.outcomes), [stepId, output.status]]),
      };
    }),
    recordFailure: assign(({ context }, { output }: Ended) => {
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
        assertEvent(event, 'STEP_STARTED');
        const { stepId } = event;
        const running = context.running ?? [];
        return running.includes(stepId) ? running : [...running, stepId];
      },
    }),
    recordDagStep: assign(({ context, event }) => {
      assertEvent(event, 'STEP_DONE');
      const { stepId, output } = event;
      const result = resultOf(output);
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
    recordCrash: assign((_, { error }: { error: unknown }) => ({
      crash: error instanceof Error ? error.message : String(error),
    })),
  },
});

/** The params of the guards and actions reading how the step of a sequence ended: the invoke's output. */
const ended = ({ event }: { event: { output: StepRunOutput } }): Ended => ({ output: event.output });
/** The params of `recordCrash` when the step executor rejected: its error. */
const failedWith = ({ event }: { event: { error: unknown } }) => ({ error: event.error });

export const workflowMachine = workflowSetup.createMachine({
  id: 'workflow',
  context: ({ input }) => ({
    executeStep: input.executeStep,
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
        STEP_CRASHED: { target: 'crashed', actions: { type: 'recordCrash', params: ({ event }) => ({ error: event.error }) } },
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
        input: ({ context }): StepRunRequest => ({
          executeStep: context.executeStep,
          phase: 'main',
          index: context.cursor,
          stepId: context.stepIds[context.cursor]!,
          results: context.results,
          outcomes: context.outcomes,
        }),
        onDone: [
          {
            guard: { type: 'failedHardWithCleanup', params: ended },
            target: 'compensating',
            actions: [{ type: 'recordStep', params: ended }, { type: 'recordFailure', params: ended }, 'startCleanup'],
          },
          {
            guard: { type: 'failedHard', params: ended },
            target: 'failed',
            actions: [
              { type: 'recordStep', params: ended },
              { type: 'recordFailure', params: ended },
            ],
          },
          { guard: 'hasNextStep', target: 'running', reenter: true, actions: [{ type: 'recordStep', params: ended }, 'advance'] },
          { target: 'succeeded', actions: { type: 'recordStep', params: ended } },
        ],
        onError: { target: 'crashed', actions: { type: 'recordCrash', params: failedWith } },
      },
      on: { CANCEL: 'cancelled' },
    },
    // onFailure steps run best effort, each as if allowFailure were set; then the run fails.
    compensating: {
      invoke: {
        id: 'step',
        src: 'runStep',
        input: ({ context }): StepRunRequest => ({
          executeStep: context.executeStep,
          phase: 'onFailure',
          index: context.cursor,
          stepId: context.onFailureIds[context.cursor]!,
          results: context.results,
          outcomes: context.outcomes,
        }),
        onDone: [
          { guard: 'hasNextStep', target: 'compensating', reenter: true, actions: [{ type: 'recordStep', params: ended }, 'advance'] },
          { target: 'failed', actions: { type: 'recordStep', params: ended } },
        ],
        onError: { target: 'crashed', actions: { type: 'recordCrash', params: failedWith } },
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
