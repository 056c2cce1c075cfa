/**
 * Property tests of the pure task machine (fast-check 4 over the pure
 * `initialTransition`/`transition` of xstate, plus real actors for I-8).
 *
 * Random sequences of up to 40 events of every `TaskEvent` type, with random
 * out-of-order `at` timestamps, input keys from a small pool (so repeats
 * happen) and responses under subsets of the pool plus keys never issued.
 *
 * Invariants: I-2, I-3, I-4, I-8 (design/ARCHITECTURE.md); spec rules T-12,
 * T-13, T-18, T-22, T-24, T-28 (reference/tasks-spec-2026-07-28.md).
 *
 * The "regression:" tests at the end pin down findings of this suite that were
 * fixed in the machine ("__proto__" input keys, input after a cancel request,
 * what a restored task's run starts from); the "sanity:" tests show the
 * properties fail on deliberately broken copies, old bugs included.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { assign, createActor, enqueueActions, initialTransition, transition, type SnapshotFrom } from 'xstate';
import {
  TERMINAL_STATUSES,
  statusOf,
  taskMachine,
  type InputRequest,
  type TaskEvent,
  type TaskInput,
  type TaskStatus,
  type RunMessage,
} from '../../machines/task/index.js';

type Machine = typeof taskMachine;
type Snap = SnapshotFrom<Machine>;

const STATUSES: readonly TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
const NUM_RUNS = 1000;

// ---------------------------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------------------------

/**
 * Keys a worker asks under: a small pool, so the same key is asked for again.
 * '__proto__' must stay a plain own key everywhere (I-4): with the machine's
 * old `obj[key] = …` it vanished or became a prototype (see the regression and
 * sanity tests below).
 */
const KEYS = ['a', 'b', 'c', '__proto__'] as const;
/** Keys never issued; two of them are names of `Object.prototype` members. */
const UNKNOWN_KEYS = ['zz', 'toString', 'constructor'] as const;

const atArb = fc.integer({ min: 0, max: 1000 });

const inputArb: fc.Arbitrary<TaskInput> = fc
  .record({
    now: fc.integer({ min: 0, max: 1000 }),
    ttlMs: fc.option(fc.integer({ min: 1, max: 100_000 }), { nil: null }),
  })
  .map(({ now, ttlMs }) => ({ taskId: 'task-1', owner: 'alice', tool: 'echo', args: { x: 1 }, now, ttlMs }));

const requestArb: fc.Arbitrary<InputRequest> = fc.oneof(
  fc.constant<InputRequest>({ method: 'roots/list' }),
  fc
    .record({
      method: fc.constantFrom('elicitation/create' as const, 'sampling/createMessage' as const),
      n: fc.nat(99),
    })
    .map(({ method, n }): InputRequest => ({ method, params: { n } })),
);

const responsesArb: fc.Arbitrary<Record<string, unknown>> = fc
  .tuple(fc.subarray([...KEYS, ...UNKNOWN_KEYS]), fc.nat(999))
  .map(([keys, n]) => Object.fromEntries(keys.map((key, i) => [key, { answer: n + i }])));

const errorArb = fc.record({ code: fc.integer({ min: -32768, max: -32000 }), message: fc.string({ maxLength: 8 }) });

const eventArb: fc.Arbitrary<TaskEvent> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ type: fc.constant('STATUS' as const), at: atArb, message: fc.string({ maxLength: 6 }) }) },
  {
    weight: 6,
    arbitrary: fc.record({ type: fc.constant('INPUT_NEEDED' as const), at: atArb, key: fc.constantFrom(...KEYS), request: requestArb }),
  },
  { weight: 6, arbitrary: fc.record({ type: fc.constant('INPUT_RESPONSES' as const), at: atArb, responses: responsesArb }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('WORK_DONE' as const), at: atArb, result: fc.record({ n: fc.nat(9) }) }) },
  {
    weight: 1,
    arbitrary: fc
      .record({ at: atArb, error: errorArb, message: fc.option(fc.string({ maxLength: 6 }), { nil: undefined }) })
      .map(({ at, error, message }): TaskEvent =>
        message === undefined ? { type: 'WORK_FAILED', at, error } : { type: 'WORK_FAILED', at, error, message },
      ),
  },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('WORK_ABORTED' as const), at: atArb }) },
  { weight: 3, arbitrary: fc.record({ type: fc.constant('CANCEL' as const), at: atArb }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('DEADLINE' as const), at: atArb }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('SERVER_RESTARTED' as const), at: atArb }) },
);

