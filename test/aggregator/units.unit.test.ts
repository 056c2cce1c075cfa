/**
 * The aggregator's pure parts: wrapped ids (MAC per principal, header-safe),
 * backoff, the upstream machine and its failure-containing supervisor, tool
 * naming and the reserved namespace, the runtime state file.
 */
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { TaskProgressBoard } from '../../src/upstreams/TaskProgressBoard.js';
import { withoutLocations } from '../../src/upstreams/HeldUpstreamCall.js';
import { MAX_STATUS_MESSAGE_CHARS } from '../../src/tasks/storedText.js';
import { createActor, fromCallback, fromPromise, type AnyActorRef } from 'xstate';
import {
  backoffDelay,
  upstreamChildId,
  upstreamMachine,
  upstreamStateOf,
  upstreamSupervisorMachine,
  type BackoffPolicy,
  type ConnectOutput,
  type UpstreamEvent,
} from '../../machines/upstream/index.js';
import { newTaskId } from '../../src/core/ids.js';
import { RuntimeStateFile } from '../../src/upstreams/RuntimeStateFile.js';
import { ToolRegistry } from '../../src/tools/ToolRegistry.js';
import { forwardedToolName } from '../../src/upstreams/toolNames.js';
import { WrappedTaskIds } from '../../src/upstreams/WrappedTaskIds.js';
import { tempDir, waitFor } from '../support/processes.js';

const HEADER_SAFE = /^[A-Za-z0-9_.-]+$/;

describe('wrapped task ids', () => {
  const ids = new WrappedTaskIds(randomBytes(32));

  it('round-trip for the principal they were issued to, and only for it (I-7)', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/),
        fc.string({ minLength: 1, maxLength: 300 }),
        fc.string(),
        fc.string(),
        (upstream, id, principal, other) => {
          const wrapped = ids.wrap(upstream, id, principal);
          assert.match(wrapped, HEADER_SAFE, 'Mcp-Name safe whatever the upstream id is (T-61)');
          assert.ok(WrappedTaskIds.looksWrapped(wrapped));
          assert.deepEqual(ids.unwrap(wrapped, principal), { upstream, taskId: id });
          if (other !== principal) assert.equal(ids.unwrap(wrapped, other), undefined);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('any single-character change is refused (every position, every other character)', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // Several ids, so the spare bits of the MAC's last base64url character are exercised.
    for (let n = 0; n < 10; n++) {
      const wrapped = ids.wrap('demo', `f00d${n}`, 'alice');
      for (let i = 0; i < wrapped.length; i++) {
        if (wrapped[i] === '.') continue;
        for (const replacement of alphabet) {
          if (replacement === wrapped[i]) continue;
          const altered = wrapped.slice(0, i) + replacement + wrapped.slice(i + 1);
          assert.equal(ids.unwrap(altered, 'alice'), undefined, altered);
        }
      }
    }
  });

  it('another server secret does not verify; local ids never look wrapped', () => {
    const wrapped = ids.wrap('demo', 'abc', 'alice');
    assert.equal(new WrappedTaskIds(randomBytes(32)).unwrap(wrapped, 'alice'), undefined);
    for (let i = 0; i < 50; i++) assert.equal(WrappedTaskIds.looksWrapped(newTaskId()), false);
    assert.throws(() => new WrappedTaskIds(randomBytes(16)), /at least 32 bytes/);
  });
});

describe('backoff', () => {
  const policy: BackoffPolicy = { initialMs: 100, maxMs: 2_000, factor: 2, maxAttempts: null };
  it('grows exponentially, is capped, and jitters within the upper half', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60 }), fc.double({ min: 0, max: 1, noNaN: true }), (attempt, random) => {
        const cap = Math.min(policy.maxMs, policy.initialMs * 2 ** (attempt - 1));
        const delay = backoffDelay(attempt, policy, random);
        assert.ok(delay >= Math.floor(cap / 2) && delay <= cap, `${attempt}/${random}: ${delay} not in [${cap / 2}, ${cap}]`);
      }),
    );
    assert.equal(backoffDelay(30, policy, 1), 2_000);
  });
});

/** The upstream machine with scripted actors: connect results come from `outcomes`, timers are captured. */
function scripted(outcomes: Array<ConnectOutput | Error>) {
  const backoffs: Array<(event: UpstreamEvent) => void> = [];
  const monitors: Array<(event: UpstreamEvent) => void> = [];
  const machine = upstreamMachine.provide({
    actors: {
      connect: fromPromise<ConnectOutput, { name: string }>(async () => {
        const next = outcomes.shift();
        if (!next) throw new Error('no more scripted outcomes');
        if (next instanceof Error) throw next;
        return next;
      }),
      monitor: fromCallback<UpstreamEvent, { name: string }>(({ sendBack }) => {
        monitors.push(sendBack);
        return () => {};
      }),
      backoffTimer: fromCallback<UpstreamEvent, { attempt: number; backoff: BackoffPolicy }>(({ sendBack, input }) => {
        sendBack({ type: 'RETRY_SCHEDULED', at: 1_000 * input.attempt });
        backoffs.push(sendBack);
        return () => {};
      }),
    },
  });
  return { machine, backoffs, monitors };
}

