/**
 * Inspection of task actors, opt-in: the official Stately WebSocket inspector
 * through a relay on 127.0.0.1, the JSONL trace (redacted by default, mode
 * 0600), nothing at all when off, and the CLI flags `--trace`, `--trace-raw`
 * and `--inspect`.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createWebSocketReceiver, type StatelyInspectionEvent } from '@statelyai/inspect';
import { WebSocket } from 'ws';
import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import demoTools from '../../examples/demo/tools.js';
import { attachStatelyInspector, type StatelyInspector } from '../../src/inspection/statelyInspector.js';
import { createTraceInspector, type TraceLine } from '../../src/inspection/trace.js';
import { composeInspectors } from '../../src/inspection/redact.js';
import { createRuntime, silentLogger, ToolError, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { TaskFailedError, TasksClient } from '../../src/client/index.js';
import { postJsonRpc } from '../support/httpRaw.js';
import { CLI, spawnNode, tempDir, waitFor } from '../support/processes.js';

const SECRET = 'hunter2';
const STARTUP_TIMEOUT_MS = 45_000;

let dir: Awaited<ReturnType<typeof tempDir>>;
before(async () => {
  dir = await tempDir('taskvisor-inspect-');
});
after(async () => {
  await dir?.remove();
});

/**
 * A runtime with the demo tools and `vault`: secret arguments, an input
 * request whose params name the secret, a secret answer, and a secret result
 * (or, when the answer is `fail`, a failure carrying the secret as error data).
 */
async function startRuntime(inspect?: (event: InspectionEvent) => void) {
  const runtime = createRuntime({
    store: new MemoryTaskStore(),
    logger: silentLogger,
    reapIntervalMs: 0,
    pollIntervalMs: 100,
    ...(inspect ? { inspect } : {}),
  });
  runtime.use(...demoTools);
  runtime.tool('vault', { taskBehavior: 'always', inputSchema: z.object({ password: z.string() }) }, async ({ password }, ctx) => {
    const answer = await ctx.elicit('pin', {
      message: `The PIN that goes with ${password}?`,
      requestedSchema: { type: 'object', properties: { pin: { type: 'string' } }, required: ['pin'] },
    });
    const pin = String(answer.content?.pin);
    if (pin === 'fail') throw new ToolError(-32000, 'The vault stays locked', { password });
    return `Opened with ${password} and PIN ${pin}`;
  });
  await runtime.start();
  const http = await listenHttp(runtime, { port: 0 });
  return { runtime, http };
}

/** Runs `vault` to its end through taskvisor/client over HTTP; returns the task id. */
async function runVault(url: string, pin: string): Promise<string> {
  const client = await TasksClient.connect({ url }, { onInputRequest: () => ({ action: 'accept', content: { pin } }) });
  let taskId = '';
  try {
    await client.callTool('vault', { password: SECRET }, { onTask: (id) => (taskId = id) }).catch((error: unknown) => {
      // The PIN `fail` fails the task on purpose: what the trace shows of it is the point.
      if (!(error instanceof TaskFailedError && pin === 'fail')) throw error;
    });
    assert.notEqual(taskId, '', 'vault ran as a task');
    return taskId;
  } finally {
    await client.close();
  }
}

function readTrace(text: string): TraceLine[] {
  assert.ok(text.endsWith('\n'), 'the trace ends with a complete line');
  return text
    .trimEnd()
    .split('\n')
    .map((line, index) => {
      try {
        return JSON.parse(line) as TraceLine;
      } catch {
        throw new Error(`line ${index + 1} does not parse: ${line}`);
      }
    });
}

