/**
 * Recovery is not dark on the connection transports either: stdio and WebSocket are
 * served from before recovery like Streamable HTTP, and behave like it while
 * the runtime recovers — `tasks/get` answered from the store, `tasks/update`
 * and `tasks/cancel` of a task not yet taken over a retryable -32603 naming
 * the state, everything else (tools/call) held until the runtime serves and
 * then answered as usual. Before, a WebSocket upgrade and every stdio line
 * waited for the whole recovery.
 *
 * A real child process (stdio on its pipes, WebSocket on 127.0.0.1) over a
 * real sqlite file; its recovery is held at the store scan until the test
 * sends SIGUSR2, so "while recovering" does not depend on timing.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import { SqliteTaskStore } from '../../src/store/index.js';
import type { TaskRecord } from '../../src/index.js';
import { makeRecord } from '../store/fixtures.js';
import { spawnNode, tempDir, waitFor, type Child } from '../support/processes.js';
import { RawWs, request, type Json } from '../support/rawWire.js';

const FIXTURE = join(import.meta.dirname, 'fixtures', 'recovering-server.ts');

function seedPair(owner: string): { finished: TaskRecord; unfinished: TaskRecord } {
  const finished = makeRecord({ owner, tool: 'work', status: 'completed', result: { content: [{ type: 'text', text: 'done' }] } });
  delete finished.snapshot;
  return { finished, unfinished: makeRecord({ owner, tool: 'work', statusMessage: 'half way' }) };
}

/** The child's stdout parsed as JSON-RPC lines. */
function stdoutMessages(child: Child): Json[] {
  return child.stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Json);
}

/** A JSON-RPC peer over one transport: send a request, await its answer. */
interface Peer {
  send(message: Json): void;
  answered(id: string | number): Json | undefined;
}

const resultOf = (message: Json | undefined) =>
  message?.result as { status?: string; statusMessage?: string; resultType?: string } | undefined;
const errorOf = (message: Json | undefined) => message?.error as { code?: number; message?: string; data?: unknown } | undefined;

async function exchange(peer: Peer, message: Json): Promise<Json> {
  peer.send(message);
  return waitFor(() => peer.answered(message.id as string), { timeoutMs: 30_000, what: `an answer to ${String(message.method)}` });
}

/** What both transports must show while recovery is held; returns the id of a tools/call left waiting. */
async function whileRecovering(peer: Peer, tasks: { finished: TaskRecord; unfinished: TaskRecord }, label: string): Promise<string> {
  // Sent first and held: the answers below overtake it.
  const call = request('tools/call', { name: 'work', arguments: {} });
  peer.send(call);
  const done = await exchange(peer, request('tasks/get', { taskId: tasks.finished.taskId }));
  assert.equal(resultOf(done)?.status, 'completed', `${label}: ${JSON.stringify(done)}`);
  const working = await exchange(peer, request('tasks/get', { taskId: tasks.unfinished.taskId }));
  assert.equal(resultOf(working)?.status, 'working', `${label}: ${JSON.stringify(working)}`);
  assert.equal(resultOf(working)?.statusMessage, 'half way');
  for (const [method, params] of [
    ['tasks/update', { taskId: tasks.unfinished.taskId, inputResponses: { k: { action: 'accept', content: {} } } }],
    ['tasks/cancel', { taskId: tasks.unfinished.taskId }],
  ] as const) {
    const refused = errorOf(await exchange(peer, request(method, params)));
    assert.equal(refused?.code, -32603, `${label} ${method}: ${JSON.stringify(refused)}`);
    assert.match(refused?.message ?? '', /recovering its tasks; retry/);
    assert.deepEqual(refused?.data, { retryable: true, state: 'recovering' });
  }
  assert.equal(peer.answered(call.id as string), undefined, `${label}: tools/call waits for recovery`);
  return call.id as string;
}

it('stdio and WebSocket while recovering: tasks/* answered, the rest held until serving', { timeout: 180_000 }, async (t) => {
  const dir = await tempDir('taskvisor-recovering-conn-');
  t.after(() => dir.remove());
  const file = join(dir.path, 'tasks.sqlite');
  const local = seedPair('local'); // the stdio principal
  const anonymous = seedPair('anonymous'); // a WebSocket without auth
  const seed = new SqliteTaskStore({ file });
  await seed.open();
  for (const record of [local.finished, local.unfinished, anonymous.finished, anonymous.unfinished]) await seed.create(record);
  await seed.close();

  const child = spawnNode(['--import', 'tsx', FIXTURE, file]);
  t.after(() => child.kill());
  const wsUrl = (await child.waitForOutput(/ws (ws:\/\/\S+)/, { stream: 'stderr', timeoutMs: 60_000 }))[1]!;
  await child.waitForOutput(/^recovering$/m, { stream: 'stderr', timeoutMs: 60_000 });

  const stdio: Peer = {
    send: (message) => child.process.stdin!.write(`${JSON.stringify(message)}\n`),
    answered: (id) => stdoutMessages(child).find((message) => message.id === id && !('method' in message)),
  };
  // The upgrade is accepted while recovering (it used to wait for the whole recovery).
  const socket = await RawWs.open(wsUrl);
  t.after(() => socket.close());
  const ws: Peer = {
    send: (message) => socket.send(message),
    answered: (id) => socket.received.find((message) => message.id === id && !('method' in message)),
  };

  const heldStdio = await whileRecovering(stdio, local, 'stdio');
  const heldWs = await whileRecovering(ws, anonymous, 'websocket');
  assert.doesNotMatch(child.stderr, /^serving$/m, 'recovery was still held');

  child.process.kill('SIGUSR2');
  await child.waitForOutput(/^serving$/m, { stream: 'stderr', timeoutMs: 60_000 });
  for (const [peer, id, tasks, label] of [
    [stdio, heldStdio, local, 'stdio'],
    [ws, heldWs, anonymous, 'websocket'],
  ] as const) {
    // The held call is answered once the runtime serves: a task, as always.
    const created = await waitFor(() => peer.answered(id), { timeoutMs: 30_000, what: `${label}: the held tools/call` });
    assert.equal(resultOf(created)?.resultType, 'task', `${label}: ${JSON.stringify(created)}`);
    // Recovered (its tool does not replay: ended failed); the refused cancel is an acknowledgement now (T-23).
    const after = await exchange(peer, request('tasks/get', { taskId: tasks.unfinished.taskId }));
    assert.equal(resultOf(after)?.status, 'failed', `${label}: ${JSON.stringify(after)}`);
    const cancelled = await exchange(peer, request('tasks/cancel', { taskId: tasks.unfinished.taskId }));
    assert.equal(errorOf(cancelled), undefined, `${label}: ${JSON.stringify(cancelled)}`);
  }
});
