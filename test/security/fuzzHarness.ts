/**
 * The fuzz run behind `npm test` (bounded) and `npm run fuzz` (long): hostile
 * frames (`fuzzFrames.ts`) against a runtime served over real Streamable
 * HTTP, WebSocket and stdio (the real line transport, on pipes), as a
 * principal other than the victim whose tasks were created first.
 *
 * Oracle, per frame: the server answers — HTTP with 2xx/4xx and never 5xx,
 * every JSON body a JSON-RPC response; 202 (no body) only for a message
 * without `id` (a notification: JSON-RPC never answers one); on WebSocket and
 * stdio every line that is not JSON gets -32700 (or the maxJsonDepth error
 * when it nests too deeply before it breaks), and a probe `ping` sent
 * after the frames is answered (no hang, no dead connection) unless the
 * WebSocket was closed with 1009 for a frame over the size limit. After the
 * run: every victim task's stored record is byte-for-byte what it was, and
 * the victim still reads them.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { createRuntime, silentLogger, type Limits, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, listenWebSocket, serveStdio } from '../../src/transports/index.js';
import { post, RawWs, request, type Json } from '../support/rawWire.js';
import limitTools from './fixtures/limitTools.js';
import { frameArbitrary, type Frame } from './fuzzFrames.js';

export type FuzzTransport = 'http' | 'ws' | 'stdio';

export interface FuzzOptions {
  /** Property runs per transport (each run sends 1–4 frames). */
  runs: number;
  seed: number;
  transports?: FuzzTransport[];
  /** Shrink a failing case to a minimal one (slower; the long run does). */
  shrink?: boolean;
  log?: (line: string) => void;
}

export const FUZZ_LIMITS: Partial<Limits> = {
  maxRequestBodyBytes: 48 * 1024,
  maxJsonDepth: 32,
  maxLiveTasksPerPrincipal: 40,
  maxListenStreamsPerPrincipal: 8,
  requestTimeoutMs: 2_000,
};

/** Longest wait for any single answer; a frame that makes the server hang fails the run. */
const ANSWER_TIMEOUT_MS = 10_000;

const VICTIM = { 'x-user': 'victim' };
const FUZZER = { 'x-user': 'fuzzer' };

interface Served {
  runtime: TaskvisorRuntime;
  httpUrl: string;
  wsUrl: string;
}

async function serve(): Promise<Served> {
  const runtime = createRuntime({ store: { kind: 'memory' }, limits: FUZZ_LIMITS, logger: silentLogger, reapIntervalMs: 0 });
  runtime.use(...limitTools);
  await runtime.start();
  const authenticate = (req: Request) => ({ id: req.headers.get('x-user') ?? 'anonymous' });
  const httpUrl = (await listenHttp(runtime, { port: 0, authenticate })).url;
  const wsUrl = (await listenWebSocket(runtime, { port: 0, authenticate, keepAliveMs: 0 })).url;
  return { runtime, httpUrl, wsUrl };
}