describe('the Stately WebSocket inspector', () => {
  it('relays a task’s actor, event and snapshot messages to a createWebSocketReceiver on 127.0.0.1 (redacted)', async () => {
    const stately = await attachStatelyInspector();
    let runtime: TaskvisorRuntime | undefined;
    try {
      assert.match(stately.url, /^ws:\/\/127\.0\.0\.1:\d+$/);
      assert.notEqual(new URL(stately.url).port, '0');
      assert.ok(stately.instructions.includes(stately.url), stately.instructions);
      assert.match(stately.instructions, /stately\.ai/);
      assert.match(stately.instructions, /--trace/);

      const received: StatelyInspectionEvent[] = [];
      const receiver = createWebSocketReceiver({ server: stately.url });
      receiver.subscribe((event) => received.push(event));

      const started = await startRuntime(stately.inspect);
      runtime = started.runtime;
      const taskId = await runVault(started.http.url, SECRET);

      const rootOf = () =>
        received.find(
          (event) => event.type === '@xstate.snapshot' && (event.snapshot as { context?: { taskId?: string } }).context?.taskId === taskId,
        )?.sessionId;
      const done = await waitFor(
        () => {
          const root = rootOf();
          const finished = received.some(
            (event) =>
              event.type === '@xstate.snapshot' && event.sessionId === root && (event.snapshot as { status?: string }).status === 'done',
          );
          return root && finished ? root : undefined;
        },
        { timeoutMs: 10_000, what: 'the task’s final snapshot at the receiver' },
      );
      const mine = received.filter((event) => event.sessionId === done || event.rootId === done);
      const types = new Set(mine.map((event) => event.type));
      assert.deepEqual([...types].sort(), ['@xstate.actor', '@xstate.event', '@xstate.snapshot']);
      assert.ok(
        mine.some((event) => event.type === '@xstate.actor' && event.sessionId === done),
        'the task actor is announced',
      );
      assert.ok(
        mine.some((event) => event.type === '@xstate.event' && (event.event as { type?: string }).type === 'INPUT_RESPONSES'),
        'the answer is an event',
      );
      const final = mine.findLast((event) => event.type === '@xstate.snapshot' && event.sessionId === done) as StatelyInspectionEvent & {
        snapshot: unknown;
      };
      assert.equal((final.snapshot as { value?: unknown }).value, 'completed');
      assert.equal((final.snapshot as { context: { args: unknown } }).context.args, '[redacted]');
      assert.equal((final.snapshot as { context: { tool: string } }).context.tool, 'vault');
      assert.ok(!JSON.stringify(received).includes(SECRET), 'no task data reaches the inspector by default');
      await started.http.close();
    } finally {
      await runtime?.close();
      await stately.close();
    }
  });

  it('the relay serves the bridge page to local Host names only and refuses WebSocket connections from other sites', async () => {
    const stately = await attachStatelyInspector();
    try {
      const page = await fetch(stately.pageUrl);
      assert.equal(page.status, 200);
      const html = await page.text();
      assert.match(html, /<iframe/);
      assert.match(html, /https:\/\/stately\.ai\/inspect/);
      const port = new URL(stately.url).port;
      // A DNS-rebound page arrives with its own Host name (fetch cannot set Host: node:http can).
      const rebound = await new Promise<number>((resolve, reject) => {
        request(stately.pageUrl, { headers: { host: `evil.example:${port}` } }, (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        })
          .on('error', reject)
          .end();
      });
      assert.equal(rebound, 421);

      const refused = await new Promise<string>((resolve) => {
        const socket = new WebSocket(stately.url, { headers: { origin: 'https://evil.example' } });
        socket.on('open', () => resolve('open'));
        socket.on('error', (error) => resolve(error.message));
      });
      assert.match(refused, /401/);
      const allowed = await new Promise<string>((resolve) => {
        const socket = new WebSocket(stately.url, { headers: { origin: `http://127.0.0.1:${port}` } });
        socket.on('open', () => {
          socket.close();
          resolve('open');
        });
        socket.on('error', (error) => resolve(error.message));
      });
      assert.equal(allowed, 'open');
    } finally {
      await stately.close();
    }
  });

  it('a busy port is reported, and close() leaves nothing listening', async () => {
    const first = await attachStatelyInspector();
    const port = Number(new URL(first.url).port);
    await assert.rejects(attachStatelyInspector({ port }), /EADDRINUSE/);
    await first.close();
    const again: StatelyInspector = await attachStatelyInspector({ port });
    assert.equal(again.url, first.url);
    await again.close();
  });
});

