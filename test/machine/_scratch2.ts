import { createMachine, initialTransition, transition, spawnChild, stopChild } from 'xstate';
import { createTestModel, getShortestPaths, getSimplePaths } from 'xstate/graph';
import { taskMachine } from '../../machines/task/index.js';
const input = { taskId: 't', owner: 'o', tool: 'x', args: {}, now: 0, ttlMs: null };
const toArr = (x: any) => x === undefined ? [] : Array.isArray(x) ? x : [x];
const strip = (n: any): any => { const { invoke, states, ...rest } = n; const inv = toArr(invoke);
 return { ...rest,
  ...(inv.length ? { entry: [...toArr(n.entry), ...inv.map((i: any) => spawnChild(i.src, { id: i.id, input: i.input }))], exit: [...inv.map((i: any) => stopChild(i.id)), ...toArr(n.exit)] } : {}),
  ...(states ? { states: Object.fromEntries(Object.entries(states).map(([k, v]) => [k, strip(v)])) } : {}) }; };
const m = createMachine(strip(taskMachine.config), taskMachine.implementations as any);
const events = [
  { type: 'STATUS', at: 1, message: 'm' },
  { type: 'INPUT_NEEDED', at: 1, key: 'k1', request: { method: 'roots/list' } },
  { type: 'INPUT_RESPONSES', at: 1, responses: { k1: 1 } },
  { type: 'WORK_DONE', at: 1, result: {} },
  { type: 'WORK_FAILED', at: 1, error: { code: 1, message: 'e' } },
  { type: 'WORK_ABORTED', at: 1 },
  { type: 'CANCEL', at: 1 },
  { type: 'DEADLINE', at: 1 },
  { type: 'SERVER_RESTARTED', at: 1 },
] as any[];
const ser = (s: any) => JSON.stringify([s.value, s.context.cancelRequested, Object.keys(s.context.inputRequests).sort()]);
const opts = { events, input, serializeState: ser } as any;
const sp = getShortestPaths(m, opts);
console.log('shortest', sp.length);
for (const p of sp) console.log(p.steps.map((s: any) => s.event.type).join(' > '), '=>', ser(p.state));
const simp = getSimplePaths(m, opts);
console.log('simple', simp.length);
for (const p of simp) console.log(p.steps.map((s: any) => s.event.type).join(' > '), '=>', ser(p.state));
const sp2 = getShortestPaths(taskMachine, opts); console.log('real machine shortest', sp2.length);
const model = createTestModel(m, opts);
const tp = model.getShortestPaths({ toState: (s: any) => s.status === 'done' });
console.log('tm', tp.length, tp.map(p => p.description));
let [s, a] = initialTransition(taskMachine, input);
console.log(JSON.stringify(a.map((x: any) => ({ t: x.type, p: x.params }))).slice(0, 500));
[s, a] = transition(taskMachine, s, { type: 'CANCEL', at: 3 });
console.log(JSON.stringify(a.map((x: any) => ({ t: x.type, p: x.params }))).slice(0, 500));
[s, a] = transition(taskMachine, s, { type: 'WORK_DONE', at: 3, result: {} });
console.log(JSON.stringify(a.map((x: any) => ({ t: x.type, p: x.params }))).slice(0, 500));
[s, a] = transition(taskMachine, s, { type: 'WORK_DONE', at: 3, result: {} });
console.log(JSON.stringify(a.map((x: any) => ({ t: x.type, p: x.params }))).slice(0, 500));