/** The victim's tasks in every state a task can rest in. */
async function createVictimTasks(served: Served): Promise<string[]> {
  const create = async (name: string) => {
    const reply = await post(served.httpUrl, request('tools/call', { name, arguments: {} }), VICTIM);
    const result = reply.message?.result as Json | undefined;
    assert.equal(result?.resultType, 'task', JSON.stringify(reply.message));
    return result.taskId as string;
  };
  const working = await create('hold');
  const completed = await create('done');
  const waiting = await create('ask3');
  const cancelled = await create('hold');
  await post(served.httpUrl, request('tasks/cancel', { taskId: cancelled }), VICTIM);
  const ids = [working, completed, waiting, cancelled];
  const settled = async () => {
    const statuses = await Promise.all(ids.map(async (id) => (await served.runtime.getTask(id, { id: 'victim' })).status));
    return statuses.join() === 'working,completed,input_required,cancelled';
  };
  for (let i = 0; !(await settled()); i++) {
    if (i > 500) throw new Error('the victim tasks did not settle');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await served.runtime.flushed();
  return ids;
}

async function recordsOf(served: Served, ids: string[]): Promise<string[]> {
  await served.runtime.flushed();
  return Promise.all(ids.map(async (id) => JSON.stringify(await served.runtime.store.get(id))));
}

function checkJsonRpcResponse(message: unknown, context: string): void {
  assert.ok(
    message !== null && typeof message === 'object' && !Array.isArray(message),
    `${context}: not a JSON-RPC object: ${JSON.stringify(message)}`,
  );
  const m = message as Json;
  assert.equal(m.jsonrpc, '2.0', `${context}: ${JSON.stringify(m)}`);
  if ('error' in m) {
    const error = m.error as Json;
    assert.ok(Number.isInteger(error.code), `${context}: error code ${JSON.stringify(error)}`);
    assert.equal(typeof error.message, 'string', `${context}: error message ${JSON.stringify(error)}`);
  } else {
    assert.ok('result' in m || typeof m.method === 'string', `${context}: neither result, error nor notification: ${JSON.stringify(m)}`);
  }
}

const hasId = (text: string): boolean => {
  try {
    const value = JSON.parse(text) as unknown;
    return Array.isArray(value) || (value !== null && typeof value === 'object' && 'id' in value);
  } catch {
    return true;
  }
};
const isJson = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

async function fuzzHttpFrame(served: Served, frame: Frame): Promise<void> {
  const context = `HTTP ${frame.kind} ${frame.text.slice(0, 300)} headers ${JSON.stringify(frame.headers)}`;
  const abort = AbortSignal.timeout(ANSWER_TIMEOUT_MS);
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...FUZZER };
  for (const [name, value] of Object.entries(frame.headers)) {
    if (value === null) delete headers[name];
    else headers[name] = value;
  }
  const response = await fetch(served.httpUrl, { method: 'POST', headers, body: frame.text, signal: abort });
  if (response.status >= 500) assert.fail(`${context}: HTTP ${response.status} ${await response.text()}`);
  const contentType = response.headers.get('content-type') ?? '';
  if (contentType.includes('text/event-stream')) {
    // A listen stream (or an SSE response): its first event must be JSON-RPC; then drop it.
    const reader = response.body!.getReader();
    const { value } = await reader.read();
    await reader.cancel();
    const data = new TextDecoder()
      .decode(value)
      .split('\n')
      .find((line) => line.startsWith('data:'));
    if (data) checkJsonRpcResponse(JSON.parse(data.slice(5)), context);
    return;
  }
  const text = await response.text();
  if (response.status === 202) {
    assert.equal(hasId(frame.text), false, `${context}: 202 for a message with an id`);
    return;
  }
  // 431: headers over Node's maxHeaderSize (16 KiB) are refused by its HTTP parser before any handler runs.
  if (response.status === 431) return;
  assert.ok(text.length > 0, `${context}: HTTP ${response.status} without a body`);
  checkJsonRpcResponse(JSON.parse(text), context);
  if (!isJson(frame.text)) assert.ok(response.status >= 400, `${context}: invalid JSON answered ${response.status}`);
}

/** Sends frames on a message connection, then a probe; checks the answers. */
async function fuzzConnection(
  frames: Frame[],
  connection: {
    send(text: string): void;
    readonly received: readonly Json[];
    waitFor(p: (m: Json) => boolean, timeoutMs: number): Promise<Json>;
    closedWith(): number | undefined;
  },
  context: string,
  maxFrameBytes: number,
): Promise<void> {
  for (const frame of frames) connection.send(frame.text);
  const probe = request('ping', {}, `probe-${Math.random().toString(36).slice(2)}`);
  connection.send(JSON.stringify(probe));
  const oversized = frames.some((frame) => Buffer.byteLength(frame.text) > maxFrameBytes);
  try {
    await connection.waitFor((m) => m.id === probe.id, ANSWER_TIMEOUT_MS);
  } catch (error) {
    // The one way a connection may end: a WebSocket frame over the size limit (1009).
    if (oversized && connection.closedWith() === 1009) return;
    throw new Error(
      `${context}: no answer to the probe after ${JSON.stringify(frames.map((f) => f.text.slice(0, 200)))}: ${(error as Error).message}`,
    );
  }
  for (const message of connection.received) checkJsonRpcResponse(message, context);
  const unparseable = frames.filter(
    (frame) => !isJson(frame.text) && frame.text.trim() !== '' && Buffer.byteLength(frame.text) <= maxFrameBytes,
  ).length;
  // A frame over a shape limit (depth, keys, values) is refused before parsing, whether or not it would parse.
  const parseErrors = connection.received.filter((m) => {
    const error = m.error as { code?: number; data?: { limit?: string } } | undefined;
    return error?.code === -32700 || SHAPE_LIMITS.has(error?.data?.limit ?? '');
  }).length;
  assert.ok(parseErrors >= unparseable, `${context}: ${unparseable} frames were not JSON but ${parseErrors} parse errors came back`);
}