describe('the JSONL trace', () => {
  async function traceRun(redact: boolean | undefined, name: string) {
    const file = join(dir.path, name);
    const trace = createTraceInspector({ file, ...(redact === undefined ? {} : { redact }) });
    const { runtime, http } = await startRuntime(trace.inspect);
    let completed: string;
    let failed: string;
    try {
      completed = await runVault(http.url, SECRET);
      failed = await runVault(http.url, 'fail');
      await runtime.flushed();
    } finally {
      await http.close();
      await runtime.close();
      await trace.close();
    }
    const text = await readFile(file, 'utf8');
    return { file, text, lines: readTrace(text), completed, failed };
  }

  it('has actor, event and snapshot lines for the task, every line parses, task data is redacted, mode 0600', async () => {
    const { file, text, lines, completed, failed } = await traceRun(undefined, 'redacted.jsonl');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    const mine = lines.filter((line) => line.taskId === completed);
    const types = new Set(mine.map((line) => line.type));
    for (const type of ['@xstate.actor', '@xstate.event', '@xstate.snapshot'])
      assert.ok(types.has(type as TraceLine['type']), `${type} lines: ${[...types]}`);
    for (const line of lines) {
      assert.equal(typeof line.t, 'number');
      assert.match(line.actorId ?? '', /^x:\d+$/);
    }
    const root = mine.find((line) => line.type === '@xstate.actor' && line.parentId === undefined)!;
    assert.ok(root, 'the task actor is announced');
    // No child actor: the task's run is the runtime's, not an invoked `worker`.
    assert.ok(!mine.some((line) => line.type === '@xstate.actor' && line.parentId === root.actorId), 'and no child actor');
    const snapshots = mine.filter((line) => line.type === '@xstate.snapshot' && line.actorId === root.actorId);
    const values = new Set(snapshots.map((line) => JSON.stringify(line.snapshot?.value)));
    for (const value of [{ active: 'working' }, { active: 'input_required' }, 'completed'])
      assert.ok(values.has(JSON.stringify(value)), `${JSON.stringify(value)} in ${[...values]}`);
    const final = snapshots.at(-1)!;
    assert.equal(final.snapshot?.status, 'done');
    assert.equal(final.snapshot?.value, 'completed');
    const context = final.snapshot?.context as Record<string, any>;
    // What stays: tool name, statuses, keys, timestamps.
    assert.equal(context.tool, 'vault');
    assert.equal(typeof context.createdAt, 'number');
    assert.deepEqual(context.issuedKeys, ['pin']);
    // What goes: arguments, result, answers.
    assert.equal(context.args, '[redacted]');
    assert.equal(context.result, '[redacted]');
    assert.deepEqual(context.answers, { pin: '[redacted]' });
    const asked = mine.find((line) => line.type === '@xstate.event' && (line.event as { type?: string }).type === 'INPUT_NEEDED')!;
    assert.deepEqual((asked.event as any).request, { method: 'elicitation/create', params: '[redacted]' });
    assert.equal((asked.event as any).key, 'pin');
    const failure = lines.filter((line) => line.taskId === failed && line.type === '@xstate.snapshot').at(-1)!;
    assert.equal(failure.snapshot?.value, 'failed');
    assert.deepEqual((failure.snapshot?.context as any).error, { code: -32000, message: 'The vault stays locked', data: '[redacted]' });
    assert.ok(!text.includes(SECRET), `"${SECRET}" appears nowhere in the redacted trace`);
  });

  it('with redact: false the task data is there', async () => {
    const { text, lines, failed } = await traceRun(false, 'raw.jsonl');
    assert.ok(text.includes(`"password":"${SECRET}"`), 'the arguments');
    assert.ok(text.includes(`Opened with ${SECRET} and PIN ${SECRET}`), 'the result');
    assert.ok(text.includes(`"pin":"${SECRET}"`), 'the answers');
    assert.ok(text.includes(`The PIN that goes with ${SECRET}?`), 'the input request');
    const failure = lines.filter((line) => line.taskId === failed && line.type === '@xstate.snapshot').at(-1)!;
    assert.deepEqual((failure.snapshot?.context as any).error.data, { password: SECRET });
  });

  it('an existing file is truncated and tightened to 0600; close() flushes and is idempotent; events after it are ignored', async () => {
    const file = join(dir.path, 'existing.jsonl');
    await writeFile(file, 'old content\n');
    await chmod(file, 0o644);
    const trace = createTraceInspector({ file });
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    const { runtime, http } = await startRuntime(trace.inspect);
    try {
      await postJsonRpc(http.url, 'tools/call', { name: 'sleep', arguments: { ms: 250 } });
    } finally {
      await http.close();
      await runtime.close();
    }
    await Promise.all([trace.close(), trace.close()]);
    const text = await readFile(file, 'utf8');
    assert.ok(!text.includes('old content'));
    const count = readTrace(text).length;
    assert.ok(count > 0);
    trace.inspect({ type: '@xstate.event' } as InspectionEvent);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(readTrace(await readFile(file, 'utf8')).length, count);
  });

  it('composeInspectors feeds every inspector even when one throws', () => {
    const seen: string[] = [];
    const composed = composeInspectors(
      () => {
        throw new Error('broken');
      },
      (event) => seen.push(event.type),
      undefined,
    )!;
    assert.throws(() => composed({ type: '@xstate.event' } as InspectionEvent), /broken/);
    assert.deepEqual(seen, ['@xstate.event']);
    const single = (_event: InspectionEvent) => {};
    assert.equal(composeInspectors(undefined, single), single, 'one inspector is used as it is');
    assert.equal(composeInspectors(), undefined);
  });
});