const eventsArb = fc.array(eventArb, { maxLength: 40 });

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

interface Trace {
  /** states[0] is the initial state; states[i] follows events[i - 1]. */
  states: Snap[];
  /** actions[i] are the actions of the step that produced states[i]. */
  actions: unknown[][];
}

function trace(machine: Machine, input: TaskInput, events: readonly TaskEvent[]): Trace {
  let [state, actions] = initialTransition(machine, input);
  const t: Trace = { states: [state], actions: [actions] };
  for (const event of events) {
    [state, actions] = transition(machine, state, event);
    t.states.push(state);
    t.actions.push(actions);
  }
  return t;
}

const isTerminal = (s: Snap) => TERMINAL_STATUSES.has(statusOf(s));
/** The whole observable state: value and context, as JSON. */
const stateJson = (s: Snap) => JSON.stringify({ value: s.value, context: s.context });
const keysOf = (o: object) => Object.keys(o);

// ---------------------------------------------------------------------------------------------
// Properties, as functions of the machine so the sanity checks can run them on broken copies
// ---------------------------------------------------------------------------------------------

/** 1. Terminal absorbs (I-2, T-28). */
const terminalAbsorbs = (machine: Machine) =>
  fc.property(inputArb, eventsArb, (input, events) => {
    const { states, actions } = trace(machine, input, events);
    const first = states.findIndex(isTerminal);
    if (first < 0) return;
    const terminal = states[first]!;
    assert.equal(terminal.status, 'done');
    for (let i = first; i < states.length; i++) {
      const s = states[i]!;
      assert.equal(statusOf(s), statusOf(terminal));
      assert.deepEqual(s.value, terminal.value);
      assert.equal(JSON.stringify(s.context), JSON.stringify(terminal.context));
      assert.equal(s.status, 'done');
      // Nothing is emitted to the task's run after the end.
      if (i > first) assert.deepEqual(actions[i], []);
    }
  });

/** 2. lastUpdatedAt is monotone and >= createdAt; statusOf is total over the 5 statuses (I-3). */
const timestampsAndStatus = (machine: Machine) =>
  fc.property(inputArb, eventsArb, (input, events) => {
    const { states } = trace(machine, input, events);
    let maxAt = input.now;
    for (let i = 0; i < states.length; i++) {
      const s = states[i]!;
      const status = statusOf(s);
      assert.ok(STATUSES.includes(status), `unexpected status ${status}`);
      assert.equal(s.status === 'done', TERMINAL_STATUSES.has(status), 'actor status agrees with the wire status');
      assert.equal(s.context.createdAt, input.now);
      assert.ok(s.context.lastUpdatedAt >= s.context.createdAt, 'lastUpdatedAt >= createdAt');
      if (i === 0) {
        assert.equal(s.context.lastUpdatedAt, input.now);
        continue;
      }
      const prev = states[i - 1]!;
      const event = events[i - 1]!;
      maxAt = Math.max(maxAt, event.at);
      assert.ok(
        s.context.lastUpdatedAt >= prev.context.lastUpdatedAt,
        `lastUpdatedAt went back from ${prev.context.lastUpdatedAt} to ${s.context.lastUpdatedAt}`,
      );
      assert.ok(s.context.lastUpdatedAt <= maxAt, 'lastUpdatedAt is never in the future of every event seen');
      // A step either leaves lastUpdatedAt alone or touches it to max(prev, at) ...
      assert.ok([prev.context.lastUpdatedAt, Math.max(prev.context.lastUpdatedAt, event.at)].includes(s.context.lastUpdatedAt));
      // ... and every visible change is touched.
      const { lastUpdatedAt: _p, ...prevRest } = prev.context;
      const { lastUpdatedAt: _n, ...nextRest } = s.context;
      if (JSON.stringify([prev.value, prevRest]) !== JSON.stringify([s.value, nextRest])) {
        assert.equal(s.context.lastUpdatedAt, Math.max(prev.context.lastUpdatedAt, event.at), `untouched change on ${event.type}`);
      }
    }
  });

