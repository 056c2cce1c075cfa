/**
 * The front door's request checks, through real sockets against real
 * `taskvisor serve` processes: hostile request heads (bad targets, credentials in Host
 * or target, absurd lengths, bad header bytes) sent as raw bytes to the HTTP
 * and the WebSocket listener of a token-file-authenticated server and of an
 * aggregator. Each gets a 4xx; after each, the process is alive and another
 * client is answered. The log gets one short escaped line per refusal. Then
 * duplicate in-flight JSON-RPC ids on one WebSocket: the second is refused
 * with -32600 and only the first runs.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { envelope } from '../support/extTasksClient.js';
import { CLI, DEMO_TOOLS, runNode, spawnNode, tempDir, type Child } from '../support/processes.js';
import { RawWs, request } from '../support/rawWire.js';
import { sendRaw } from '../support/rawSocket.js';

const STARTUP_TIMEOUT_MS = 45_000;
const SERVING_HTTP = /serving MCP over Streamable HTTP at (\S+)\n/;
const SERVING_WS = /serving MCP over WebSocket at (\S+)\n/;
const UPGRADE = 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
const LONG = 'a'.repeat(9_000);

interface HostileHead {
  name: string;
  /** The raw bytes; `{host}` stands for `127.0.0.1:<port>` of the listener under attack. */
  head: string;
  /** Accepted answers (an HTTP status each). */
  status: number[];
}

const HOSTILE_HEADS: HostileHead[] = [
  { name: 'an absolute target with a broken IPv6 host', head: 'GET http://[/mcp HTTP/1.1\r\nHost: {host}\r\n\r\n', status: [400] },
  {
    name: 'a POST to a broken absolute target',
    head: 'POST http://[/mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
    status: [400],
  },
  { name: 'an upgrade to a broken absolute target', head: `GET http://[/mcp HTTP/1.1\r\nHost: {host}\r\n${UPGRADE}\r\n`, status: [400] },
  { name: 'credentials in the Host header', head: 'GET /mcp HTTP/1.1\r\nHost: x@{host}\r\n\r\n', status: [400] },
  { name: 'credentials in the Host header of an upgrade', head: `GET /mcp HTTP/1.1\r\nHost: x@{host}\r\n${UPGRADE}\r\n`, status: [400] },
  { name: 'credentials in the target of an upgrade', head: `GET http://a@b/mcp HTTP/1.1\r\nHost: {host}\r\n${UPGRADE}\r\n`, status: [400] },
  {
    name: 'credentials in an absolute target',
    head: 'POST http://a:b@{host}/mcp HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\n\r\n',
    status: [400],
  },
  { name: 'a network-path target', head: `GET //evil.example/mcp HTTP/1.1\r\nHost: {host}\r\n${UPGRADE}\r\n`, status: [400] },
  { name: 'an asterisk target', head: 'OPTIONS * HTTP/1.1\r\nHost: {host}\r\n\r\n', status: [400] },
  { name: 'an absurdly long target', head: `GET /mcp?q=${LONG} HTTP/1.1\r\nHost: {host}\r\n\r\n`, status: [414] },
  { name: 'an absurdly long upgrade target', head: `GET /mcp?q=${LONG} HTTP/1.1\r\nHost: {host}\r\n${UPGRADE}\r\n`, status: [414] },
  { name: 'absurdly large headers', head: `GET /mcp HTTP/1.1\r\nHost: {host}\r\nX-Pad: ${'b'.repeat(40_000)}\r\n\r\n`, status: [431] },
  { name: 'an absurdly long Host header', head: `GET /mcp HTTP/1.1\r\nHost: ${'h'.repeat(5_000)}\r\n${UPGRADE}\r\n`, status: [400] },
  { name: 'a Host header that is no host', head: `GET /mcp HTTP/1.1\r\nHost: [::1\r\n${UPGRADE}\r\n`, status: [400] },
  { name: 'a control byte in a header value', head: 'GET /mcp HTTP/1.1\r\nHost: {host}\r\nX-Bad: a\x01b\r\n\r\n', status: [400] },
  { name: 'a space in a header name', head: 'GET /mcp HTTP/1.1\r\nHost: {host}\r\nBad Name: x\r\n\r\n', status: [400] },
  { name: 'non-ASCII bytes in the target', head: `GET /mcp\xff\xfe HTTP/1.1\r\nHost: {host}\r\n${UPGRADE}\r\n`, status: [400] },
  { name: 'no Host header (HTTP/1.0)', head: 'GET /mcp HTTP/1.0\r\n\r\n', status: [400] },
];

interface Server {
  name: string;
  child: Child;
  httpUrl: string;
  wsUrl: string;
  headers: Record<string, string>;
}

let dir: Awaited<ReturnType<typeof tempDir>>;
const servers: Server[] = [];