describe('inspection off', () => {
  it('a runtime without `inspect` gives its task actors no inspection hook (the persister subscribes)', async () => {
    const inspected = new Set<unknown>();
    for (const inspect of [undefined, (event: InspectionEvent) => void inspected.add(event.actorRef)]) {
      const { runtime, http } = await startRuntime(inspect);
      try {
        const created = await postJsonRpc(http.url, 'tools/call', { name: 'sleep', arguments: { ms: 60_000 } });
        const taskId = created.message?.result?.taskId as string;
        const live = (
          runtime as unknown as {
            parts: {
              supervisor: {
                registry: { get(taskId: string): { actor: { options: { inspect?: unknown }; _parent?: unknown } } };
              };
            };
          }
        ).parts.supervisor.registry.get(taskId);
        assert.ok(live, 'the task actor is live');
        if (inspect === undefined) {
          assert.equal(live.actor.options.inspect, undefined, 'no inspection hook at all');
          assert.notEqual(live.actor._parent, undefined, "a member of the runtime's one shared system (TaskActorSystem)");
        } else {
          // Inspection is per system: an inspected task actor is a root, its events reach the inspector.
          assert.equal(live.actor._parent, undefined, 'with an inspector, a system of its own');
          assert.ok(inspected.has(live.actor), 'the inspector saw the task actor');
        }
        await postJsonRpc(http.url, 'tasks/cancel', { taskId });
      } finally {
        await http.close();
        await runtime.close();
      }
    }
  });
});

