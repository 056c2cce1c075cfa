/**
 * Per-principal rate limits (rateLimits) on every transport, through real
 * clients: over Streamable HTTP the request past a limit is answered 429
 * with `Retry-After` and the JSON-RPC error -32029 (the SDK path for a
 * synchronous tool, the fast lane for a task creation); over WebSocket and
 * stdio the same error answers the request. The refused call runs nothing,
 * one principal's limit never touches another's, and /metrics counts the
 * refusals by limit.
 *
 * Windows are an hour long, so no token comes back while a test runs: the
 * counts are exact without any clock (the bucket arithmetic itself is
 * unit-tested on an injected clock: test/core/rate-limiter.unit.test.ts).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { tokenFileVerifier } from '../../src/auth/index.js';
import type { TaskvisorRuntime } from '../../src/index.js';
import { listenWebSocket } from '../../src/transports/index.js';
import { writeTokenFile } from '../support/authFixtures.js';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { tempDir } from '../support/processes.js';
import { standardHeaders } from '../support/httpRaw.js';
import { NO_TASKS_CAPABILITIES, taskOps, type RawResponse } from '../support/taskOps.js';
import { parseExposition } from '../operations/prometheus.js';
import { serveWithOperations } from '../operations/support.js';

const HOUR = 3_600_000;
const STDIO_SERVER = fileURLToPath(new URL('../auth/fixtures/policy-stdio-server.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

let calls = 0;
const register = (runtime: TaskvisorRuntime) => {
  runtime.tool('limited_echo', { taskBehavior: 'never' }, () => {
    calls++;
    return 'echo';
  });
  runtime.tool('queued_job', { taskBehavior: 'always' }, () => 'done');
  runtime.tool('free_echo', { taskBehavior: 'never' }, () => 'free');
  runtime.tool('secret_tool', { taskBehavior: 'never' }, () => 'secret');
};

/** One JSON-RPC POST, as a 2026-07-28 client sends it; the answer with its status and Retry-After. */
async function post(url: string, token: string, name: string, tasks: boolean) {
  const params = { name, arguments: {}, _meta: envelope(tasks ? undefined : NO_TASKS_CAPABILITIES) };
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...standardHeaders('tools/call', params), authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: randomBytes(4).toString('hex'), method: 'tools/call', params }),
  });
  const body = (await response.json()) as { id: string; error?: { code: number; data?: { limit: string; retryAfterMs: number } } };
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body };
}

const limitOf = (response: RawResponse) => {
  assert.equal(response.kind, 'error', JSON.stringify(response));
  const { error } = response as { error: { code: number; data?: { limit?: string } } };
  assert.equal(error.code, -32029, JSON.stringify(error));
  return error.data?.limit;
};

