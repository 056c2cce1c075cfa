/**
 * DNS-rebinding and cross-site protection at the front door: the Host and
 * Origin checks of Streamable HTTP and WebSocket, on by default for loopback
 * binds, configurable allowlists, checked before authentication; and no
 * CORS headers, wildcard or otherwise, anywhere (ours or the SDK's).
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { listenHttp, listenWebSocket } from '../../src/transports/index.js';
import { tokenFileVerifier } from '../../src/auth/index.js';
import { type TaskvisorRuntime } from '../../src/index.js';
import { writeTokenFile } from '../support/authFixtures.js';
import { PROTOCOL_VERSION, envelope } from '../support/extTasksClient.js';
import { tempDir } from '../support/processes.js';
import { WebSocketClientTransport, WebSocketUpgradeError } from '../../src/client/index.js';
import { startE2eRuntime } from '../e2e/fixtures/runtime.js';

const TOKEN = 'host-origin-token-0123456789';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A raw HTTP request with whatever Host and Origin a forger would send (fetch will not forge Host). */
function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'POST', headers: options.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A modern `tasks/get` POST (for an id nobody has: -32602 when it gets through the door). */
function tasksGet(url: string, headers: Record<string, string>): Promise<Reply> {
  const params = { taskId: 'f'.repeat(32), _meta: envelope() };
  return send(url, {
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL_VERSION,
      'mcp-method': 'tasks/get',
      'mcp-name': params.taskId,
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params }),
  });
}

const passed = (reply: Reply, what: string) => {
  assert.equal(reply.status, 200, `${what}: ${reply.body}`);
  assert.match(reply.body, /-32602/, what);
};
const refused = (reply: Reply, what: string) => {
  assert.equal(reply.status, 403, `${what}: ${reply.body}`);
  assert.doesNotMatch(reply.body, /-32602/, `${what}: must not reach the task layer`);
};
const noCors = (reply: Reply, what: string) => {
  for (const name of Object.keys(reply.headers))
    assert.ok(!name.startsWith('access-control-'), `${what}: sent ${name}: ${String(reply.headers[name])}`);
};

async function upgrade(url: string, headers: Record<string, string>): Promise<number> {
  const transport = new WebSocketClientTransport(url, { headers });
  try {
    await transport.start();
    await transport.close();
    return 101;
  } catch (error) {
    assert.ok(error instanceof WebSocketUpgradeError, String(error));
    return error.status;
  }
}