const SHAPE_LIMITS: ReadonlySet<string> = new Set(['maxJsonDepth', 'maxJsonKeys', 'maxJsonNodes', 'maxMetaNodes']);

async function fuzzWsRun(served: Served, frames: Frame[]): Promise<void> {
  const socket = await RawWs.open(served.wsUrl, FUZZER);
  let closeCode: number | undefined;
  void socket.closed.then(({ code }) => (closeCode = code));
  try {
    await fuzzConnection(
      frames,
      {
        send: (text) => socket.send(text),
        received: socket.received,
        waitFor: (p, t) => socket.waitFor(p, t),
        closedWith: () => closeCode,
      },
      'WebSocket',
      served.runtime.limits.maxRequestBodyBytes,
    );
  } finally {
    socket.close();
  }
}

async function fuzzStdioRun(served: Served, frames: Frame[]): Promise<void> {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const handle = serveStdio(served.runtime, { stdin, stdout });
  const received: Json[] = [];
  const wakers = new Set<() => void>();
  let buffer = '';
  stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let cut: number;
    while ((cut = buffer.indexOf('\n')) >= 0) {
      received.push(JSON.parse(buffer.slice(0, cut)) as Json);
      buffer = buffer.slice(cut + 1);
    }
    for (const wake of [...wakers]) wake();
  });
  const waitFor = (predicate: (m: Json) => boolean, timeoutMs: number) =>
    new Promise<Json>((resolve, reject) => {
      const timer = setTimeout(() => {
        wakers.delete(check);
        reject(new Error(`nothing matching within ${timeoutMs} ms`));
      }, timeoutMs);
      const check = () => {
        const found = received.find(predicate);
        if (!found) return;
        clearTimeout(timer);
        wakers.delete(check);
        resolve(found);
      };
      wakers.add(check);
      check();
    });
  try {
    // One line per frame: a frame text never contains a raw newline (fuzzFrames filters those).
    await fuzzConnection(
      frames,
      { send: (text) => stdin.write(`${text}\n`), received, waitFor, closedWith: () => undefined },
      'stdio',
      served.runtime.limits.maxRequestBodyBytes,
    );
  } finally {
    stdin.end();
    await handle.close();
  }
}

/** Runs the fuzz properties; throws (with the seed and the shrunk counterexample) on the first failure. */
export async function runFuzz(options: FuzzOptions): Promise<{ frames: number }> {
  const log = options.log ?? (() => {});
  const served = await serve();
  let sent = 0;
  try {
    const victimIds = await createVictimTasks(served);
    const before = await recordsOf(served, victimIds);
    const frames = fc.array(frameArbitrary(victimIds), { minLength: 1, maxLength: 4 });
    for (const transport of options.transports ?? ['http', 'ws', 'stdio']) {
      log(`fuzz ${transport}: ${options.runs} runs, seed ${options.seed} (replay: FUZZ_SEED=${options.seed})`);
      const details = await fc.check(
        fc.asyncProperty(frames, async (batch) => {
          sent += batch.length;
          if (transport === 'http') for (const frame of batch) await fuzzHttpFrame(served, frame);
          else if (transport === 'ws') await fuzzWsRun(served, batch);
          else await fuzzStdioRun(served, batch);
        }),
        { numRuns: options.runs, seed: options.seed, endOnFailure: !options.shrink },
      );
      if (details.failed) {
        // Long runs of one character (huge generated strings) are shown as a count.
        const squeeze = (text: string) => text.replace(/(.)\1{40,}/gs, (run, c: string) => `${c}…×${run.length}`);
        const shown = (details.counterexample?.[0] ?? []).map((frame) => ({ ...frame, text: squeeze(frame.text).slice(0, 600) }));
        const cause = squeeze(details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance));
        throw new Error(
          `fuzz ${transport} failed (replay: FUZZ_SEED=${options.seed}, path ${details.counterexamplePath}, after ${details.numRuns} runs)\n` +
            `frames: ${JSON.stringify(shown, null, 1).slice(0, 4000)}\nerror: ${cause.slice(0, 2000)}`,
        );
      }
    }
    // The victim's tasks: stored records unchanged, and still readable by their owner.
    assert.deepEqual(await recordsOf(served, victimIds), before, 'a victim task changed during the fuzz run');
    for (const id of victimIds) {
      const reply = await post(served.httpUrl, request('tasks/get', { taskId: id }), VICTIM);
      assert.equal((reply.message?.result as Json | undefined)?.taskId, id, JSON.stringify(reply.message));
    }
    return { frames: sent };
  } finally {
    await served.runtime.close();
  }
}

