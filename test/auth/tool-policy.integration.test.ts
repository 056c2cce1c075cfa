/**
 * Tool policy over every transport: `tools/list` shows a principal only the
 * tools it may call, and a `tools/call` (a task creation included) without
 * the right is refused with the one stable error -32031 before anything
 * runs — no handler, no store write, no upstream request. A workflow step
 * runs with the rights of the principal that started the run.
 *
 * Streamable HTTP (modern, the v2 client; 2025-11-25 sessions, the v1
 * client) and WebSocket authenticate with a token file (alice: scope admin,
 * group ops; bob: nothing). stdio is the local principal: it has the scopes
 * and groups `toolPolicy.local` gives it, none by default.
 */
import assert from 'node:assert/strict';
import { subscribe } from 'node:diagnostics_channel';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { jwtVerifier, tokenFileVerifier } from '../../src/auth/index.js';
import { listenHttp, listenWebSocket } from '../../src/transports/index.js';
import { startIssuer, writeTokenFile } from '../support/authFixtures.js';
import { connect, type ConnectedClient, type Endpoint } from '../support/extTasksClient.js';
import { tempDir } from '../support/processes.js';
import { stdioDemoSpec, UPSTREAM_READY_MS } from '../aggregator/harness.js';
import { result_, taskOps, textOf, type Json, type RawResponse } from '../support/taskOps.js';
import { BOB_TOOLS, forbidden, LOCAL_TOOLS, runs, startPolicyRuntime } from './fixtures/policyRuntime.js';

