/**
 * The workflow machine: the executor of one workflow run, free of I/O.
 *
 *   running (one top-level step at a time) → succeeded
 *         ↘ step failed without allowFailure → compensating (onFailure steps) → failed
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
    runStep: fromPromise<StepRunOutput, StepRunInput>(async () => ({ status: 'skipped' })),
  },
  guards: {
    failedHardWithCleanup: ({ context, event }) => isHardFailure(outputOf(event)) && context.onFailureIds.length > 0,
    failedHard: ({ event }) => isHardFailure(outputOf(event)),
    hasNextStep: ({ context }) => context.cursor + 1 < (context.phase === 'main' ? context.stepIds : context.onFailureIds).length,
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
  }),
  initial: 'running',
  states: {
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