/**
 * 3. Cooperative cancel (T-24).
 *
 * A cancel request is sticky and never lost. It is recorded at once in
 * `working` without ending the task (the worker may still finish: completion
 * or failure win the race), and it ends an `input_required` task at once.
 * Once it is recorded the task is never input_required: a worker that asks
 * for input after it (it had not seen ABORT yet) runs no more, so INPUT_NEEDED
 * ends the task cancelled, as does the worker's WORK_ABORTED. `cancelled`
 * needs a CANCEL; a WORK_ABORTED nobody asked for changes nothing.
 */
const cooperativeCancel = (machine: Machine) =>
  fc.property(inputArb, eventsArb, (input, events) => {
    const { states } = trace(machine, input, events);
    let cancelSeen = false;
    for (let i = 1; i < states.length; i++) {
      const prev = states[i - 1]!;
      const next = states[i]!;
      const event = events[i - 1]!;
      if (event.type === 'CANCEL') cancelSeen = true;
      const prevStatus = statusOf(prev);
      const nextStatus = statusOf(next);

      if (prev.context.cancelRequested) assert.equal(next.context.cancelRequested, true, 'cancelRequested is sticky');
      if (next.context.cancelRequested) assert.ok(cancelSeen, 'cancelRequested without a CANCEL');
      if (nextStatus === 'cancelled') assert.ok(cancelSeen, 'cancelled without a CANCEL');
      if (next.context.cancelRequested) {
        assert.notEqual(nextStatus, 'input_required', 'the client is never asked for input after it asked to cancel');
      }

      if (event.type === 'CANCEL' && prevStatus === 'working') {
        assert.equal(nextStatus, 'working', 'CANCEL in working is cooperative: the task keeps running');
        assert.equal(next.context.cancelRequested, true);
        if (prev.context.cancelRequested) assert.equal(stateJson(next), stateJson(prev), 'a repeated CANCEL is a no-op');
      }
      if (event.type === 'CANCEL' && prevStatus === 'input_required') {
        assert.equal(nextStatus, 'cancelled', 'nothing runs while input_required: CANCEL ends the task');
        assert.deepEqual(next.context.inputRequests, {});
      }
      if (event.type === 'INPUT_NEEDED' && prevStatus === 'working' && prev.context.cancelRequested) {
        // Under any key, fresh or not: the worker waits, so nothing runs on the task's behalf any more.
        assert.equal(nextStatus, 'cancelled', 'INPUT_NEEDED after a cancel request ends the task cancelled');
        assert.deepEqual(next.context.inputRequests, {});
        assert.deepEqual(next.context.issuedKeys, prev.context.issuedKeys, 'no key is issued for a request nobody will see');
      }
      if (nextStatus === 'cancelled' && prevStatus !== 'cancelled') {
        assert.ok(
          (event.type === 'CANCEL' && prevStatus === 'input_required') ||
            (event.type === 'WORK_ABORTED' && prev.context.cancelRequested) ||
            (event.type === 'INPUT_NEEDED' && prev.context.cancelRequested),
          `entered cancelled on ${event.type} from ${prevStatus}`,
        );
      }
      if (event.type === 'WORK_ABORTED' && !prev.context.cancelRequested) {
        assert.notEqual(nextStatus, 'cancelled');
        assert.equal(stateJson(next), stateJson(prev), 'an unrequested WORK_ABORTED is ignored');
      }
      if (nextStatus === 'input_required' && prevStatus !== 'input_required') {
        assert.equal(event.type, 'INPUT_NEEDED', 'input_required is entered only when the worker asks');
      }
    }
    // The request is never lost: every live state with cancelRequested is working, and from it
    // the worker's acknowledgement or its asking for input (under any key) ends the task cancelled.
    for (const s of states) {
      if (isTerminal(s) || !s.context.cancelRequested) continue;
      assert.equal(statusOf(s), 'working');
      const at = s.context.lastUpdatedAt;
      assert.equal(statusOf(transition(machine, s, { type: 'WORK_ABORTED', at })[0]), 'cancelled');
      for (const key of [...KEYS, ...s.context.issuedKeys]) {
        const [after] = transition(machine, s, { type: 'INPUT_NEEDED', at, key, request: { method: 'roots/list' } });
        assert.equal(statusOf(after), 'cancelled', `INPUT_NEEDED ${key} after a cancel request`);
      }
    }
  });