async function startServer(name: string, config: string, headers: Record<string, string>): Promise<Server> {
  const child = spawnNode([CLI, 'serve', '--config', config, '--http', '127.0.0.1:0', '--ws', '127.0.0.1:0'], { cwd: dir.path });
  const [, httpUrl] = await child.waitForOutput(SERVING_HTTP, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
  const [, wsUrl] = await child.waitForOutput(SERVING_WS, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
  return { name, child, httpUrl: httpUrl!, wsUrl: wsUrl!, headers };
}

/** Another client, answered over HTTP and over WebSocket. */
async function assertServing(server: Server, after: string): Promise<void> {
  assert.equal(server.child.process.exitCode, null, `${server.name} exited after ${after}:\n${server.child.stderr}`);
  const message = request('tools/list');
  const response = await fetch(server.httpUrl, {
    method: 'POST',
    headers: {
      ...server.headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/list',
    },
    body: JSON.stringify(message),
  });
  const text = await response.text();
  assert.equal(response.status, 200, `${server.name} HTTP after ${after}: ${text}`);
  const ws = await RawWs.open(server.wsUrl, server.headers);
  try {
    const answer = await ws.call(request('tools/list'));
    assert.ok('result' in answer, `${server.name} WebSocket after ${after}: ${JSON.stringify(answer)}`);
  } finally {
    ws.close();
  }
}

before(async () => {
  dir = await tempDir('taskvisor-request-head-');
  const tokens = join(dir.path, 'tokens.yaml');
  const added = await runNode([CLI, 'token', 'add', '--file', tokens, '--principal', 'alice']);
  assert.equal(added.code, 0, added.stderr);
  const token = added.stdout.trim();
  const authConfig = join(dir.path, 'auth.yaml');
  await writeFile(
    authConfig,
    `store:\n  kind: memory\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\nws: {}\nauth:\n  kind: token-file\n  file: tokens.yaml\n`,
  );
  const aggregatorConfig = join(dir.path, 'aggregator.yaml');
  await writeFile(
    aggregatorConfig,
    [
      'store: { kind: memory }',
      `tools: [${JSON.stringify(DEMO_TOOLS)}]`,
      'state: { file: ./state/runtime-state.json }',
      'ws: {}',
      'upstreams:',
      '  - name: broken',
      '    type: stdio',
      '    command: ./no-such-upstream-binary',
      '    backoff: { initialMs: 200, maxMs: 60000, factor: 10 }',
      '',
    ].join('\n'),
  );
  servers.push(
    ...(await Promise.all([
      startServer('token-file server', authConfig, { authorization: `Bearer ${token}` }),
      startServer('aggregator', aggregatorConfig, {}),
    ])),
  );
});

after(async () => {
  await Promise.all(servers.map((server) => server.child.kill('SIGTERM')));
  await dir?.remove();
});

describe('hostile request heads', () => {
  for (const hostile of HOSTILE_HEADS) {
    it(`${hostile.name}: 4xx on every listener, and the process keeps serving`, async () => {
      for (const server of servers) {
        for (const [listener, url] of [
          ['HTTP', server.httpUrl],
          ['WebSocket', server.wsUrl],
        ] as const) {
          const port = Number(new URL(url).port);
          const reply = await sendRaw(port, hostile.head.replaceAll('{host}', `127.0.0.1:${port}`));
          assert.ok(
            reply.status !== undefined && hostile.status.includes(reply.status),
            `${server.name} ${listener}: expected ${hostile.status.join('/')}, got ${reply.status ?? 'no answer'} ${reply.text.slice(0, 200)}`,
          );
          await assertServing(server, `${hostile.name} on ${listener}`);
        }
      }
    });
  }

  it('logs each refusal as one short escaped line, never the hostile bytes at length', () => {
    for (const server of servers) {
      const lines = server.child.stderr.split('\n');
      assert.ok(
        lines.some((line) => line.includes('refused') && line.includes('http://[/mcp')),
        `${server.name} logged no refusal naming the bad target:\n${server.child.stderr}`,
      );
      for (const line of lines) {
        assert.ok(line.length <= 200, `${server.name}: a log line of ${line.length} chars: ${line.slice(0, 120)}…`);
        assert.ok(!line.includes('a'.repeat(100)) && !line.includes('h'.repeat(100)), `${server.name}: hostile bytes at length in the log`);
        assert.ok(!/[\x00-\x08\x0b-\x1f\x7f]/.test(line), `${server.name}: a control character reached the log: ${JSON.stringify(line)}`);
      }
    }
  });
});

describe('duplicate in-flight JSON-RPC ids on one WebSocket', () => {
  it('answers the second request with -32600 and runs only the first', async () => {
    const server = servers[0]!;
    const ws = await RawWs.open(server.wsUrl, server.headers);
    try {
      // Without the tasks capability the call runs synchronously: the first is still in flight when the second arrives.
      const call = (message: string) => ({
        jsonrpc: '2.0',
        id: 'dup-1',
        method: 'tools/call',
        params: { name: 'sleep', arguments: { ms: 1_500, message }, _meta: envelope({}) },
      });
      ws.send(call('first'));
      ws.send(call('second'));
      const refused = await ws.waitFor((m) => m.id === 'dup-1' && 'error' in m);
      assert.equal((refused.error as { code: number }).code, -32600, JSON.stringify(refused));
      const answered = await ws.waitFor((m) => m.id === 'dup-1' && 'result' in m);
      assert.match(JSON.stringify(answered.result), /first/);
      // Once answered, the id is free again.
      ws.send({ ...call('third'), params: { ...call('third').params, arguments: { ms: 0, message: 'third' } } });
      await ws.waitFor((m) => m.id === 'dup-1' && JSON.stringify(m).includes('third'));
      assert.equal(ws.received.filter((m) => m.id === 'dup-1').length, 3, JSON.stringify(ws.received));
    } finally {
      ws.close();
    }
  });
});
