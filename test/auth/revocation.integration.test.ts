/**
 * Revoked or expired credentials end that principal's open
 * sessions. Through real sockets:
 * - `taskvisor serve` with a token file: alice's token removed + SIGHUP →
 *   her WebSocket closes 1008 "credentials revoked", her HTTP listen stream
 *   ends with an error naming the reason; bob's WebSocket keeps working.
 * - an operator token removed + SIGHUP → its open `/ops/api/events` stream
 *   gets an `end` event and closes.
 * - a JWT that expires while its WebSocket and its HTTP listen stream are
 *   open ends both with "credentials expired".
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportSPKI } from 'jose';
import { jwtVerifier } from '../../src/auth/jwt.js';
import { createRuntime, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, listenWebSocket } from '../../src/transports/index.js';
import { startIssuer, type Issuer } from '../support/authFixtures.js';
import { CLI, DEMO_TOOLS, spawnNode, tempDir } from '../support/processes.js';
import { openHttpListen, post, RawWs, request, type Json } from '../support/rawWire.js';

const STARTUP_TIMEOUT_MS = 45_000;
const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdefgh';
const OPERATOR = 'ops-token-0123456789abcdefgh';
const AUDIENCE = 'http://127.0.0.1/mcp';

let dir: Awaited<ReturnType<typeof tempDir>>;
before(async () => (dir = await tempDir('taskvisor-revocation-')));
after(async () => dir?.remove());

const tokenFile = (entries: Array<[string, string]>) =>
  `tokens:\n${entries.map(([principal, token]) => `  - principal: ${principal}\n    token: ${token}\n`).join('')}`;

/** The error frame that ends a listen stream, or undefined when it ends without one. */
async function listenEnd(rest: AsyncGenerator<Json[]>): Promise<Json | undefined> {
  for await (const messages of rest) {
    const error = messages.find((message) => 'error' in message);
    if (error) return error;
  }
  return undefined;
}