/** 4. Input keys (I-4, T-12, T-13, T-18, T-22). */
const inputKeys = (machine: Machine) =>
  fc.property(inputArb, eventsArb, (input, events) => {
    const { states, actions } = trace(machine, input, events);
    /** The request a key was first issued with (T-18: one key never names two requests). */
    const firstRequest = new Map<string, string>();
    /** Keys that were outstanding and are not any more: they never come back. */
    const gone = new Set<string>();
    for (let i = 0; i < states.length; i++) {
      const s = states[i]!;
      const { issuedKeys, inputRequests, answers } = s.context;
      const outstanding = keysOf(inputRequests);
      assert.equal(new Set(issuedKeys).size, issuedKeys.length, `duplicate issued key in ${JSON.stringify(issuedKeys)}`);
      for (const key of outstanding) {
        assert.ok(issuedKeys.includes(key), `outstanding key ${key} was never issued`);
        assert.ok(!gone.has(key), `key ${key} came back after it was answered or cleared`);
      }
      for (const key of keysOf(answers)) {
        assert.ok(issuedKeys.includes(key), `answer under never-issued key ${key}`);
        assert.ok(!Object.hasOwn(inputRequests, key), `answered key ${key} is still outstanding`);
      }
      if (isTerminal(s)) assert.deepEqual(inputRequests, {}, 'a terminal task has no outstanding requests');
      else assert.equal(statusOf(s) === 'input_required', outstanding.length > 0, 'input_required iff requests are outstanding');

      if (i === 0) continue;
      const prev = states[i - 1]!;
      const event = events[i - 1]!;
      // issuedKeys only ever grows at the end.
      assert.deepEqual(issuedKeys.slice(0, prev.context.issuedKeys.length), prev.context.issuedKeys);
      for (const key of keysOf(prev.context.inputRequests)) if (!Object.hasOwn(inputRequests, key)) gone.add(key);
      if (event.type === 'INPUT_NEEDED' && !firstRequest.has(event.key) && issuedKeys.includes(event.key)) {
        firstRequest.set(event.key, JSON.stringify(event.request));
      }
      for (const key of outstanding)
        assert.equal(JSON.stringify(inputRequests[key]), firstRequest.get(key), `request under ${key} changed`);

      if (event.type === 'INPUT_NEEDED' && !isTerminal(prev) && prev.context.cancelRequested) {
        // T-24 (property 3): asked to cancel, a run that asks for input, under any key, ends the task.
        assert.equal(statusOf(s), 'cancelled');
      } else if (event.type === 'INPUT_NEEDED' && prev.context.issuedKeys.includes(event.key)) {
        assert.equal(stateJson(s), stateJson(prev), `re-issuing key ${event.key} changed the task`);
      }
      if (event.type === 'INPUT_RESPONSES') {
        const accepted = Object.fromEntries(
          Object.entries(event.responses).filter(([key]) => Object.hasOwn(prev.context.inputRequests, key)),
        );
        if (isTerminal(prev) || keysOf(accepted).length === 0) {
          // Only unknown, already answered or not-yet-issued keys (or a working/terminal task): nothing changes.
          assert.equal(stateJson(s), stateJson(prev), 'responses to no outstanding key changed the task');
          assert.deepEqual(actions[i], [], 'nothing is emitted to the run');
          continue;
        }
        // Unknown and answered keys change nothing: the same step with only the outstanding keys is identical.
        const [only] = transition(machine, prev, { ...event, responses: accepted });
        assert.equal(stateJson(s), stateJson(only), 'keys that are not outstanding changed the outcome');
        assert.deepEqual(answers, { ...prev.context.answers, ...accepted });
        assert.deepEqual(
          outstanding,
          keysOf(prev.context.inputRequests).filter((key) => !Object.hasOwn(accepted, key)),
          'exactly the answered keys leave inputRequests',
        );
        // T-22: a strict subset keeps the task input_required; answering all resumes it.
        assert.equal(statusOf(s), outstanding.length > 0 ? 'input_required' : 'working');
        // The run gets exactly the accepted answers (emitted `INPUT`).
        const sent = (actions[i] as Array<{ type: string; params?: { event?: unknown } }>)
          .filter((a) => a.type === 'xstate.emit')
          .map((a) => a.params?.event);
        assert.deepEqual(sent, [{ type: 'INPUT', taskId: input.taskId, responses: accepted }]);
      }
    }
  });

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

