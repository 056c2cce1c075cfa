import { createActor, fromCallback, initialTransition, transition } from 'xstate';
import { taskMachine, statusOf } from '../../machines/task/index.js';
const input = { taskId: 't', owner: 'o', tool: 'x', args: {}, now: 100, ttlMs: null };
// 1. transitions on final
let [s] = initialTransition(taskMachine, input);
[s] = transition(taskMachine, s, { type: 'WORK_DONE', at: 200, result: {} });
console.log(s.status, s.value, s.context.lastUpdatedAt);
const [s2] = transition(taskMachine, s, { type: 'STATUS', at: 500, message: 'x' });
console.log(s2 === s, s2.status, s2.context.lastUpdatedAt, s2.context.statusMessage);
// 2. cancel then input needed
let [c] = initialTransition(taskMachine, input);
for (const e of [{ type: 'CANCEL', at: 1 }, { type: 'INPUT_NEEDED', at: 2, key: 'a', request: { method: 'roots/list' } }] as const) [c] = transition(taskMachine, c, e as any);
console.log(statusOf(c), c.context.cancelRequested);
// 3. __proto__ key
let [p] = initialTransition(taskMachine, input);
for (const e of [
  { type: 'INPUT_NEEDED', at: 2, key: '__proto__', request: { method: 'roots/list' } },
  { type: 'INPUT_NEEDED', at: 3, key: 'b', request: { method: 'roots/list' } },
  { type: 'INPUT_RESPONSES', at: 4, responses: { b: 1 } },
] as any[]) { [p] = transition(taskMachine, p, e); console.log(statusOf(p), JSON.stringify(p.context.inputRequests), Object.keys(p.context.inputRequests), p.context.issuedKeys); }
// 4. worker input on restore
const seen: unknown[] = [];
const m = taskMachine.provide({ actors: { worker: fromCallback(({ input }) => { seen.push(input); return () => {}; }) as any } });
const a = createActor(m, { input }).start();
a.send({ type: 'INPUT_NEEDED', at: 2, key: 'k', request: { method: 'roots/list' } });
a.send({ type: 'INPUT_RESPONSES', at: 3, responses: { k: 42 } });
const snap = JSON.parse(JSON.stringify(a.getPersistedSnapshot()));
console.log(JSON.stringify(snap));
a.stop();
const b = createActor(m, { snapshot: snap, input: undefined as never }).start();
console.log('worker inputs', JSON.stringify(seen));