describe('taskvisor serve --trace / --inspect', () => {
  it('--trace FILE: a tool call that becomes a task writes actor, event and snapshot lines (redacted); SIGTERM flushes', async () => {
    const cwd = await tempDir('taskvisor-inspect-cli-');
    const file = join(cwd.path, 't.jsonl');
    const child = spawnNode([CLI, 'serve', '--http', '127.0.0.1:0', '--demo', '--trace', file], { cwd: cwd.path });
    try {
      const [, url] = await child.waitForOutput(/serving MCP over Streamable HTTP at (\S+)\n/, {
        stream: 'stderr',
        timeoutMs: STARTUP_TIMEOUT_MS,
      });
      assert.match(child.stderr, new RegExp(`tracing task actors to ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      const reply = await postJsonRpc(url!, 'tools/call', { name: 'sleep', arguments: { ms: 300, message: SECRET } });
      const taskId = reply.message?.result?.taskId as string;
      assert.ok(taskId, reply.text);
      const lines = await waitFor(
        async () => {
          const text = await readFile(file, 'utf8');
          const lines = text ? readTrace(text) : [];
          return lines.some((line) => line.taskId === taskId && line.snapshot?.status === 'done') ? lines : undefined;
        },
        { timeoutMs: 10_000, what: 'the task’s final snapshot line' },
      );
      const types = new Set(lines.filter((line) => line.taskId === taskId).map((line) => line.type));
      for (const type of ['@xstate.actor', '@xstate.event', '@xstate.snapshot']) assert.ok(types.has(type as TraceLine['type']), type);
    } catch (error) {
      await child.kill('SIGKILL');
      await cwd.remove();
      throw error;
    }
    const { code } = await child.kill('SIGTERM');
    assert.equal(code, 0, child.stderr);
    const text = await readFile(file, 'utf8');
    readTrace(text);
    assert.ok(!text.includes(SECRET));
    await cwd.remove();
  });

  it('--trace-raw keeps task data; --trace-raw alone and a bad --inspect-port are refused before anything starts', async () => {
    const cwd = await tempDir('taskvisor-inspect-cli-');
    try {
      const refused = [
        [['--trace-raw'], /--trace-raw needs --trace FILE/],
        [['--inspect', '--inspect-port', 'x'], /--inspect-port x: expected a port number/],
        [['--trace', join(cwd.path, 'missing', 't.jsonl')], /--trace .*: cannot open the file \(ENOENT\)/],
      ] as const;
      await Promise.all(
        refused.map(async ([args, message]) => {
          const child = spawnNode([CLI, 'serve', '--http', '127.0.0.1:0', '--demo', ...args], { cwd: cwd.path });
          const { code } = await child.exited;
          assert.equal(code, 1, child.stderr);
          assert.match(child.stderr, message);
        }),
      );
      assert.ok(!existsSync(join(cwd.path, '.taskvisor')), 'no store opened');
      const file = join(cwd.path, 'raw.jsonl');
      const child = spawnNode([CLI, 'serve', '--http', '127.0.0.1:0', '--demo', '--trace', file, '--trace-raw'], { cwd: cwd.path });
      try {
        const [, url] = await child.waitForOutput(/serving MCP over Streamable HTTP at (\S+)\n/, {
          stream: 'stderr',
          timeoutMs: STARTUP_TIMEOUT_MS,
        });
        assert.match(child.stderr, /\(not redacted\)/);
        await postJsonRpc(url!, 'tools/call', { name: 'sleep', arguments: { ms: 250, message: SECRET } });
        await waitFor(async () => (await readFile(file, 'utf8')).includes('"status":"done"'), {
          timeoutMs: 10_000,
          what: 'the task’s final snapshot line',
        });
      } finally {
        await child.kill('SIGTERM');
      }
      const raw = await readFile(file, 'utf8');
      assert.ok(raw.includes(`"args":{"ms":250,"message":"${SECRET}"}`), 'the arguments');
      assert.ok(raw.includes(`"text":"${SECRET}"`), 'the result');
    } finally {
      await cwd.remove();
    }
  });

  it('--inspect prints how to open the inspector, with the relay URL; a receiver on it sees the task actors', async () => {
    const cwd = await tempDir('taskvisor-inspect-cli-');
    const child = spawnNode([CLI, 'serve', '--http', '127.0.0.1:0', '--demo', '--inspect'], { cwd: cwd.path });
    try {
      const [, relay] = await child.waitForOutput(/relayed on (ws:\/\/127\.0\.0\.1:\d+)/, {
        stream: 'stderr',
        timeoutMs: STARTUP_TIMEOUT_MS,
      });
      const [, url] = await child.waitForOutput(/serving MCP over Streamable HTTP at (\S+)\n/, {
        stream: 'stderr',
        timeoutMs: STARTUP_TIMEOUT_MS,
      });
      assert.match(child.stderr, /Open http:\/\/127\.0\.0\.1:\d+\/ in a browser/);
      assert.match(child.stderr, /stately\.ai/);
      assert.match(child.stderr, /needs internet/);
      assert.match(child.stderr, /--trace FILE/);
      assert.equal(child.stdout, '');
      const received: StatelyInspectionEvent[] = [];
      createWebSocketReceiver({ server: relay! }).subscribe((event) => received.push(event));
      const reply = await postJsonRpc(url!, 'tools/call', { name: 'sleep', arguments: { ms: 300 } });
      const taskId = reply.message?.result?.taskId as string;
      await waitFor(
        () =>
          received.some(
            (event) =>
              event.type === '@xstate.snapshot' &&
              (event.snapshot as any)?.context?.taskId === taskId &&
              (event.snapshot as any).status === 'done',
          ),
        { timeoutMs: 10_000, what: 'the task’s final snapshot at the receiver' },
      );
      assert.ok(received.some((event) => event.type === '@xstate.actor'));
    } finally {
      const { code } = await child.kill('SIGTERM');
      await cwd.remove();
      assert.equal(code, 0, child.stderr);
    }
  });
});