describe('Host and Origin validation, no CORS', () => {
  let runtime: TaskvisorRuntime;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let loopbackHttp = '';
  let loopbackWs = '';
  let configuredHttp = '';
  let configuredWs = '';
  let openHttp = '';
  let authHttp = '';

  before(async () => {
    dir = await tempDir('taskvisor-host-');
    runtime = await startE2eRuntime();
    loopbackHttp = (await listenHttp(runtime, { port: 0 })).url;
    loopbackWs = (await listenWebSocket(runtime, { port: 0 })).url;
    const allow = { allowedHosts: ['mcp.example.com'], allowedOrigins: ['app.example.com'] };
    configuredHttp = (await listenHttp(runtime, { port: 0, ...allow })).url;
    configuredWs = (await listenWebSocket(runtime, { port: 0, ...allow })).url;
    openHttp = (await listenHttp(runtime, { port: 0, allowedHosts: false, allowedOrigins: false })).url;
    const verifier = await tokenFileVerifier(await writeTokenFile(join(dir.path, 'tokens.yaml'), [{ principal: 'alice', token: TOKEN }]));
    authHttp = (await listenHttp(runtime, { port: 0, auth: { verifier } })).url;
  });
  after(async () => {
    await runtime.close();
    await dir.remove();
  });

  it('loopback HTTP bind: a forged Host (DNS rebinding) is 403 before anything runs; loopback names pass', async () => {
    const port = new URL(loopbackHttp).port;
    refused(await tasksGet(loopbackHttp, { host: `evil.example:${port}` }), 'rebinding host');
    refused(await tasksGet(loopbackHttp, { host: `127.0.0.1.evil.example:${port}` }), 'suffix trick');
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) passed(await tasksGet(loopbackHttp, { host }), host);
  });

  it('loopback HTTP bind: a foreign browser Origin is 403 (also "null"); loopback origins and no Origin pass', async () => {
    for (const origin of ['https://evil.example', 'http://localhost.evil.example', 'null', 'file://'])
      refused(await tasksGet(loopbackHttp, { origin }), origin);
    for (const origin of ['http://localhost:5173', 'http://127.0.0.1:8080']) passed(await tasksGet(loopbackHttp, { origin }), origin);
    passed(await tasksGet(loopbackHttp, {}), 'no Origin (non-browser client)');
  });

  it('loopback WebSocket bind: forged Host and foreign Origin upgrades are 403', async () => {
    const port = new URL(loopbackWs).port;
    assert.equal(await upgrade(loopbackWs, { host: `evil.example:${port}` }), 403);
    assert.equal(await upgrade(loopbackWs, { origin: 'https://evil.example' }), 403);
    assert.equal(await upgrade(loopbackWs, { origin: 'http://localhost:3000' }), 101);
  });

  it('configured allowlists replace the loopback defaults, on HTTP and WebSocket', async () => {
    const port = new URL(configuredHttp).port;
    passed(await tasksGet(configuredHttp, { host: `mcp.example.com:${port}`, origin: 'https://app.example.com' }), 'listed');
    refused(await tasksGet(configuredHttp, { host: `localhost:${port}` }), 'loopback no longer listed');
    refused(await tasksGet(configuredHttp, { host: `mcp.example.com:${port}`, origin: 'http://localhost:3000' }), 'origin not listed');
    const wsPort = new URL(configuredWs).port;
    assert.equal(await upgrade(configuredWs, { host: `mcp.example.com:${wsPort}`, origin: 'https://app.example.com' }), 101);
    assert.equal(await upgrade(configuredWs, { host: `evil.example:${wsPort}` }), 403);
    assert.equal(await upgrade(configuredWs, { host: `mcp.example.com:${wsPort}`, origin: 'https://evil.example' }), 403);
  });

  it('false turns the checks off (documented as only for a proxy that checks them)', async () => {
    passed(await tasksGet(openHttp, { host: 'anything.example', origin: 'https://evil.example' }), 'checks off');
  });

  it('Host and Origin are checked before the token: a rebinding page with a stolen token still gets 403', async () => {
    const port = new URL(authHttp).port;
    refused(await tasksGet(authHttp, { host: `evil.example:${port}`, authorization: `Bearer ${TOKEN}` }), 'forged host + token');
    refused(await tasksGet(authHttp, { origin: 'https://evil.example', authorization: `Bearer ${TOKEN}` }), 'foreign origin + token');
    passed(await tasksGet(authHttp, { authorization: `Bearer ${TOKEN}` }), 'token');
  });

  it('no Access-Control-* header on any answer: MCP POST, GET, preflight, 401, 403, 404, metadata document', async () => {
    const origin = 'http://localhost:5173';
    const replies: Array<[string, Reply]> = [
      ['POST', await tasksGet(loopbackHttp, { origin })],
      ['GET', await send(loopbackHttp, { method: 'GET', headers: { origin, accept: 'text/event-stream' } })],
      [
        'OPTIONS',
        await send(loopbackHttp, {
          method: 'OPTIONS',
          headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
        }),
      ],
      ['403', await tasksGet(loopbackHttp, { origin: 'https://evil.example' })],
      ['401', await tasksGet(authHttp, { origin })],
      ['404', await send(new URL('/elsewhere', loopbackHttp).href, { headers: { origin } })],
      ['metadata', await send(new URL('/.well-known/oauth-protected-resource/mcp', authHttp).href, { method: 'GET', headers: { origin } })],
      [
        'metadata preflight',
        await send(new URL('/.well-known/oauth-protected-resource/mcp', authHttp).href, {
          method: 'OPTIONS',
          headers: { origin, 'access-control-request-method': 'GET' },
        }),
      ],
    ];
    for (const [what, reply] of replies) noCors(reply, what);
    assert.equal(replies[6]![1].status, 200);
  });
});