const OK: ConnectOutput = { toolCount: 3, protocolVersion: '2026-07-28', tasks: true };
const input = (maxAttempts: number | null = null) => ({
  name: 'demo',
  backoff: { initialMs: 10, maxMs: 100, factor: 2, maxAttempts },
  maxPingFailures: 2,
});

describe('the upstream machine', () => {
  it('connecting → backoff (error, retry time) → connecting → ready ⇄ degraded → backoff → … → stopped', async () => {
    const { machine, backoffs, monitors } = scripted([new Error('refused'), OK, OK]);
    const actor = createActor(machine, { input: input() }).start();
    const state = () => upstreamStateOf(actor.getSnapshot().value);
    await waitFor(() => state() === 'backoff');
    assert.equal(actor.getSnapshot().context.lastError, 'refused');
    assert.equal(actor.getSnapshot().context.retryAt, 1_000);
    assert.equal(actor.getSnapshot().context.attempt, 1);
    backoffs.at(-1)!({ type: 'RETRY' });
    await waitFor(() => state() === 'ready');
    assert.deepEqual(
      (({ toolCount, protocolVersion, tasks, attempt, lastError, retryAt }) => ({
        toolCount,
        protocolVersion,
        tasks,
        attempt,
        lastError,
        retryAt,
      }))(actor.getSnapshot().context),
      { toolCount: 3, protocolVersion: '2026-07-28', tasks: true, attempt: 0, lastError: null, retryAt: null },
    );
    monitors.at(-1)!({ type: 'CATALOG', toolCount: 4 });
    assert.equal(actor.getSnapshot().context.toolCount, 4);
    monitors.at(-1)!({ type: 'PING_FAILED', error: 'slow' });
    assert.equal(state(), 'degraded');
    assert.equal(actor.getSnapshot().context.lastError, 'slow');
    monitors.at(-1)!({ type: 'PING_OK' });
    assert.equal(state(), 'ready');
    assert.equal(actor.getSnapshot().context.lastError, null, 'back to ready: no stale LAST ERROR in `taskvisor upstreams`');
    monitors.at(-1)!({ type: 'PING_FAILED', error: 'slow' });
    monitors.at(-1)!({ type: 'PING_FAILED', error: 'gone' });
    assert.equal(state(), 'backoff', 'maxPingFailures in a row reconnect');
    assert.equal(actor.getSnapshot().context.toolCount, 0);
    backoffs.at(-1)!({ type: 'RETRY' });
    await waitFor(() => state() === 'ready');
    monitors.at(-1)!({ type: 'DISCONNECTED', error: 'child exited' });
    assert.equal(state(), 'backoff');
    assert.equal(actor.getSnapshot().context.lastError, 'child exited');
    actor.send({ type: 'STOP' });
    assert.equal(state(), 'stopped');
    assert.equal(actor.getSnapshot().status, 'done');
  });

  it('gives up as failed after maxAttempts connection failures in a row', async () => {
    const { machine, backoffs } = scripted([new Error('one'), new Error('two')]);
    const actor = createActor(machine, { input: input(2) }).start();
    await waitFor(() => upstreamStateOf(actor.getSnapshot().value) === 'backoff');
    backoffs.at(-1)!({ type: 'RETRY' });
    await waitFor(() => upstreamStateOf(actor.getSnapshot().value) === 'failed');
    assert.equal(actor.getSnapshot().context.lastError, 'two');
  });
});

describe('the upstream supervisor', () => {
  it('contains a crashed child (xstate.error.actor.*), respawns it, and leaves the others running', async () => {
    let crashes = 1;
    const child = upstreamMachine.provide({
      actors: {
        connect: fromPromise<ConnectOutput, { name: string }>(async () => OK),
        monitor: fromCallback(() => () => {}),
        backoffTimer: fromCallback(() => () => {}),
      },
      actions: {
        // The first connection of `bad` crashes the child (an action throws outside any invoke).
        noteConnected: ({ context }) => {
          if (context.name === 'bad' && crashes-- > 0) throw new Error('boom');
        },
      },
    });
    const supervisor = createActor(upstreamSupervisorMachine.provide({ actors: { upstream: child } })).start();
    for (const name of ['good', 'bad']) {
      supervisor.send({ type: 'UPSTREAM.ADD', upstream: { ...input(), name } });
    }
    await waitFor(() => supervisor.getSnapshot().context.crashes.bad === 1, { what: 'the crash to be contained' });
    assert.equal(supervisor.getSnapshot().status, 'active');
    const childState = (name: string) =>
      upstreamStateOf((supervisor.getSnapshot().children[upstreamChildId(name)] as AnyActorRef).getSnapshot().value);
    await waitFor(() => childState('bad') === 'ready', { what: 'bad to come back' });
    assert.equal(childState('good'), 'ready');
    supervisor.send({ type: 'UPSTREAM.ADD', upstream: { ...input(), name: 'good' } });
    assert.equal(Object.keys(supervisor.getSnapshot().children).length, 2, 'adding a known upstream twice spawns nothing');
    supervisor.stop();
  });
});