describe('rate limits per principal (rateLimits)', () => {
  let served: Awaited<ReturnType<typeof serveWithOperations>>;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let wsUrl = '';
  const tokens = { alice: '', bob: '', carol: '' };
  const clients: ConnectedClient[] = [];

  before(async () => {
    dir = await tempDir('taskvisor-rates-');
    for (const name of Object.keys(tokens) as (keyof typeof tokens)[]) tokens[name] = randomBytes(32).toString('base64url');
    const file = await writeTokenFile(
      join(dir.path, 'tokens.yaml'),
      Object.entries(tokens).map(([principal, token]) => ({ principal, token })),
    );
    const auth = { verifier: await tokenFileVerifier(file) };
    served = await serveWithOperations({
      register,
      runtime: {
        rateLimits: {
          requests: { limit: 30, windowMs: HOUR },
          taskCreations: { limit: 2, windowMs: HOUR },
          tools: [{ tools: ['limited_*'], limit: 2, windowMs: HOUR }],
        },
        toolPolicy: { rules: [{ tools: ['secret_*'], scopes: ['secret'] }] },
      },
      operations: { metrics: true },
      http: { auth },
    });
    wsUrl = (await listenWebSocket(served.runtime, { port: 0, auth })).url;
  });
  after(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await served.close();
    await dir.remove();
  });

  it('Streamable HTTP: a tool over its limit gets 429 with Retry-After and -32029, and does not run', async () => {
    const url = served.url;
    assert.equal((await post(url, tokens.alice, 'limited_echo', false)).status, 200);
    assert.equal((await post(url, tokens.alice, 'limited_echo', false)).status, 200);
    const before = calls;
    const refused = await post(url, tokens.alice, 'limited_echo', false);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error?.code, -32029);
    assert.equal(refused.body.error?.data?.limit, 'toolCalls');
    // One token per half hour: Retry-After is the seconds until it is back (rounded up).
    const seconds = Number(refused.retryAfter);
    assert.ok(seconds > 1700 && seconds <= 1800, `Retry-After ${refused.retryAfter}`);
    assert.equal(Math.ceil(refused.body.error.data.retryAfterMs / 1000), seconds);
    assert.equal(calls, before, 'the refused call ran nothing');
    assert.equal((await post(url, tokens.bob, 'limited_echo', false)).status, 200, "alice's limit is not bob's");
  });

  it('Streamable HTTP fast lane: the third task creation is 429 (no task created)', async () => {
    const url = served.url;
    for (let i = 0; i < 2; i++) assert.equal((await post(url, tokens.bob, 'queued_job', true)).status, 200);
    const refused = await post(url, tokens.bob, 'queued_job', true);
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.equal(refused.body.error?.data?.limit, 'taskCreations');
    assert.ok(Number(refused.retryAfter) >= 1);
    // Without the extension the call cannot create a task: not a creation (and refused for its own reason, -32021).
    assert.notEqual((await post(url, tokens.bob, 'queued_job', false)).status, 429);
  });

  it('WebSocket: the JSON-RPC error -32029 answers the request, the connection stays usable', async () => {
    const carol = await connect({ kind: 'ws', url: wsUrl, headers: { authorization: `Bearer ${tokens.carol}` } });
    clients.push(carol);
    const ops = taskOps(() => carol);
    for (let i = 0; i < 2; i++) assert.equal((await ops.call('limited_echo', {}, NO_TASKS_CAPABILITIES)).kind, 'result');
    assert.equal(limitOf(await ops.call('limited_echo', {}, NO_TASKS_CAPABILITIES)), 'toolCalls');
    assert.equal((await ops.call('free_echo', {}, NO_TASKS_CAPABILITIES)).kind, 'result', 'other tools still pass');
    // Every request counts: carol spends the rest of her 30, then even a free tool is refused.
    let refused: string | undefined;
    for (let i = 0; i < 40 && refused === undefined; i++) {
      const response = await ops.call('free_echo', {}, NO_TASKS_CAPABILITIES);
      if (response.kind === 'error') refused = limitOf(response);
    }
    assert.equal(refused, 'requests');
  });

  it('stdio: the local principal over its limit gets -32029', async () => {
    const local = await connect({
      kind: 'stdio',
      command: process.execPath,
      args: ['--import', 'tsx', STDIO_SERVER],
      cwd: REPO_ROOT,
      env: {
        ...(process.env as Record<string, string>),
        TASKVISOR_TEST_RATE_LIMITS: JSON.stringify({ tools: [{ tools: ['open_*'], limit: 2, windowMs: HOUR }] }),
      },
    });
    try {
      const ops = taskOps(() => local);
      for (let i = 0; i < 2; i++) assert.equal((await ops.call('open_echo')).kind, 'result');
      assert.equal(limitOf(await ops.call('open_echo')), 'toolCalls');
    } finally {
      await local.close();
    }
  });

  it('/metrics counts refusals by limit (no principal label), and tool policy refusals by tool', async () => {
    const forbidden = await post(served.url, tokens.alice, 'secret_tool', false);
    assert.equal(forbidden.status, 200, 'a policy refusal is an in-band JSON-RPC error');
    assert.equal(forbidden.body.error?.code, -32031);
    const text = await (await fetch(new URL('/metrics', served.base))).text();
    const metrics = parseExposition(text);
    assert.equal(metrics.sum('taskvisor_rate_limited_total', { limit: 'toolCalls' }), 2, 'one over HTTP, one over WebSocket');
    assert.equal(metrics.sum('taskvisor_rate_limited_total', { limit: 'taskCreations' }), 1);
    assert.equal(metrics.sum('taskvisor_rate_limited_total', { limit: 'requests' }), 1);
    assert.equal(metrics.sum('taskvisor_tool_calls_forbidden_total', { tool: 'secret_tool' }), 1);
    assert.doesNotMatch(text, /taskvisor_rate_limited_total\{[^}]*(alice|bob|carol|principal)/);
  });
});
