/**
 * `tasks/get` of an unknown id vs another principal's task
 * (small, and with a 3 MB result), as that other principal, over real HTTP
 * on one runtime with the given store. With ownership checked before the
 * record is loaded, the three medians are the same; before, the foreign
 * ones paid for reading and parsing the owner's record.
 *
 *   node --import tsx bench/foreignGet.ts '{"store":"lowdb","n":300}'
 *
 * Prints `RESULT {"unknown":ms,"foreignSmall":ms,"foreignBig":ms,"ownBig":ms,…}` (medians).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import demoTools from '../examples/demo/tools.js';
import { createRuntime } from '../src/index.js';
import { listenHttp } from '../src/transports/index.js';
import { median } from './stats.js';

const args = JSON.parse(process.argv[2] ?? '{}') as { store?: 'lowdb' | 'sqlite'; n?: number; resultBytes?: number };
const kind = args.store ?? 'lowdb';
const n = args.n ?? 300;
const resultBytes = args.resultBytes ?? 3 * 1024 * 1024;
const dir = await mkdtemp(join(tmpdir(), 'taskvisor-bench-foreign-'));
const runtime = createRuntime({
  store: kind === 'lowdb' ? { kind: 'lowdb', dir } : { kind: 'sqlite', file: join(dir, 'tasks.sqlite') },
  promoteAfterMs: 0,
  logger: { info: () => {}, error: () => {} },
});
runtime.use(...demoTools);
await runtime.start();
const listener = await listenHttp(runtime, {
  port: 0,
  authenticate: (request) => ({ id: request.headers.get('x-principal') ?? 'nobody' }),
});
const envelope = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};
let next = 0;
async function call(principal: string, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const response = await fetch(listener.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(method.startsWith('tasks/')
        ? { 'mcp-name': String(params.taskId) }
        : method === 'tools/call'
          ? { 'mcp-name': String(params.name) }
          : {}),
      'x-principal': principal,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++next, method, params: { ...params, _meta: envelope } }),
  });
  return (await response.json()) as Record<string, unknown>;
}
async function task(message: string): Promise<string> {
  const created = await call('alice', 'tools/call', { name: 'sleep', arguments: { ms: 0, message } });
  const taskId = (created.result as { taskId: string }).taskId;
  for (;;) {
    const got = await call('alice', 'tasks/get', { taskId });
    if ((got.result as { status?: string } | undefined)?.status === 'completed') return taskId;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
try {
  const small = await task('small');
  const big = await task('x'.repeat(resultBytes));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const cases = {
    unknown: () => call('mallory', 'tasks/get', { taskId: 'f'.repeat(32) }),
    foreignSmall: () => call('mallory', 'tasks/get', { taskId: small }),
    foreignBig: () => call('mallory', 'tasks/get', { taskId: big }),
    ownBig: () => call('alice', 'tasks/get', { taskId: big }),
  };
  const times: Record<string, number[]> = { unknown: [], foreignSmall: [], foreignBig: [], ownBig: [] };
  // Warm-up, then the cases interleaved so drift hits them alike.
  for (const run of Object.values(cases)) for (let i = 0; i < 10; i++) await run();
  for (let i = 0; i < n; i++) {
    for (const [name, run] of Object.entries(cases)) {
      if (name === 'ownBig' && i % 10 !== 0) continue; // the owner's 3 MB answer is a reference, not the subject
      const started = performance.now();
      await run();
      times[name]!.push(performance.now() - started);
    }
  }
  process.stdout.write(
    `RESULT ${JSON.stringify({
      store: kind,
      n,
      resultBytes,
      unknown: median(times.unknown!),
      foreignSmall: median(times.foreignSmall!),
      foreignBig: median(times.foreignBig!),
      ownBig: median(times.ownBig!),
    })}\n`,
  );
} finally {
  await listener.close();
  await runtime.close();
  await rm(dir, { recursive: true, force: true });
}
process.exit(0);