describe('revocation', () => {
  it('a token removed from the token file + SIGHUP ends that principal’s WebSocket and listen stream, not others’', async () => {
    const tokens = join(dir.path, 'tokens.yaml');
    await writeFile(
      tokens,
      tokenFile([
        ['alice', ALICE],
        ['bob', BOB],
      ]),
      { mode: 0o600 },
    );
    const config = join(dir.path, 'serve.yaml');
    await writeFile(
      config,
      `store:\n  kind: memory\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\nws: {}\nauth:\n  kind: token-file\n  file: tokens.yaml\n`,
    );
    const child = spawnNode([CLI, 'serve', '--config', config, '--http', '127.0.0.1:0', '--ws', '127.0.0.1:0'], { cwd: dir.path });
    try {
      const [, url] = await child.waitForOutput(/serving MCP over Streamable HTTP at (\S+)\n/, { timeoutMs: STARTUP_TIMEOUT_MS });
      const [, wsUrl] = await child.waitForOutput(/serving MCP over WebSocket at (\S+)\n/, { timeoutMs: STARTUP_TIMEOUT_MS });
      const alice = await RawWs.open(wsUrl!, { authorization: `Bearer ${ALICE}` });
      const bob = await RawWs.open(wsUrl!, { authorization: `Bearer ${BOB}` });
      assert.ok('result' in (await alice.call(request('tools/list'))));
      const listen = await openHttpListen(url!, { toolsListChanged: true }, { authorization: `Bearer ${ALICE}` });
      assert.equal(listen.status, 200);
      try {
        await writeFile(tokens, tokenFile([['bob', BOB]]), { mode: 0o600 });
        child.process.kill('SIGHUP');
        const closed = await alice.closed;
        assert.deepEqual(closed, { code: 1008, reason: 'credentials revoked' });
        const ended = await listenEnd(listen.rest!);
        assert.match(JSON.stringify(ended), /Unauthorized: subscription closed: credentials revoked/);
        assert.ok('result' in (await bob.call(request('tools/list'))), 'bob is untouched');
        await child.waitForOutput(/ending a session of alice: credentials revoked/);
        assert.ok(!child.stderr.includes(ALICE), 'the token never reaches the log');
      } finally {
        listen.close();
        bob.close();
      }
    } finally {
      await child.kill('SIGTERM');
    }
  });

  it(
    'a revoked operator token ends its open /ops/api/events stream; other principals’ task events stop reaching it',
    { timeout: 90_000 },
    async () => {
      const tokens = join(dir.path, 'ops-tokens.yaml');
      const operatorEntry = `  - principal: ops\n    token: ${OPERATOR}\n    scopes: [taskvisor:operator]\n`;
      await writeFile(tokens, tokenFile([['alice', ALICE]]) + operatorEntry, { mode: 0o600 });
      const config = join(dir.path, 'ops-serve.yaml');
      await writeFile(
        config,
        `store:\n  kind: memory\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\nauth:\n  kind: token-file\n  file: ops-tokens.yaml\n`,
      );
      const child = spawnNode([CLI, 'serve', '--config', config, '--http', '127.0.0.1:0', '--ui'], { cwd: dir.path });
      try {
        const [, url] = await child.waitForOutput(/serving MCP over Streamable HTTP at (\S+)\n/, { timeoutMs: STARTUP_TIMEOUT_MS });
        const events = new URL('/ops/api/events', url);
        const asOperator = { authorization: `Bearer ${OPERATOR}` };
        const response = await fetch(events, { headers: asOperator });
        assert.equal(response.status, 200);
        const reader = response.body!.getReader();
        const decoder = new TextDecoder();
        let seen = '';
        // The stream is live: its first overview event arrives.
        while (!seen.includes('event: overview')) seen += decoder.decode((await reader.read()).value);
        await writeFile(tokens, tokenFile([['alice', ALICE]]), { mode: 0o600 });
        child.process.kill('SIGHUP');
        let after = '';
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          after += decoder.decode(value);
        }
        assert.match(after, /event: end\ndata: \{"reason":"credentials revoked"\}/);
        await child.waitForOutput(/ending a session of ops: credentials revoked/);
        // Alice's task happens after the end: the closed stream cannot carry it, and the token opens no new one.
        const alice = await post(url!, request('tools/call', { name: 'echo', arguments: { text: 'private' } }), {
          authorization: `Bearer ${ALICE}`,
        });
        assert.ok(alice.message && 'result' in alice.message);
        assert.equal((await fetch(events, { headers: asOperator })).status, 401);
        assert.ok(!child.stderr.includes(OPERATOR), 'the token never reaches the log');
      } finally {
        await child.kill('SIGTERM');
      }
    },
  );

  describe('a JWT expiring mid-connection', () => {
    let runtime: TaskvisorRuntime;
    let issuer: Issuer;
    before(async () => {
      runtime = createRuntime({ store: { kind: 'memory' } });
      await runtime.start();
      issuer = await startIssuer(AUDIENCE);
    });
    after(async () => {
      await runtime?.close();
      await issuer?.close();
    });

    it('ends its WebSocket (1008 "credentials expired") and its HTTP listen stream', async () => {
      const pem = join(dir.path, 'issuer.pem');
      await writeFile(pem, await exportSPKI(issuer.publicKey));
      const verifier = await jwtVerifier({ keyFile: pem, issuer: issuer.issuer, audience: AUDIENCE, clockToleranceSec: 0 });
      const ws = await listenWebSocket(runtime, { port: 0, auth: { verifier } });
      const http = await listenHttp(runtime, { port: 0, auth: { verifier } });
      try {
        const short = await issuer.sign({ sub: 'carol', exp: Math.floor(Date.now() / 1000) + 3 });
        const long = await issuer.sign({ sub: 'dave' });
        const carol = await RawWs.open(ws.url, { authorization: `Bearer ${short}` });
        const dave = await RawWs.open(ws.url, { authorization: `Bearer ${long}` });
        const listen = await openHttpListen(http.url, { toolsListChanged: true }, { authorization: `Bearer ${short}` });
        assert.equal(listen.status, 200);
        assert.ok('result' in (await carol.call(request('tools/list'))));
        assert.deepEqual(await carol.closed, { code: 1008, reason: 'credentials expired' });
        assert.match(JSON.stringify(await listenEnd(listen.rest!)), /credentials expired/);
        assert.ok('result' in (await dave.call(request('tools/list'))), 'an unexpired token keeps its connection');
        dave.close();
        listen.close();
      } finally {
        await ws.close();
        await http.close();
      }
    });
  });
});