test('generators reach every status, the cancel races and repeated keys', () => {
  const seen = new Set<string>();
  for (const [input, events] of fc.sample(fc.tuple(inputArb, eventsArb), { numRuns: 1000, seed: 42 })) {
    const { states } = trace(taskMachine, input, events);
    states.forEach((s, i) => {
      seen.add(statusOf(s));
      if (s.context.cancelRequested) seen.add(`${statusOf(s)}+cancelRequested`);
      const event = events[i - 1];
      if (event?.type === 'INPUT_NEEDED' && states[i - 1]!.context.issuedKeys.includes(event.key)) seen.add('reissued key');
      if (event?.type === 'INPUT_NEEDED' && statusOf(states[i - 1]!) === 'working' && states[i - 1]!.context.cancelRequested) {
        seen.add('input needed after a cancel request');
      }
      if (Object.hasOwn(s.context.inputRequests, '__proto__')) seen.add('__proto__ outstanding');
      if (Object.hasOwn(s.context.answers, '__proto__')) seen.add('__proto__ answered');
      if (event?.type === 'INPUT_RESPONSES' && statusOf(s) === 'input_required' && stateJson(s) !== stateJson(states[i - 1]!)) {
        seen.add('partial answer');
      }
    });
  }
  for (const expected of [
    ...STATUSES,
    'working+cancelRequested',
    'completed+cancelRequested',
    'failed+cancelRequested',
    'cancelled+cancelRequested',
    'input needed after a cancel request',
    'reissued key',
    'partial answer',
    '__proto__ outstanding',
    '__proto__ answered',
  ]) {
    assert.ok(seen.has(expected), `the generators never produced ${expected}`);
  }
  // Unreachable since INPUT_NEEDED after a cancel request ends the task (T-24): the same 1000 samples never produce it.
  assert.ok(!seen.has('input_required+cancelRequested'), 'a task whose cancel was requested became input_required');
});

test('1. terminal states absorb every later event (I-2, T-28)', () => {
  fc.assert(terminalAbsorbs(taskMachine), { numRuns: NUM_RUNS });
});

test('2. lastUpdatedAt is monotone and >= createdAt; statusOf is one of the 5 statuses (I-3)', () => {
  fc.assert(timestampsAndStatus(taskMachine), { numRuns: NUM_RUNS });
});

test('3. cancel is cooperative, sticky and never lost; cancelled needs a CANCEL (T-24)', () => {
  fc.assert(cooperativeCancel(taskMachine), { numRuns: NUM_RUNS });
});

test('4. input keys are unique, never come back, and responses to other keys change nothing (I-4, T-18, T-22)', () => {
  fc.assert(inputKeys(taskMachine), { numRuns: NUM_RUNS });
});

test('5. persist → JSON → restore at a random cut is invisible (I-8)', () => {
  const caseArb = fc
    .tuple(inputArb, eventsArb)
    .chain(([input, events]) => fc.tuple(fc.constant(input), fc.constant(events), fc.integer({ min: 0, max: events.length })));
  fc.assert(
    fc.property(caseArb, ([input, events, cut]) => {
      const original = createActor(taskMachine, { input }).start();
      for (const event of events.slice(0, cut)) original.send(event);
      const snapshot = JSON.parse(JSON.stringify(original.getPersistedSnapshot()));
      // xstate ignores `input` on restore but its options type requires one (statelyai/xstate#4915).
      const restored = createActor(taskMachine, { snapshot, input }).start();
      try {
        assert.equal(JSON.stringify(restored.getPersistedSnapshot()), JSON.stringify(original.getPersistedSnapshot()));
        for (const event of events.slice(cut)) {
          original.send(event);
          restored.send(event);
          assert.equal(JSON.stringify(restored.getPersistedSnapshot()), JSON.stringify(original.getPersistedSnapshot()));
        }
        assert.equal(statusOf(restored.getSnapshot()), statusOf(original.getSnapshot()));
        // The actor runs agree with the pure transitions.
        const pure = trace(taskMachine, input, events).states.at(-1)!;
        assert.equal(stateJson(original.getSnapshot()), stateJson(pure));
      } finally {
        original.stop();
        restored.stop();
      }
    }),
    { numRuns: 300 },
  );
});

