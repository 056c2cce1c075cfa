/**
 * A call held as a task (promoted upstream call) against a plain forward of
 * the same call, in one process, over real HTTP, against one real stdio
 * upstream (test/aggregator/fixtures/held-upstream.ts, a plain v1 SDK
 * server) registered twice: `plain` (promotion `never`: forwarded as is) and
 * `held` (promoted after 50 ms). Both callers declare the tasks extension.
 *
 * - latency: from sending `tools/call wait {ms}` to the result being
 *   available — the plain call's answer, or the promoted task's completion
 *   as stored and published (what a listen stream would push) — in
 *   interleaved slices, p50 of each;
 * - memory: heap per held upstream request (N promoted calls that wait
 *   upstream) against heap per live task of a local tool that waits for its
 *   cancel signal, promoted the same way (the same N), each the difference of
 *   two gc'ed heaps.
 *
 *   node --expose-gc --import tsx bench/promotedCall.ts '{"n":40,"held":200,"ms":300}'
 *
 * Prints `RESULT {"plain":Summary,"promoted":Summary,"heldBytes":…,"localBytes":…}`.
 */
import { join } from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createRuntime } from '../src/index.js';
import { listenHttp } from '../src/transports/index.js';
import type { UpstreamSpec } from '../src/upstreams/UpstreamSpec.js';
import { summarize } from './stats.js';

const args = JSON.parse(process.argv[2] ?? '{}') as { n?: number; held?: number; ms?: number };
const n = args.n ?? 40;
const heldCount = args.held ?? 200;
const workMs = args.ms ?? 300;
const FIXTURE = fileURLToPath(new URL('../test/aggregator/fixtures/held-upstream.ts', import.meta.url));
const TSX = import.meta.resolve('tsx');

const upstream = (name: string, promotion: UpstreamSpec['promotion']): UpstreamSpec => ({
  name,
  type: 'stdio',
  command: process.execPath,
  args: ['--import', TSX, FIXTURE],
  timeout: 120_000,
  ...(promotion ? { promotion } : {}),
});

const dir = await mkdtemp(join(tmpdir(), 'taskvisor-bench-promoted-'));
const runtime = createRuntime({
  store: { kind: 'memory' },
  stateFile: join(dir, 'runtime-state.json'),
  upstreams: [upstream('plain', { taskBehavior: 'never' }), upstream('held', { promoteAfterMs: 50 })],
  logger: { info: () => {}, error: () => {} },
  limits: { maxLiveTasksPerPrincipal: heldCount * 4 },
});
// The baseline of the memory cell: a local task promoted the same way (auto, 50 ms) that holds nothing but its run.
runtime.tool(
  'local_wait',
  { taskBehavior: 'auto', promoteAfterMs: 50 },
  (_args, ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
);
await runtime.start();
for (const name of ['plain', 'held']) await runtime.upstreams!.waitFor(name, (status) => status.state === 'ready', 120_000);
const listener = await listenHttp(runtime, { port: 0, authenticate: () => ({ id: 'bench' }) });

const envelope = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};
let next = 0;
async function rpc(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const response = await fetch(listener.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      'mcp-name': String(method === 'tools/call' ? params.name : params.taskId),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++next, method, params: { ...params, _meta: envelope } }),
  });
  const text = await response.text();
  // An SSE answer carries the JSON-RPC message on its data line.
  const json = text.startsWith('{') ? text : (text.split('\n').find((line) => line.startsWith('data: ')) ?? '').slice(6);
  return JSON.parse(json) as Record<string, unknown>;
}

/** Completions as they are stored and published, by task id. */
const completed = new Map<string, () => void>();
runtime.onTaskChange((record) => {
  if (record.status === 'completed') completed.get(record.taskId)?.();
});

async function plainCall(): Promise<number> {
  const started = performance.now();
  const answer = await rpc('tools/call', { name: 'x_plain_wait', arguments: { ms: workMs } });
  if ((answer.result as { resultType?: string } | undefined)?.resultType !== 'complete')
    throw new Error(`plain: ${JSON.stringify(answer)}`);
  return performance.now() - started;
}

async function promotedCall(): Promise<number> {
  const started = performance.now();
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const answer = await rpc('tools/call', { name: 'x_held_wait', arguments: { ms: workMs } });
  const result = answer.result as { resultType?: string; taskId?: string } | undefined;
  if (result?.resultType !== 'task' || !result.taskId) throw new Error(`promoted: ${JSON.stringify(answer)}`);
  completed.set(result.taskId, done);
  await finished;
  completed.delete(result.taskId);
  return performance.now() - started;
}

// Interleaved slices: each ratio compares figures taken side by side on a noisy machine.
const plain: number[] = [];
const promoted: number[] = [];
for (let i = 0; i < n; i++) {
  plain.push(await plainCall());
  promoted.push(await promotedCall());
}

const gc = (globalThis as { gc?: () => void }).gc;
async function heap(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().heapUsed;
}

/** Heap per task of `count` tasks of `tool` left running (then cancelled). */
async function perTask(tool: string, toolArgs: Record<string, unknown>): Promise<number> {
  const before = await heap();
  const ids: string[] = [];
  for (let i = 0; i < heldCount; i++) {
    const answer = await rpc('tools/call', { name: tool, arguments: toolArgs });
    const taskId = (answer.result as { taskId?: string } | undefined)?.taskId;
    if (!taskId) throw new Error(`${tool}: ${JSON.stringify(answer)}`);
    ids.push(taskId);
  }
  const after = await heap();
  for (const taskId of ids) await rpc('tasks/cancel', { taskId });
  return (after - before) / heldCount;
}

const heldBytes = await perTask('x_held_wait', { ms: 600_000 });
const localBytes = await perTask('local_wait', {});

process.stdout.write(
  `RESULT ${JSON.stringify({ plain: summarize(plain), promoted: summarize(promoted), heldBytes, localBytes, n, heldCount, workMs })}\n`,
);
await runtime.close();
await rm(dir, { recursive: true, force: true });
