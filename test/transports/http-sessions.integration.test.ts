/**
 * Stateful Streamable HTTP for 2025-11-25 clients: `initialize`
 * opens a session named in `Mcp-Session-Id`; the session carries
 * server→client requests and `notifications/cancelled`; DELETE ends it; it
 * belongs to the principal that opened it (another's use is an unknown id,
 * I-7); sessions are bounded overall and per principal and end when idle.
 * 2026-07-28 clients stay stateless. Real HTTP on 127.0.0.1, the v1 SDK
 * client where a client is needed, raw fetch where the bytes matter.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createRuntime, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, type HttpListener } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { defineTool } from '../../src/tools/index.js';
import { connect, envelope } from '../support/extTasksClient.js';
import { rawRequest, resultOf, waitFor } from '../support/processes.js';

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** Starts and aborts recorded by the `wait` tool: a synchronous call that waits until its signal fires. */
const started: string[] = [];
const aborted: string[] = [];
const wait = defineTool('wait', { description: 'Waits until cancelled.' }, async (_args, ctx) => {
  started.push('wait');
  await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
  aborted.push('wait');
  return { content: [{ type: 'text', text: 'cancelled' }] };
});

describe('2025-11-25 Streamable HTTP sessions', () => {
  let runtime: TaskvisorRuntime;
  let http: HttpListener;

  before(async () => {
    runtime = createRuntime({
      store: new MemoryTaskStore(),
      logger: { info() {}, warn() {}, error() {} } as never,
      limits: { maxHttpSessions: 6, maxHttpSessionsPerPrincipal: 3 },
    });
    runtime.use(wait);
    await runtime.start();
    http = await listenHttp(runtime, {
      port: 0,
      authenticate: (request) => ({ id: request.headers.get('x-principal') ?? 'alice' }),
    });
  });
  after(async () => {
    await runtime?.close();
  });

  const initialize = (principal = 'alice') =>
    fetch(http.url, { method: 'POST', headers: { ...HEADERS, 'x-principal': principal }, body: JSON.stringify(INITIALIZE) });
  const ping = (sessionId: string, principal = 'alice') =>
    fetch(http.url, {
      method: 'POST',
      headers: { ...HEADERS, 'x-principal': principal, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
    });
  const end = (sessionId: string, principal = 'alice') =>
    fetch(http.url, {
      method: 'DELETE',
      headers: { 'x-principal': principal, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
    });
  const open = async (principal = 'alice') => {
    const response = await initialize(principal);
    assert.equal(response.status, 200);
    await response.text();
    const id = response.headers.get('mcp-session-id');
    assert.ok(id, 'initialize names the session');
    return id;
  };

  it('initialize opens a session; requests carrying its id are served; DELETE ends it and the id is then unknown (404)', async () => {
    const id = await open();
    const served = await ping(id);
    assert.equal(served.status, 200);
    assert.match(await served.text(), /"result":\{\}/);
    assert.equal((await end(id)).status, 200);
    const gone = await ping(id);
    assert.equal(gone.status, 404);
    assert.deepEqual(await gone.json(), { jsonrpc: '2.0', id: 2, error: { code: -32001, message: 'Session not found' } });
  });

  it("another principal's use of a session id is exactly an unknown id (I-7), and cannot end it", async () => {
    const id = await open('alice');
    const foreign = await ping(id, 'bob');
    assert.equal(foreign.status, 404);
    assert.deepEqual(await foreign.json(), { jsonrpc: '2.0', id: 2, error: { code: -32001, message: 'Session not found' } });
    assert.equal((await end(id, 'bob')).status, 404);
    assert.equal((await ping(id, 'alice')).status, 200, 'still alice’s');
    await end(id);
  });

  it('a made-up or hostile session id is 404, and the server goes on', async () => {
    for (const id of ['nope', 'x'.repeat(4000), '../../etc/passwd', '%00%ff']) {
      const response = await ping(id);
      assert.equal(response.status, 404, id.slice(0, 20));
      await response.text();
    }
    const id = await open();
    assert.equal((await ping(id)).status, 200);
    await end(id);
  });

  it('sessions are bounded per principal (429, limit named) and overall (503); ending one frees its place', async () => {
    const mine = [await open('carol'), await open('carol'), await open('carol')];
    const refused = await initialize('carol');
    assert.equal(refused.status, 429);
    const body = (await refused.json()) as { error: { code: number; data: { limit: string; max: number } } };
    assert.equal(body.error.code, -32000);
    assert.deepEqual(body.error.data, { limit: 'maxHttpSessionsPerPrincipal', max: 3 });
    const others = [await open('dave'), await open('dave'), await open('erin')];
    const full = await initialize('frank');
    assert.equal(full.status, 503);
    assert.equal(((await full.json()) as { error: { data: { limit: string } } }).error.data.limit, 'maxHttpSessions');
    await end(mine[0]!, 'carol');
    const again = await initialize('carol');
    assert.equal(again.status, 200);
    await again.text();
    await end(again.headers.get('mcp-session-id')!, 'carol');
    for (const id of mine.slice(1)) await end(id, 'carol');
    await end(others[0]!, 'dave');
    await end(others[1]!, 'dave');
    await end(others[2]!, 'erin');
  });

  it('a session without requests past httpSessionIdleMs ends (404 to its id); a default one is still there', async () => {
    const kept = await open();
    const short = createRuntime({
      store: new MemoryTaskStore(),
      logger: { info() {}, warn() {}, error() {} } as never,
      limits: { httpSessionIdleMs: 400 },
    });
    await short.start();
    try {
      const shortHttp = await listenHttp(short, { port: 0 });
      const response = await fetch(shortHttp.url, { method: 'POST', headers: HEADERS, body: JSON.stringify(INITIALIZE) });
      await response.text();
      const id = response.headers.get('mcp-session-id')!;
      const pingShort = () =>
        fetch(shortHttp.url, {
          method: 'POST',
          headers: { ...HEADERS, 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }),
        });
      // Each ping is activity: they come further apart than the idle time.
      await waitFor(async () => (await pingShort()).status === 404 || undefined, {
        timeoutMs: 15_000,
        intervalMs: 1_000,
        what: 'the idle session to end',
      });
    } finally {
      await short.close();
    }
    assert.equal((await ping(kept)).status, 200, 'the default idle time is minutes');
    await end(kept);
  });

  it('notifications/cancelled on the session aborts the synchronous call it names', async () => {
    const client = new Client({ name: 'v1-canceller', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers: { 'x-principal': 'gina' } } }));
    try {
      const controller = new AbortController();
      const call = client.callTool({ name: 'wait', arguments: {} }, undefined, { signal: controller.signal, timeout: 60_000 });
      // Cancelled once the tool runs: a cancel that arrived before would prove nothing about aborting a running call.
      await waitFor(() => started.includes('wait') || undefined, { timeoutMs: 10_000, what: 'the tool to start' });
      controller.abort();
      await assert.rejects(call);
      await waitFor(() => aborted.includes('wait') || undefined, { timeoutMs: 10_000, what: 'the tool to see its call cancelled' });
    } finally {
      await client.close();
    }
  });

  it('2026-07-28 clients stay stateless: no Mcp-Session-Id, no session counted', async () => {
    const modern = await connect({ kind: 'http', url: http.url, headers: { 'x-principal': 'hank' } });
    try {
      const result = resultOf(await rawRequest(modern, { method: 'tools/list', params: { _meta: envelope() } }));
      assert.ok(Array.isArray(result.tools));
      const response = await fetch(http.url, {
        method: 'POST',
        headers: { ...HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: { _meta: envelope() } }),
      });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('mcp-session-id'), null);
      await response.text();
    } finally {
      await modern.close();
    }
  });
});
