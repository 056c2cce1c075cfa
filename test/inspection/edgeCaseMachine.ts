/**
 * A machine that uses every shape the exporters have to draw and the task
 * machine does not: parallel regions, deep history, delayed (`after`) and
 * eventless (`always`) transitions, `onDone` of a state and of an invoke,
 * `onError`, a transition with two targets, transitions of the root itself,
 * `and`/`not` guards, an inline guard and action, and state keys that are
 * Mermaid keywords or would collide once sanitised.
 */
import { and, assign, fromPromise, not, setup } from 'xstate';

export const edgeCaseMachine = setup({
  types: { events: {} as { type: 'GO' } | { type: 'BOTH' } | { type: 'RESET' } | { type: 'PING' } | { type: 'FINISH' } },
  actors: { job: fromPromise(async () => 1) },
  guards: { ready: () => true, blocked: () => false },
  actions: { log: () => {}, count: () => {} },
}).createMachine({
  id: 'edge',
  initial: 'idle',
  on: {
    RESET: { target: '.idle', actions: 'log' },
    PING: { actions: ['count', assign({})] },
  },
  states: {
    idle: {
      on: {
        GO: [
          { guard: and(['ready', not('blocked')]), target: 'split' },
          { guard: () => true, target: 'end' },
        ],
      },
      after: { 1000: 'end' },
    },
    split: {
      type: 'parallel',
      states: {
        left: {
          initial: 'a1',
          states: {
            a1: { on: { FINISH: 'a2' } },
            a2: { type: 'final' },
            hist: { type: 'history', history: 'deep' },
          },
        },
        right: {
          initial: 'b1',
          states: { b1: {}, b2: { type: 'final' } },
        },
      },
      on: { BOTH: { target: ['#edge.split.left.a2', '#edge.split.right.b2'] } },
      onDone: 'my-state',
    },
    'my-state': {
      invoke: { id: 'job', src: 'job', onDone: 'my_state', onError: { target: 'end', actions: 'log' } },
    },
    my_state: { always: { target: 'end', guard: 'ready' } },
    end: { type: 'final' },
  },
});