/**
 * The same frames on the stdin of a real `taskvisor serve --stdio` child
 * (one principal: the frames aim at random task ids, never at the tasks made
 * first). The child must answer every probe, stay alive, and show its tasks
 * unchanged afterwards (`tasks/get`, without the adaptive polling hint).
 */
export async function runStdioChildFuzz(options: {
  runs: number;
  seed: number;
  cli: string;
  tsxImport: string;
  configFile: string;
  cwd: string;
}): Promise<{ frames: number }> {
  const { spawn } = await import('node:child_process');
  const child = spawn(
    process.execPath,
    ['--import', options.tsxImport, options.cli, 'serve', '--stdio', '--quiet', '--config', options.configFile],
    {
      cwd: options.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  const received: Json[] = [];
  const wakers = new Set<() => void>();
  let stderr = '';
  let buffer = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let cut: number;
    while ((cut = buffer.indexOf('\n')) >= 0) {
      received.push(JSON.parse(buffer.slice(0, cut)) as Json);
      buffer = buffer.slice(cut + 1);
    }
    for (const wake of [...wakers]) wake();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let alive = true;
  void exited.then(() => {
    alive = false;
    for (const wake of [...wakers]) wake();
  });
  const waitFor = (predicate: (m: Json) => boolean, timeoutMs: number) =>
    new Promise<Json>((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error(`nothing matching within ${timeoutMs} ms`)), timeoutMs);
      const finish = (error?: Error, value?: Json) => {
        clearTimeout(timer);
        wakers.delete(check);
        if (error) reject(error);
        else resolve(value!);
      };
      const check = () => {
        const found = received.find(predicate);
        if (found) finish(undefined, found);
        else if (!alive) finish(new Error(`the child exited: ${stderr.slice(-2000)}`));
      };
      wakers.add(check);
      check();
    });
  const call = async (message: Json, timeoutMs = 45_000) => {
    child.stdin.write(`${JSON.stringify(message)}\n`);
    return waitFor((m) => m.id === message.id && ('result' in m || 'error' in m), timeoutMs);
  };
  let sent = 0;
  try {
    const create = async (name: string) => ((await call(request('tools/call', { name, arguments: {} }))).result as Json).taskId as string;
    const ids = [await create('hold'), await create('done'), await create('ask3')];
    const view = async () =>
      Promise.all(
        ids.map(async (taskId) => {
          const { pollIntervalMs: _hint, ...task } = (await call(request('tasks/get', { taskId }))).result as Json;
          return task;
        }),
      );
    let before = await view();
    for (let i = 0; before.map((t) => t.status).join() !== 'working,completed,input_required'; i++) {
      if (i > 400) throw new Error(`the child's tasks did not settle: ${JSON.stringify(before)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
      before = await view();
    }
    const details = await fc.check(
      fc.asyncProperty(fc.array(frameArbitrary([]), { minLength: 1, maxLength: 4 }), async (batch) => {
        sent += batch.length;
        const from = received.length;
        const window = {
          send: (text: string) => void child.stdin.write(`${text}\n`),
          get received() {
            return received.slice(from);
          },
          waitFor: (p: (m: Json) => boolean, t: number) => waitFor((m) => received.indexOf(m) >= from && p(m), t),
          closedWith: () => undefined,
        };
        await fuzzConnection(batch, window, 'stdio child', FUZZ_LIMITS.maxRequestBodyBytes!);
      }),
      { numRuns: options.runs, seed: options.seed, endOnFailure: true },
    );
    if (details.failed) {
      const squeeze = (text: string) => text.replace(/(.)\1{40,}/gs, (run, c: string) => `${c}…×${run.length}`);
      throw new Error(
        `fuzz stdio child failed (replay: FUZZ_SEED=${options.seed})\nframes: ${squeeze(JSON.stringify(details.counterexample?.[0])).slice(0, 4000)}\nerror: ${squeeze(String((details.errorInstance as Error | undefined)?.message ?? details.errorInstance)).slice(0, 2000)}`,
      );
    }
    assert.ok(alive, `the child died: ${stderr.slice(-2000)}`);
    assert.deepEqual(await view(), before, "the child's tasks changed during the fuzz run");
    return { frames: sent };
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
}
