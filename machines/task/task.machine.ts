/**
 * The task machine: the SEP-2663 lifecycle as a statechart, free of I/O.
 *
 *   active { working ⇄ input_required } → completed | failed | cancelled
 *
 * The wire status is a pure projection of the state value (I-3, see
 * `statusOf`). The run (what the task runs: tool function, workflow,
 * upstream call) is the runtime's, not a child actor: the runtime starts it
 * once the actor has started, sends its events to the actor, hears what the
 * machine asks of it as emitted events (`RunMessage`: `ABORT`, `INPUT`),
 * and stops it when the task leaves `active` (an invoked
 * `worker` was a second actor per task). The ttl deadline (T-26) is the
 * runtime's too: one timer for every task sends `DEADLINE` when
 * `createdAt + ttlMs` comes (no actor per task). The machine itself
 * only records what happened.
 *
 * Sleeps (`ctx.sleep`) are context only (`sleeps`, `sleepingUntil`): the
 * timer is the run's while it runs, the runtime's one deadline timer's
 * while the task is passivated; old snapshots, without these optional
 * fields, restore as they are (no version bump).
 *
 * Restore safety (I-8): no `after:` delays (the deadline lives in context,
 * where the runtime reads it back after a restore), no invoked children,
 * named guards and actions, nothing required in entry actions. Snapshots
 * of older machine versions may hold a `deadline` or `worker` child: xstate
 * skips a child whose src the machine does not have, so they restore as they are (no version bump), and the
 * runtime starts the run of a restored task as the restored invoke did.
 */
import { assign, emit, enqueueActions, setup } from 'xstate';
import { EMPTY_JSON_ARRAY, EMPTY_JSON_OBJECT } from '../../src/core/sharedJson.js';
import type { InputRequest, RunMessage, TaskContext, TaskError, TaskEvent, TaskInput, TaskStatus } from './types.js';

/**
 * Stamped next to every persisted snapshot. Bump it when a change to states,
 * context or invoke ids makes older snapshots unsafe to restore as they are.
 */
export const TASK_MACHINE_VERSION = 1;

/** Error a task fails with when its ttl runs out before it finishes (T-26). */
export const deadlineError = (ttlMs: number | null): TaskError => ({
  code: -32603,
  message: `Task expired: its ttlMs of ${ttlMs} ms elapsed before it finished`,
});

/** Error a task fails with when the server restarted under it and it cannot be resumed. */
export const restartError: TaskError = {
  code: -32603,
  message: 'The server restarted while this task was running; the task cannot be resumed',
};

const touch = (context: TaskContext, at: number) => Math.max(context.lastUpdatedAt, at);

/** Keys of `responses` that answer a currently outstanding request (T-22). */
const outstandingKeys = (context: TaskContext, responses: Record<string, unknown>) =>
  Object.keys(responses).filter((key) => Object.hasOwn(context.inputRequests, key));