// ---------------------------------------------------------------------------------------------
// The suite can fail: the same properties on deliberately broken copies of the machine
// ---------------------------------------------------------------------------------------------

function assertFinds(property: fc.IProperty<[TaskInput, TaskEvent[]]>, t: { diagnostic(message: string): void }) {
  const details = fc.check(property, { numRuns: NUM_RUNS, seed: 1 });
  assert.equal(details.failed, true, 'fast-check found no counterexample on a broken machine');
  const [input, events] = details.counterexample ?? [];
  t.diagnostic(`shrunk counterexample: now=${input?.now} events=${JSON.stringify(events)}`);
}

test('sanity: property 2 fails when touch overwrites lastUpdatedAt with event.at', (t) => {
  const broken = taskMachine.provide({ actions: { touch: assign({ lastUpdatedAt: ({ event }) => event.at }) } });
  assertFinds(timestampsAndStatus(broken), t);
});

test('sanity: property 4 fails when a key can be issued twice', (t) => {
  const broken = taskMachine.provide({ guards: { isFreshKey: ({ event }) => event.type === 'INPUT_NEEDED' } });
  assertFinds(inputKeys(broken), t);
});

test('sanity: property 3 fails when WORK_ABORTED cancels without a CANCEL', (t) => {
  const broken = taskMachine.provide({ guards: { isCancelRequested: () => true } });
  assertFinds(cooperativeCancel(broken), t);
});

test('sanity: property 3 fails on the old machine, where INPUT_NEEDED after a cancel request made the task input_required', (t) => {
  // The guard only decides the new first INPUT_NEEDED branch for INPUT_NEEDED: false there restores the old behaviour.
  const broken = taskMachine.provide({
    guards: { isCancelRequested: ({ context, event }) => event.type !== 'INPUT_NEEDED' && context.cancelRequested },
  });
  assertFinds(cooperativeCancel(broken), t);
});

test('sanity: property 4 fails on the old acceptResponses, which built objects with `obj[key] = …` ("__proto__")', (t) => {
  // The machine's acceptResponses before the fix, verbatim but for the names.
  const oldAcceptResponses = enqueueActions(({ context: ctx, event: ev, enqueue }) => {
    const context = ctx as Snap['context'];
    const event = ev as TaskEvent;
    if (event.type !== 'INPUT_RESPONSES') return;
    const keys = Object.keys(event.responses).filter((key) => Object.hasOwn(context.inputRequests, key));
    const accepted: Record<string, unknown> = {};
    for (const key of keys) accepted[key] = event.responses[key];
    const inputRequests: Record<string, InputRequest> = {};
    for (const [key, request] of Object.entries(context.inputRequests)) {
      if (!keys.includes(key)) inputRequests[key] = request;
    }
    enqueue.assign({ inputRequests, answers: { ...context.answers, ...accepted } });
    enqueue.emit({ type: 'INPUT', taskId: context.taskId, responses: accepted } satisfies RunMessage as never);
  });
  const broken = taskMachine.provide({ actions: { acceptResponses: oldAcceptResponses as never } });
  assertFinds(inputKeys(broken), t);
});

// ---------------------------------------------------------------------------------------------
// Regressions: findings of this suite, fixed in the machine, each with a minimal event sequence
// ---------------------------------------------------------------------------------------------

const INPUT: TaskInput = { taskId: 'task-1', owner: 'alice', tool: 'echo', args: {}, now: 0, ttlMs: null };
const run = (events: TaskEvent[]) => trace(taskMachine, INPUT, events).states.at(-1)!;

test('regression: INPUT_NEEDED after a cancel request ends the task cancelled, never input_required (T-24)', () => {
  const [s1, s2] = trace(taskMachine, INPUT, [
    { type: 'CANCEL', at: 1 },
    { type: 'INPUT_NEEDED', at: 2, key: 'a', request: { method: 'roots/list' } },
  ]).states.slice(1);
  assert.equal(statusOf(s1!), 'working', 'CANCEL in working only asks the run to stop');
  assert.equal(s1!.context.cancelRequested, true);
  // Was: input_required with cancelRequested=true, asking the client for input after it asked to cancel.
  assert.equal(statusOf(s2!), 'cancelled');
  assert.equal(s2!.status, 'done');
  assert.equal(s2!.context.cancelRequested, true);
  assert.deepEqual(s2!.context.inputRequests, {});
  assert.equal(s2!.context.lastUpdatedAt, 2);
  // Without a cancel request the same INPUT_NEEDED still asks the client.
  assert.equal(statusOf(run([{ type: 'INPUT_NEEDED', at: 2, key: 'a', request: { method: 'roots/list' } }])), 'input_required');
});

