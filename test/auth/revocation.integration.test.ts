/**
 * Issue 12.4: revoked or expired credentials end that principal's open
 * sessions. Through real sockets:
 * - `taskvisor serve` with a token file: alice's token removed + SIGHUP →
 *   her WebSocket closes 1008 "credentials revoked", her HTTP listen stream
 *   ends with an error naming the reason; bob's WebSocket keeps working.
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
import { openHttpListen, RawWs, request, type Json } from '../support/rawWire.js';

const STARTUP_TIMEOUT_MS = 45_000;
const ALICE = 'alice-token-0123456789abcdef';
const BOB = 'bob-token-0123456789abcdefgh';
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

describe('revocation (issue 12.4)', () => {
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