describe('upstream tool names', () => {
  it('<namespace>_<prefix>_<tool>, never prefixed twice', () => {
    assert.equal(forwardedToolName('x', 'demo', 'sleep'), 'x_demo_sleep');
    assert.equal(forwardedToolName('x', 'github', 'github_search'), 'x_github_search');
    assert.equal(forwardedToolName('up', 'a-b', 'run'), 'up_a-b_run');
  });

  it('the namespace is reserved: a local tool cannot take it, before or after', () => {
    const tools = new ToolRegistry();
    tools.add('x_early', {}, () => 'hi');
    assert.throws(() => tools.reserve('x_'), /reserved for upstream tools/);
    const fresh = new ToolRegistry();
    fresh.reserve('x_');
    assert.throws(() => fresh.add('x_demo_sleep', {}, () => 'shadow'), /reserved for upstream tools/);
    fresh.add('sleep', {}, () => 'local');
    fresh.replaceForwarded('x_demo_', [
      {
        listed: { name: 'x_demo_sleep', inputSchema: { type: 'object' } },
        forward: async () => ({ kind: 'result', result: { content: [] } }),
      },
    ]);
    assert.deepEqual(fresh.names().sort(), ['sleep', 'x_demo_sleep']);
    let changes = 0;
    fresh.onChange(() => changes++);
    fresh.replaceForwarded('x_demo_', []);
    assert.deepEqual(fresh.names(), ['sleep']);
    assert.equal(changes, 1, 'one list_changed per catalog refresh');
  });
});

describe('the runtime state file', () => {
  it('is mode 0600, keeps its secret across reopen, and refuses a foreign file', async () => {
    const dir = await tempDir();
    try {
      const file = join(dir.path, 'nested', 'runtime-state.json');
      const first = await RuntimeStateFile.open(file);
      const secret = await first.secret('wrappedTaskIds');
      assert.equal(secret.length, 32);
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      const again = await RuntimeStateFile.open(file);
      assert.deepEqual(await again.secret('wrappedTaskIds'), secret);
      await again.setUpstream('demo', { discovery: { kind: 'legacy' }, savedAt: 1 });
      assert.deepEqual((await RuntimeStateFile.peek(file))!.upstreams.demo, { discovery: { kind: 'legacy' }, savedAt: 1 });
      const { writeFile } = await import('node:fs/promises');
      await writeFile(join(dir.path, 'other.json'), '{"tasks":[]}');
      await assert.rejects(RuntimeStateFile.open(join(dir.path, 'other.json')), /not a taskvisor runtime state file/);
    } finally {
      await dir.remove();
    }
  });
});

describe('TaskProgressBoard', () => {
  it("bounds an upstream's progress text as a local tool's statusMessage is bounded (T-32: informative, so cut)", () => {
    const board = new TaskProgressBoard();
    const key = TaskProgressBoard.key('up', 'task-1');
    board.track(key, () => {});
    board.set(key, 'x'.repeat(4 * 1024 * 1024));
    const shown = board.text(key)!;
    assert.ok(shown.length <= MAX_STATUS_MESSAGE_CHARS + 200, `shown ${shown.length} characters`);
    assert.match(shown, /truncated/);
    board.set(key, '3/10: copying');
    assert.equal(board.text(key), '3/10: copying');
  });
});

describe('the failure message of a held upstream call', () => {
  it('keeps the upstream words and drops its URLs and file paths', () => {
    assert.equal(
      withoutLocations('storage at /var/lib/app/data.db and https://internal.example/api?x=1 is unreachable'),
      'storage at … and … is unreachable',
    );
    assert.equal(withoutLocations('cannot open C:\\Users\\svc\\secret.txt'), 'cannot open …');
    assert.equal(withoutLocations('see ./config/local.yaml or ~/.app/state'), 'see … or …');
    assert.equal(withoutLocations('rate limit exceeded: 3/10 requests'), 'rate limit exceeded: 3/10 requests');
  });
});