export const taskMachine = setup({
  types: {
    context: {} as TaskContext,
    events: {} as TaskEvent,
    input: {} as TaskInput,
    emitted: {} as RunMessage,
  },
  guards: {
    isFreshKey: ({ context, event }) => event.type === 'INPUT_NEEDED' && !context.issuedKeys.includes(event.key),
    answersAllOutstanding: ({ context, event }) => {
      if (event.type !== 'INPUT_RESPONSES') return false;
      const answered = outstandingKeys(context, event.responses);
      return answered.length > 0 && answered.length === Object.keys(context.inputRequests).length;
    },
    answersSomeOutstanding: ({ context, event }) =>
      event.type === 'INPUT_RESPONSES' && outstandingKeys(context, event.responses).length > 0,
    isCancelRequested: ({ context }) => context.cancelRequested,
    hasOutstandingInput: ({ context }) => Object.keys(context.inputRequests).length > 0,
    isFirstCancel: ({ context }) => !context.cancelRequested,
    /** A cancel for a task whose run is not running (passivated while it slept): nothing to cancel cooperatively. */
    isIdleCancel: ({ event }) => event.type === 'CANCEL' && event.idle === true,
    /** The message it already shows is no visible change (a handler run again after a restart or rehydration sets it again). */
    isNewStatusMessage: ({ context, event }) => event.type === 'STATUS' && event.message !== context.statusMessage,
  },
  actions: {
    touch: assign({ lastUpdatedAt: ({ context, event }) => touch(context, event.at) }),
    setStatusMessage: assign({
      statusMessage: ({ context, event }) => (event.type === 'STATUS' ? event.message : context.statusMessage),
    }),
    addInputRequest: assign(({ context, event }) => {
      if (event.type !== 'INPUT_NEEDED') return {};
      // Built with fromEntries: a key such as "__proto__" must stay a plain own key (I-4).
      return {
        inputRequests: Object.fromEntries([...Object.entries(context.inputRequests), [event.key, event.request]]),
        issuedKeys: [...context.issuedKeys, event.key],
      };
    }),
    /** Takes the answers to outstanding keys and hands them to the run (emitted `INPUT`); others are ignored (T-22). */
    acceptResponses: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'INPUT_RESPONSES') return;
      const keys = outstandingKeys(context, event.responses);
      // fromEntries, not `obj[key] =`: a "__proto__" key would set a prototype instead of a key.
      const accepted: Record<string, unknown> = Object.fromEntries(keys.map((key) => [key, event.responses[key]]));
      const inputRequests: Record<string, InputRequest> = Object.fromEntries(
        Object.entries(context.inputRequests).filter(([key]) => !keys.includes(key)),
      );
      enqueue.assign({
        inputRequests,
        answers: Object.fromEntries([...Object.entries(context.answers), ...Object.entries(accepted)]),
      });
      enqueue.emit({ type: 'INPUT', taskId: context.taskId, responses: accepted });
    }),
    markCancelRequested: assign({ cancelRequested: true }),
    recordCheckpoint: assign({
      checkpoint: ({ context, event }) => (event.type === 'CHECKPOINT' ? event.checkpoint : context.checkpoint),
    }),
    /** The first sleep of a key fixes its wake time; a replay of it keeps the stored one. */
    recordSleep: assign(({ context, event }) => {
      if (event.type !== 'SLEEP') return {};
      const sleeps = context.sleeps ?? {};
      if (Object.hasOwn(sleeps, event.key)) return { sleepingUntil: event.until };
      // fromEntries: a "__proto__" key stays a plain own key (I-4).
      return { sleeps: Object.fromEntries([...Object.entries(sleeps), [event.key, event.wakeAt]]), sleepingUntil: event.until };
    }),
    recordWoke: assign({
      sleepingUntil: ({ context, event }) => (event.type === 'WOKE' ? (event.until ?? undefined) : context.sleepingUntil),
    }),
    /** A cancelled task's last progress message would read as if it were still running. */
    noteCancelled: assign({ statusMessage: 'The task was cancelled' }),
    /**
     * Asks the run to stop (cooperative cancel, T-24): the runtime hears the emitted `ABORT`. Emitted
     * messages name their task: the runtime hears every task's with one listener function.
     */
    abortRun: emit(({ context }) => ({ type: 'ABORT', taskId: context.taskId }) as const),
    clearInputRequests: assign({ inputRequests: EMPTY_JSON_OBJECT }),
    /** A finished task's last working-phase message ("Waiting for a name") would read as if it were still running. */
    recordResult: assign({
      result: ({ event }) => (event.type === 'WORK_DONE' ? event.result : undefined),
      statusMessage: undefined,
    }),
    recordError: assign(({ context, event }) => {
      switch (event.type) {
        case 'WORK_FAILED':
          return { error: event.error, statusMessage: event.message ?? event.error.message };
        case 'DEADLINE': {
          const error = deadlineError(context.ttlMs);
          return { error, statusMessage: error.message };
        }
        case 'SERVER_RESTARTED': {
          const error = event.message === undefined ? restartError : { ...restartError, message: event.message };
          return { error, statusMessage: error.message };
        }
        default:
          return {};
      }
    }),
  },
}).createMachine({
  id: 'task',
  context: ({ input }) => ({
    taskId: input.taskId,
    owner: input.owner,
    tool: input.tool,
    args: input.args,
    createdAt: input.now,
    lastUpdatedAt: input.now,
    ttlMs: input.ttlMs,
    ...(input.pollIntervalMs !== undefined ? { pollIntervalMs: input.pollIntervalMs } : {}),
    ...(input.statusMessage !== undefined ? { statusMessage: input.statusMessage } : {}),
    ...(input.clientCapabilities !== undefined ? { clientCapabilities: input.clientCapabilities } : {}),
    ...(input.grants !== undefined ? { grants: input.grants } : {}),
    ...(input.trace !== undefined ? { trace: input.trace } : {}),
    cancelRequested: false,
    // Empty, the shared frozen constants: every update replaces these collections, never edits them, and
    // most tasks keep them empty (~56 B each per live task, and again in a memory store's copy).
    // fromEntries: a "__proto__" key stays a plain own key (I-4).
    ...(input.inputRequests && Object.keys(input.inputRequests).length > 0
      ? { inputRequests: Object.fromEntries(Object.entries(input.inputRequests)), issuedKeys: Object.keys(input.inputRequests) }
      : { inputRequests: EMPTY_JSON_OBJECT, issuedKeys: EMPTY_JSON_ARRAY }),
    answers: EMPTY_JSON_OBJECT,
  }),
  initial: 'active',
  states: {
    active: {
      initial: 'working',
      states: {
        working: {
          // Seeded with pending input (created by promotion while the call waited for input): input_required
          // from the first snapshot. `working` never holds outstanding requests otherwise, so this never fires later.
          always: { guard: 'hasOutstandingInput', target: 'input_required' },
          on: {
            INPUT_NEEDED: [
              // Asked to cancel, the run now waits for input: nothing runs any more, so cancel at once
              // rather than ask the client for input after it asked to cancel (T-24).
              { guard: 'isCancelRequested', target: '#task.cancelled', actions: ['clearInputRequests', 'noteCancelled', 'touch'] },
              { guard: 'isFreshKey', target: 'input_required', actions: ['addInputRequest', 'touch'] },
            ],
            CANCEL: [
              // Passivated while it slept: nothing runs on its behalf, so cancel at once (T-24), as in input_required.
              { guard: 'isIdleCancel', target: '#task.cancelled', actions: ['markCancelRequested', 'noteCancelled', 'touch'] },
              // Cooperative cancel (T-24): ask the run to stop; it may still finish.
              { guard: 'isFirstCancel', actions: ['markCancelRequested', 'abortRun', 'touch'] },
            ],
          },
        },
        input_required: {
          on: {
            INPUT_NEEDED: { guard: 'isFreshKey', actions: ['addInputRequest', 'touch'] },
            INPUT_RESPONSES: [
              { guard: 'answersAllOutstanding', target: 'working', actions: ['acceptResponses', 'touch'] },
              // A strict subset keeps the task input_required until the rest arrive (T-22).
              { guard: 'answersSomeOutstanding', actions: ['acceptResponses', 'touch'] },
            ],
            // Nothing is running on the task's behalf while it waits: cancel at once.
            CANCEL: { target: '#task.cancelled', actions: ['markCancelRequested', 'clearInputRequests', 'noteCancelled', 'touch'] },
          },
        },
      },
      on: {
        STATUS: { guard: 'isNewStatusMessage', actions: ['setStatusMessage', 'touch'] },
        // Not a visible change: no touch (lastUpdatedAt is about what clients see).
        CHECKPOINT: { actions: 'recordCheckpoint' },
        // Not visible either: where the run sleeps, kept for a replay and for passivation.
        SLEEP: { actions: 'recordSleep' },
        WOKE: { actions: 'recordWoke' },
        WORK_DONE: { target: 'completed', actions: ['recordResult', 'clearInputRequests', 'touch'] },
        WORK_FAILED: { target: 'failed', actions: ['recordError', 'clearInputRequests', 'touch'] },
        WORK_ABORTED: { guard: 'isCancelRequested', target: 'cancelled', actions: ['clearInputRequests', 'noteCancelled', 'touch'] },
        DEADLINE: { target: 'failed', actions: ['recordError', 'clearInputRequests', 'touch'] },
        SERVER_RESTARTED: { target: 'failed', actions: ['recordError', 'clearInputRequests', 'touch'] },
      },
    },
    // Terminal states are final: no event leaves them or changes their context (I-2, T-28).
    completed: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
});

export type TaskMachine = typeof taskMachine;

/**
 * The wire status of a task snapshot (I-3): the only place a status string is
 * derived, everything else calls this.
 */
export function statusOf(snapshot: { value: unknown }): TaskStatus {
  const value = snapshot.value;
  if (typeof value === 'string') {
    if (value === 'completed' || value === 'failed' || value === 'cancelled') return value;
    throw new Error(`Unknown task state value ${JSON.stringify(value)}`);
  }
  const active = (value as { active?: unknown }).active;
  if (active === 'working' || active === 'input_required') return active;
  throw new Error(`Unknown task state value ${JSON.stringify(value)}`);
}
