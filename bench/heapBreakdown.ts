/**
 * Where the heap of a live idle task goes, from two heap snapshots: builds
 * 200 tasks (warm-up), snapshots, builds `n` more, snapshots again, and
 * groups every object of the second snapshot that the first did not have by
 * what it is and what holds it (`Constructor{its first keys} <- holder.edge`),
 * in bytes and objects per task. The same modes and tools as bench/heap.ts.
 *
 *   node --expose-gc --max-old-space-size=6000 --import tsx bench/heapBreakdown.ts '{"mode":"memory","n":5000}'
 *
 * Not a cell of `npm run bench` (two snapshots of a few hundred MB take a
 * minute): run it when the heap cell moves, to see which part did.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { createActor } from 'xstate';
import { createRuntime, silentLogger } from '../src/index.js';
import { taskMachine } from '../src/inspection/index.js';
import type { ToolCaller } from '../src/runtime/ToolCaller.js';
import { MemoryTaskStore } from '../src/store/index.js';
import { registerBenchTools } from './tools.js';

interface Args {
  mode: 'xstate' | 'memory';
  n: number;
  tool?: 'bench_wait' | 'bench_hold';
  /** Rows printed, largest first. */
  top?: number;
}

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc!();
  }
}

const input = (taskId: string) => ({ taskId, owner: 'anonymous', tool: 'bench_wait', args: {}, now: Date.now(), ttlMs: 3_600_000 });
const dir = await mkdtemp(join(tmpdir(), 'taskvisor-heap-'));
const keep: unknown[] = [];
let create: () => Promise<void>;
if (args.mode === 'xstate') {
  let i = 0;
  create = async () => void keep.push(createActor(taskMachine, { input: input(`t${(i++).toString(16).padStart(31, '0')}`) }).start());
} else {
  const runtime = createRuntime({
    store: new MemoryTaskStore(),
    reapIntervalMs: 0,
    limits: { maxLiveTasksPerPrincipal: Number.MAX_SAFE_INTEGER },
    logger: silentLogger,
  });
  registerBenchTools(runtime);
  await runtime.start();
  keep.push(runtime);
  // Private field, read only: the call path a tools/call takes once the SDK has parsed it (as bench/heap.ts).
  const caller = (runtime as unknown as { parts: { caller: ToolCaller } }).parts.caller;
  const clientCapabilities = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
  create = async () => {
    const outcome = await caller.call({
      name: args.tool ?? 'bench_wait',
      args: {},
      principal: 'anonymous',
      declaresTasks: true,
      clientCapabilities,
    });
    if (outcome.kind !== 'task') throw new Error(`expected a task, got ${outcome.kind}`);
  };
}
for (let i = 0; i < 200; i++) await create();
await settle();
const before = writeHeapSnapshot(join(dir, 'before.heapsnapshot'));
for (let done = 0; done < args.n; done += 500) await Promise.all(Array.from({ length: Math.min(500, args.n - done) }, () => create()));
await settle();
const after = writeHeapSnapshot(join(dir, 'after.heapsnapshot'));
if (keep.length === 0) throw new Error('nothing was kept');

const old = JSON.parse(await readFile(before, 'utf8')) as Snapshot;
const oldIds = new Set<number>();
{
  const fields = old.snapshot.meta.node_fields;
  const id = fields.indexOf('id');
  for (let i = 0; i < old.nodes.length; i += fields.length) oldIds.add(old.nodes[i + id]!);
}
const snap = JSON.parse(await readFile(after, 'utf8')) as Snapshot;
await rm(dir, { recursive: true, force: true });
const { nodes, edges, strings } = snap;
const nodeFields = snap.snapshot.meta.node_fields.length;
const edgeFields = snap.snapshot.meta.edge_fields.length;
const nodeTypes = snap.snapshot.meta.node_types[0];
const edgeTypes = snap.snapshot.meta.edge_types[0];
const count = nodes.length / nodeFields;
const type = (i: number) => nodeTypes[nodes[i * nodeFields]!]!;
const name = (i: number) => strings[nodes[i * nodeFields + 1]!]!;
const firstEdge = new Uint32Array(count + 1);
for (let i = 0, e = 0; i < count; i++) {
  firstEdge[i] = e;
  e += nodes[i * nodeFields + 4]! * edgeFields;
}
firstEdge[count] = edges.length;
const keysOf = (i: number) => {
  const keys: string[] = [];
  for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += edgeFields)
    if (edgeTypes[edges[e]!] === 'property') keys.push(strings[edges[e + 1]!]!);
  return keys.slice(0, 8).join(',');
};
// One holder per object: the first strong edge to it, a named (property, context) edge preferred.
const holder = new Int32Array(count).fill(-1);
const via: string[] = new Array<string>(count);
for (let i = 0; i < count; i++)
  for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += edgeFields) {
    const edgeType = edgeTypes[edges[e]!]!;
    if (edgeType === 'weak') continue;
    const to = edges[e + 2]! / nodeFields;
    const named = edgeType !== 'element' && edgeType !== 'hidden' && edgeType !== 'internal';
    if (holder[to] !== -1 && (!named || !via[to]!.startsWith('['))) continue;
    holder[to] = i;
    via[to] = named ? `${edgeType}:${strings[edges[e + 1]!]}` : `[${edgeType}]`;
  }
const describe = (i: number) => (type(i) === 'object' ? `${name(i)}{${keysOf(i)}}` : `${type(i)}:${name(i).slice(0, 40)}`);
const groups = new Map<string, { objects: number; bytes: number }>();
for (let i = 0; i < count; i++) {
  if (oldIds.has(nodes[i * nodeFields + 2]!) || type(i) === 'code' || type(i) === 'synthetic') continue;
  const by = holder[i]! >= 0 ? `${describe(holder[i]!)}.${via[i]}` : '(no holder)';
  const key = `${describe(i)} <- ${by}`;
  const group = groups.get(key) ?? { objects: 0, bytes: 0 };
  group.objects++;
  group.bytes += nodes[i * nodeFields + 3]!;
  groups.set(key, group);
}
const rows = [...groups]
  .map(([key, g]) => ({ key, objects: g.objects / args.n, bytes: g.bytes / args.n }))
  .sort((a, b) => b.bytes - a.bytes);
const total = rows.reduce((sum, row) => sum + row.bytes, 0);
process.stdout.write(`${args.mode} ${args.tool ?? ''} n=${args.n}: ${total.toFixed(0)} B per task in new objects\n`);
process.stdout.write('  B/task  objects/task  what <- held by\n');
for (const row of rows.slice(0, args.top ?? 60))
  process.stdout.write(`${row.bytes.toFixed(0).padStart(8)}  ${row.objects.toFixed(2).padStart(12)}  ${row.key.slice(0, 200)}\n`);
process.exit(0);
