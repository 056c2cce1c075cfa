/**
 * How a call held as a task ends when it does not simply complete
 * (docs/aggregator.md "Promoted calls"), against a plain v1 SDK upstream
 * (fixtures/held-upstream.ts): `tasks/cancel` sends `notifications/cancelled`
 * for the held request and the task ends `cancelled`; an upstream that
 * answers an error, does not answer in time, or dies mid-call ends it
 * `failed` with a stable message naming no path or URL; after a restart a
 * held call of a tool marked idempotent is sent again (`replay`), any other
 * ends `failed` saying why.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import type { UpstreamSpec } from '../../src/upstreams/UpstreamSpec.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { callTool, getTask, rawRequest, REPO_ROOT, resultOf, tempDir, TSX_IMPORT, waitFor } from '../support/processes.js';
import { envelope } from '../support/extTasksClient.js';
import { startAggregator, UPSTREAM_READY_MS, type Aggregator } from './harness.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/held-upstream.ts', import.meta.url));

function heldSpec(promotion: UpstreamSpec['promotion']): UpstreamSpec {
  return {
    name: 'held',
    type: 'stdio',
    command: process.execPath,
    args: ['--import', TSX_IMPORT, FIXTURE],
    cwd: REPO_ROOT,
    timeout: 120_000,
    backoff: { initialMs: 100, maxMs: 500 },
    ...(promotion ? { promotion } : {}),
  };
}

async function settled(client: ConnectedClient, taskId: string, timeoutMs = 20_000): Promise<Record<string, unknown>> {
  return waitFor(
    async () => {
      const task = resultOf(await getTask(client, taskId));
      return ['completed', 'failed', 'cancelled'].includes(String(task.status)) ? task : undefined;
    },
    { timeoutMs, intervalMs: 50, what: `task ${taskId} to end` },
  );
}

async function promoted(client: ConnectedClient, tool: string, args: Record<string, unknown>): Promise<string> {
  const created = resultOf(await callTool(client, tool, args));
  assert.equal(created.resultType, 'task', JSON.stringify(created));
  return String(created.taskId);
}

const noLocations = (text: string) => {
  assert.doesNotMatch(text, /\/var\/lib|https?:\/\//, `no path or URL in ${text}`);
};

describe('a held upstream call that is cancelled or fails', () => {
  let aggregator: Aggregator;
  let client: ConnectedClient;

  before(async () => {
    aggregator = await startAggregator([heldSpec({ promoteAfterMs: 100, timeoutMs: 3_000 })]);
    client = await connect({ kind: 'http', url: aggregator.url });
  });
  after(async () => {
    await client?.close();
    await aggregator?.close();
  });

  it('tasks/cancel sends notifications/cancelled for the held request and the task ends cancelled', async () => {
    const taskId = await promoted(client, 'x_held_wait', { ms: 2_500 });
    assert.deepEqual(
      resultOf(await rawRequest(client, { method: 'tasks/cancel', params: { taskId, _meta: envelope() } })).resultType,
      'complete',
    );
    const task = await settled(client, taskId);
    assert.equal(task.status, 'cancelled');
    // The upstream saw the cancellation (its handler's signal fired).
    await waitFor(async () => /cancelled 1/.test(JSON.stringify(resultOf(await callTool(client, 'x_held_cancelled', {})).content)), {
      timeoutMs: 10_000,
      what: 'the upstream to count the cancelled call',
    });
  });

  it("an upstream's JSON-RPC error ends the task failed with its code and a message without paths or URLs", async () => {
    const task = await settled(client, await promoted(client, 'x_held_fail', { ms: 400 }));
    assert.equal(task.status, 'failed');
    const error = task.error as { code: number; message: string };
    assert.equal(error.code, -32050);
    assert.match(error.message, /^The upstream tool x_held_fail failed: (MCP error -32050: )?storage at … and … is unreachable$/);
    noLocations(JSON.stringify(task));
  });

  it('an upstream that does not answer within promotion.timeoutMs ends the task failed', async () => {
    const task = await settled(client, await promoted(client, 'x_held_wait', { ms: 20_000 }));
    assert.equal(task.status, 'failed');
    assert.equal((task.error as { message: string }).message, 'The upstream server held did not answer the call of x_held_wait in time');
  });

  it('an upstream that dies mid-call ends the task failed, stably worded', async () => {
    const task = await settled(client, await promoted(client, 'x_held_die', { ms: 400 }));
    assert.equal(task.status, 'failed');
    assert.equal((task.error as { message: string }).message, 'The upstream server held went away before answering the call of x_held_die');
    noLocations(JSON.stringify(task));
  });
});

describe('a held upstream call across a restart', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let runtime: TaskvisorRuntime | undefined;

  before(async () => {
    dir = await tempDir('taskvisor-held-');
  });
  after(async () => {
    await runtime?.close();
    await dir?.remove();
  });

  /** A runtime over the same store and state file each time, its upstream the fixture (`wait` marked idempotent). */
  async function start(): Promise<{ runtime: TaskvisorRuntime; client: ConnectedClient }> {
    const started = createRuntime({
      store: { kind: 'lowdb', dir: join(dir.path, 'store') },
      stateFile: join(dir.path, 'state', 'runtime-state.json'),
      upstreams: [heldSpec({ promoteAfterMs: 100, tools: { wait: { idempotent: true } } })],
      logger: silentLogger,
    });
    await started.start();
    await started.upstreams!.waitFor('held', (status) => status.state === 'ready', UPSTREAM_READY_MS);
    const http = await listenHttp(started, { port: 0, authenticate: () => ({ id: 'alice' }) });
    return { runtime: started, client: await connect({ kind: 'http', url: http.url }) };
  }

  it('replays the idempotent one, fails the other saying why; never silently', async () => {
    const first = await start();
    runtime = first.runtime;
    const replayed = await promoted(first.client, 'x_held_wait', { ms: 1_500 });
    const lost = await promoted(first.client, 'x_held_hold', { ms: 60_000 });
    await first.client.close();
    await first.runtime.close();
    runtime = undefined;

    const second = await start();
    runtime = second.runtime;
    try {
      const failed = await settled(second.client, lost);
      assert.equal(failed.status, 'failed');
      assert.match(
        String(failed.statusMessage ?? (failed.error as { message: string }).message),
        /restarted while it held this task's call to the upstream server held; .* not marked idempotent, so it was not sent again/,
      );
      const done = await settled(second.client, replayed);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.match(JSON.stringify(done.result), /waited/);
    } finally {
      await second.client.close();
    }
  });
});