const STDIO_SERVER = fileURLToPath(new URL('./fixtures/policy-stdio-server.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Store creates and upstream tools/calls seen on the diagnostics channels (process-wide: this file's runtime only). */
const seen = { creates: 0, upstreamCalls: 0 };
const onStore = (message: unknown) => {
  if ((message as { op?: string; error?: unknown }).op === 'create') seen.creates++;
};
const onUpstream = (message: unknown) => {
  if ((message as { method?: string }).method === 'tools/call') seen.upstreamCalls++;
};

const errorOf = (response: RawResponse) => {
  assert.equal(response.kind, 'error', `expected an error: ${JSON.stringify(response)}`);
  const { code, message } = (response as { error: { code: number; message: string } }).error;
  return { code, message };
};

const names = async (connected: ConnectedClient) =>
  (await connected.client.listTools()).tools
    .map((tool) => tool.name)
    .filter((name) => !name.startsWith('workflow_') || name === 'workflow_reset_all')
    .sort();

describe('tool policy (toolPolicy): what a principal sees and may call, on every transport', () => {
  let runtime: TaskvisorRuntime;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  const clients: ConnectedClient[] = [];
  const endpoints: Record<'http' | 'ws', (token: string) => Endpoint> = {} as never;
  let httpUrl = '';
  let aliceToken = '';
  let bobToken = '';

  before(async () => {
    subscribe('taskvisor:store.operation', onStore);
    subscribe('taskvisor:upstream.call', onUpstream);
    dir = await tempDir('taskvisor-policy-');
    aliceToken = randomBytes(32).toString('base64url');
    bobToken = randomBytes(32).toString('base64url');
    const file = await writeTokenFile(join(dir.path, 'tokens.yaml'), [
      { principal: 'alice', token: aliceToken, scopes: ['admin'], groups: ['ops'] },
      { principal: 'bob', token: bobToken },
    ]);
    runtime = await startPolicyRuntime(dir.path, {
      logger: silentLogger,
      stateFile: join(dir.path, 'runtime-state.json'),
      upstreams: [stdioDemoSpec(dir.path)],
    });
    await runtime.upstreams!.waitFor('demo', (status) => status.state === 'ready', UPSTREAM_READY_MS);
    const auth = { verifier: await tokenFileVerifier(file) };
    httpUrl = (await listenHttp(runtime, { port: 0, auth })).url;
    const wsUrl = (await listenWebSocket(runtime, { port: 0, auth })).url;
    endpoints.http = (token) => ({ kind: 'http', url: httpUrl, headers: { authorization: `Bearer ${token}` } });
    endpoints.ws = (token) => ({ kind: 'ws', url: wsUrl, headers: { authorization: `Bearer ${token}` } });
  });
  after(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await runtime.close();
    await dir.remove();
  });

  for (const transport of ['http', 'ws'] as const) {
    describe(transport === 'http' ? 'Streamable HTTP (2026-07-28)' : 'WebSocket', () => {
      let alice: ConnectedClient;
      let bob: ConnectedClient;
      before(async () => {
        alice = await connect(endpoints[transport](aliceToken));
        bob = await connect(endpoints[transport](bobToken));
        clients.push(alice, bob);
      });

      it('tools/list shows each principal only what it may call (the upstream namespace included)', async () => {
        const aliceNames = await names(alice);
        for (const name of LOCAL_TOOLS) assert.ok(aliceNames.includes(name), `alice sees ${name}: ${aliceNames.join(', ')}`);
        assert.ok(aliceNames.includes('x_demo_echo'), `alice sees the upstream's tools: ${aliceNames.join(', ')}`);
        assert.deepEqual(await names(bob), BOB_TOOLS);
      });

      it('a call without the scope is refused with -32031 and runs nothing', async () => {
        const before = { ...runs };
        assert.deepEqual(errorOf(await taskOps(() => bob).call('admin_reset')), forbidden('admin_reset'));
        assert.deepEqual(runs, before, 'no handler ran');
        assert.equal(textOf(result_(await taskOps(() => alice).call('admin_reset'))), 'reset done');
      });

      it('a task creation without the group is refused before the task exists (nothing stored)', async () => {
        const before = { runs: { ...runs }, creates: seen.creates };
        assert.deepEqual(errorOf(await taskOps(() => bob).call('ops_job')), forbidden('ops_job'));
        assert.deepEqual(runs, before.runs);
        assert.equal(seen.creates, before.creates, 'no task record was written');
        const ops = taskOps(() => alice);
        const { taskId } = await ops.createTask('ops_job');
        const { task } = await ops.waitForStatus(taskId, 'completed');
        assert.equal(textOf(task.result as Json), 'job done');
      });

      it('an upstream tool outside the caller namespace rule is refused without contacting the upstream', async () => {
        const before = seen.upstreamCalls;
        assert.deepEqual(errorOf(await taskOps(() => bob).call('x_demo_echo', { text: 'hi' })), forbidden('x_demo_echo'));
        assert.equal(seen.upstreamCalls, before, 'no tools/call went upstream');
        result_(await taskOps(() => alice).call('x_demo_echo', { text: 'hi' }));
        assert.equal(seen.upstreamCalls, before + 1, 'alice reached the upstream');
      });

      it("a workflow step runs with the caller's rights: bob's run fails at the restricted step", async () => {
        const before = runs.admin_reset;
        const refused = await taskOps(() => bob).call('workflow_reset_all');
        assert.ok(
          JSON.stringify(refused).includes(forbidden('admin_reset').message),
          `bob's workflow reports the step's refusal: ${JSON.stringify(refused)}`,
        );
        assert.equal(runs.admin_reset, before, "bob's step never ran the tool");
        const allowed = await taskOps(() => alice).call('workflow_reset_all');
        assert.equal(allowed.kind, 'result', JSON.stringify(allowed));
        assert.notEqual((allowed as { result: Json }).result.isError, true, JSON.stringify(allowed));
        assert.equal(runs.admin_reset, before + 1);
      });
    });
  }

  describe('JWT scopes (the scope claim)', () => {
    it('a JWT carrying the scope passes the scope rule; one without it is refused', async () => {
      const issuer = await startIssuer('taskvisor-policy');
      try {
        const verifier = await jwtVerifier({ jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: 'taskvisor-policy' });
        const url = (await listenHttp(runtime, { port: 0, auth: { verifier } })).url;
        const signedIn = async (claims: Record<string, unknown>) => {
          const token = await issuer.sign(claims, { expiresIn: '1h' });
          const connected = await connect({ kind: 'http', url, headers: { authorization: `Bearer ${token}` } });
          clients.push(connected);
          return connected;
        };
        const admin = await signedIn({ sub: 'dana', scope: 'read admin' });
        const plain = await signedIn({ sub: 'erin', scope: 'read' });
        assert.equal(textOf(result_(await taskOps(() => admin).call('admin_reset'))), 'reset done');
        assert.deepEqual(errorOf(await taskOps(() => plain).call('admin_reset')), forbidden('admin_reset'));
        assert.ok((await names(admin)).includes('admin_reset'));
        assert.ok(!(await names(plain)).includes('admin_reset'));
      } finally {
        await issuer.close();
      }
    });
  });

  describe('Streamable HTTP, 2025-11-25 sessions (the v1 SDK client)', () => {
    it('tools/list is filtered and a forbidden call is -32031', async () => {
      const client = new V1Client({ name: 'policy-v1', version: '1.0.0' });
      await client.connect(new V1HttpTransport(new URL(httpUrl), { requestInit: { headers: { authorization: `Bearer ${bobToken}` } } }));
      try {
        const listed = (await client.listTools()).tools
          .map((tool) => tool.name)
          .filter((name) => BOB_TOOLS.includes(name) || !name.startsWith('workflow_'));
        assert.deepEqual(listed.sort(), BOB_TOOLS);
        const before = runs.admin_reset;
        await assert.rejects(client.callTool({ name: 'admin_reset', arguments: {} }), (error: unknown) => {
          assert.ok(error instanceof McpError, String(error));
          assert.equal(error.code, -32031);
          assert.match(error.message, /Forbidden: this principal may not call the tool admin_reset/);
          return true;
        });
        assert.equal(runs.admin_reset, before);
      } finally {
        await client.close();
      }
    });
  });

  describe('stdio (the local principal)', () => {
    const stdio = (grants?: object): Endpoint => ({
      kind: 'stdio',
      command: process.execPath,
      args: ['--import', 'tsx', STDIO_SERVER],
      cwd: REPO_ROOT,
      env: { ...(process.env as Record<string, string>), ...(grants ? { TASKVISOR_TEST_LOCAL_GRANTS: JSON.stringify(grants) } : {}) },
    });

    it('without toolPolicy.local the local principal holds nothing: it sees and calls only the open tools', async () => {
      const local = await connect(stdio());
      try {
        assert.deepEqual(await names(local), BOB_TOOLS);
        assert.deepEqual(errorOf(await taskOps(() => local).call('admin_reset')), forbidden('admin_reset'));
        assert.deepEqual(errorOf(await taskOps(() => local).call('ops_job')), forbidden('ops_job'));
        assert.equal(textOf(result_(await taskOps(() => local).call('open_echo'))), 'echo');
      } finally {
        await local.close();
      }
    });

    it('toolPolicy.local grants the local principal its scopes and groups', async () => {
      const local = await connect(stdio({ scopes: ['admin'], groups: ['ops'] }));
      try {
        assert.deepEqual(await names(local), LOCAL_TOOLS);
        assert.equal(textOf(result_(await taskOps(() => local).call('admin_reset'))), 'reset done');
        const ops = taskOps(() => local);
        const { taskId } = await ops.createTask('ops_job');
        await ops.waitForStatus(taskId, 'completed');
      } finally {
        await local.close();
      }
    });
  });
});