test('regression: an outstanding key "__proto__" stays listed when another key is answered (I-4, T-12)', () => {
  const s = run([
    { type: 'INPUT_NEEDED', at: 1, key: '__proto__', request: { method: 'roots/list' } },
    { type: 'INPUT_NEEDED', at: 2, key: 'b', request: { method: 'roots/list' } },
    { type: 'INPUT_RESPONSES', at: 3, responses: { b: 1 } },
  ]);
  assert.equal(statusOf(s), 'input_required');
  assert.deepEqual(Object.keys(s.context.inputRequests), ['__proto__'], 'the unanswered request is still listed');
  assert.equal(Object.getPrototypeOf(s.context.inputRequests), Object.prototype, 'and it is a key, not a prototype');
});

test('regression: the answer to key "__proto__" is recorded and emitted to the run (I-4)', () => {
  const [s0] = initialTransition(taskMachine, INPUT);
  const [s1] = transition(taskMachine, s0, { type: 'INPUT_NEEDED', at: 1, key: '__proto__', request: { method: 'roots/list' } });
  const responses = JSON.parse('{"__proto__":{"ok":true}}') as Record<string, unknown>; // as a JSON request body parses
  const [s2, actions] = transition(taskMachine, s1, { type: 'INPUT_RESPONSES', at: 2, responses });
  assert.equal(statusOf(s2), 'working');
  assert.ok(Object.hasOwn(s2.context.answers, '__proto__'), 'the answer is recorded');
  assert.deepEqual(Object.getOwnPropertyDescriptor(s2.context.answers, '__proto__')?.value, { ok: true });
  assert.equal(Object.getPrototypeOf(s2.context.answers), Object.prototype);
  const sent = (actions as Array<{ params?: { event?: { responses?: object } } }>).map((a) => a.params?.event?.responses);
  assert.ok(Object.hasOwn(sent[0] ?? {}, '__proto__'), 'the run receives the answer');
  // And it survives persist → JSON → restore.
  const restored = JSON.parse(JSON.stringify(s2.context)) as typeof s2.context;
  assert.ok(Object.hasOwn(restored.answers, '__proto__'));
});

test('regression: a restored task holds in its context what its run starts from, and no child (I-8)', () => {
  // The contract the runtime relies on (src/runtime/RunWiring.ts startRun): a restored task's run starts
  // from the actor's context (answers, issuedKeys, inputRequests, args), as the old invoked worker read it.
  const INPUT_WITH_ARGS: TaskInput = { ...INPUT, tool: 'ask', args: { question: 'go?' } };
  const original = createActor(taskMachine, { input: INPUT_WITH_ARGS }).start();
  original.send({ type: 'INPUT_NEEDED', at: 1, key: 'a', request: { method: 'roots/list' } });
  original.send({ type: 'INPUT_RESPONSES', at: 2, responses: { a: 'yes' } });
  original.send({ type: 'INPUT_NEEDED', at: 3, key: 'b', request: { method: 'roots/list' } });
  const snapshot = JSON.parse(JSON.stringify(original.getPersistedSnapshot()));
  original.stop();
  assert.deepEqual(snapshot.children, {}, 'no invoked child is persisted');
  const restored = createActor(taskMachine, { snapshot, input: INPUT_WITH_ARGS }).start(); // input ignored (statelyai/xstate#4915)
  try {
    const { context } = restored.getSnapshot();
    assert.deepEqual(context.args, { question: 'go?' });
    assert.deepEqual(context.answers, { a: 'yes' }, 'the answer given before the cut');
    assert.deepEqual(context.issuedKeys, ['a', 'b'], 'every key issued before the cut');
    assert.deepEqual(Object.keys(context.inputRequests), ['b'], 'the request still outstanding');
    assert.equal(statusOf(restored.getSnapshot()), 'input_required');
    assert.deepEqual(restored.getSnapshot().children, {});
  } finally {
    restored.stop();
  }
});
