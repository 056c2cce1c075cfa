/**
 * Bearer authentication through the public API (`listenHttp` /
 * `listenWebSocket` with `auth`): token-file and JWT verifiers, the 401/403
 * challenges of the MCP authorization spec (RFC 6750 + RFC 9728
 * `resource_metadata`), the protected-resource metadata document, JWT claim
 * checks against a real JWKS served on 127.0.0.1.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportSPKI, exportPKCS8, UnsecuredJWT } from 'jose';
import { createHttpEntry, listenHttp, listenWebSocket } from '../../src/transports/index.js';
import { jwtVerifier, JwtConfigError, tokenFileVerifier, type BearerAuthOptions } from '../../src/auth/index.js';
import { type TaskvisorRuntime } from '../../src/index.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { postJsonRpc, type RawHttpReply } from '../support/httpRaw.js';
import { startIssuer, UNKNOWN_TOKEN, writeTokenFile, type Issuer } from '../support/authFixtures.js';
import { tempDir } from '../support/processes.js';
import { error_, taskOps, unknownTaskId } from '../support/taskOps.js';
import { WebSocketClientTransport, WebSocketUpgradeError } from '../../src/client/index.js';
import { startE2eRuntime } from '../e2e/fixtures/runtime.js';

const ALICE = 'alice-token-0123456789abcdef';
const AUDIENCE = 'https://taskvisor.test/mcp';

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const getTask = (url: string, headers: Record<string, string>) => postJsonRpc(url, 'tasks/get', { taskId: unknownTaskId() }, { headers });
/** An authenticated request reaches the task layer: an unknown id is -32602 on HTTP 200. */
const assertAdmitted = (reply: RawHttpReply, what: string) => {
  assert.equal(reply.status, 200, `${what}: ${reply.text}`);
  assert.equal(reply.message?.error?.code, -32602, `${what}: ${reply.text}`);
};
const challengeOf = (reply: RawHttpReply, headers: Headers) => ({ status: reply.status, challenge: headers.get('www-authenticate') });

async function refusedUpgrade(target: string, headers: Record<string, string> = {}): Promise<WebSocketUpgradeError> {
  const error = await new WebSocketClientTransport(target, { headers }).start().then(
    () => assert.fail('the upgrade was accepted'),
    (error: unknown) => error,
  );
  assert.ok(error instanceof WebSocketUpgradeError, String(error));
  return error;
}

describe('bearer auth: token file on HTTP and WebSocket', () => {
  let runtime: TaskvisorRuntime;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let httpUrl = '';
  let wsUrl = '';
  const clients: ConnectedClient[] = [];

  before(async () => {
    dir = await tempDir('taskvisor-bearer-');
    runtime = await startE2eRuntime();
    const verifier = await tokenFileVerifier(await writeTokenFile(join(dir.path, 'tokens.yaml'), [{ principal: 'alice', token: ALICE }]));
    const auth: BearerAuthOptions = { verifier, resourceName: 'taskvisor test' };
    httpUrl = (await listenHttp(runtime, { port: 0, auth })).url;
    wsUrl = (await listenWebSocket(runtime, { port: 0, auth })).url;
  });
  after(async () => {
    for (const client of clients) await client.close();
    await runtime.close();
    await dir.remove();
  });

  it('no Authorization header: 401, WWW-Authenticate: Bearer resource_metadata="<metadata URL>" (RFC 6750 §3.1: no error code), no-store', async () => {
    const response = await fetch(httpUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(response.status, 401);
    const origin = new URL(httpUrl).origin;
    assert.equal(response.headers.get('www-authenticate'), `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await response.json(), {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Unauthorized: this endpoint requires a bearer token' },
    });
  });

  it('an unknown token is 401 invalid_token; a malformed header and a query-string token are 401 invalid_request', async () => {
    const cases: Array<[Record<string, string>, string, RegExp]> = [
      [
        bearer(UNKNOWN_TOKEN),
        httpUrl,
        /^Bearer error="invalid_token", error_description="The access token is not valid", resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"$/,
      ],
      [
        { authorization: `Basic ${Buffer.from(`alice:${ALICE}`).toString('base64')}` },
        httpUrl,
        /^Bearer error="invalid_request", error_description="Expected Authorization: Bearer <token>"/,
      ],
      [{ authorization: 'Bearer' }, httpUrl, /error="invalid_request"/],
      [{ authorization: `Bearer ${ALICE} extra` }, httpUrl, /error="invalid_request"/],
      [
        {},
        `${httpUrl}?access_token=${ALICE}`,
        /^Bearer error="invalid_request", error_description="Access tokens are accepted only in the Authorization header"/,
      ],
    ];
    for (const [headers, target, expected] of cases) {
      const response = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{}' });
      assert.equal(response.status, 401, JSON.stringify(headers));
      assert.match(response.headers.get('www-authenticate') ?? '', expected);
      const text = await response.text();
      assert.ok(!text.includes(ALICE), 'the token is never echoed');
    }
  });

  it('the resource_metadata URL serves the RFC 9728 document (no CORS wildcard); other methods get 405', async () => {
    const response = await fetch(httpUrl, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(response.headers.get('www-authenticate') ?? '')?.[1];
    assert.ok(metadataUrl);
    const document = await fetch(metadataUrl);
    assert.equal(document.status, 200);
    assert.equal(document.headers.get('access-control-allow-origin'), null);
    assert.deepEqual(await document.json(), { resource: httpUrl, bearer_methods_supported: ['header'], resource_name: 'taskvisor test' });
    const post = await fetch(metadataUrl, { method: 'POST', body: '{}' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
    // Same document on the WebSocket port (its own resource URL).
    const wsMetadata = await fetch(`${new URL(wsUrl).origin.replace('ws:', 'http:')}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(wsMetadata.status, 200);
    assert.equal(((await wsMetadata.json()) as { resource: string }).resource, wsUrl.replace('ws:', 'http:'));
  });

  it('a valid token reaches the task layer over HTTP and WebSocket, as its principal', async () => {
    assertAdmitted(await getTask(httpUrl, bearer(ALICE)), 'http');
    assertAdmitted(await getTask(httpUrl, { authorization: `bearer   ${ALICE}` }), 'scheme is case-insensitive (RFC 7235)');
    const overHttp = await connect({ kind: 'http', url: httpUrl, headers: bearer(ALICE) });
    const overWs = await connect({ kind: 'ws', url: wsUrl, headers: bearer(ALICE) });
    clients.push(overHttp, overWs);
    const created = await taskOps(() => overHttp).createTask('blocking');
    // Same principal on the other transport sees the task.
    assert.equal((await taskOps(() => overWs).task(created.taskId)).status, 'working');
    await taskOps(() => overWs).cancel(created.taskId);
  });

  it('WebSocket upgrades without a valid token are refused with 401 and the same challenge', async () => {
    const missing = await refusedUpgrade(wsUrl);
    assert.equal(missing.status, 401);
    assert.match(
      String(missing.headers['www-authenticate']),
      /^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"$/,
    );
    const wrong = await refusedUpgrade(wsUrl, bearer(UNKNOWN_TOKEN));
    assert.equal(wrong.status, 401);
    assert.match(String(wrong.headers['www-authenticate']), /error="invalid_token"/);
  });

  it('a mounted entry (createHttpEntry, web-standard fetch) does the same: 401 challenge, metadata document, admitted token', async () => {
    const verifier = await tokenFileVerifier(join(dir.path, 'tokens.yaml'));
    const entry = createHttpEntry(runtime, { auth: { verifier, resource: 'https://mcp.example.com/mcp' } });
    try {
      const refused = await entry.fetch(
        new Request('http://internal:8080/mcp', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }),
      );
      assert.equal(refused.status, 401);
      assert.equal(
        refused.headers.get('www-authenticate'),
        'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"',
      );
      const document = await entry.fetch(new Request('http://internal:8080/.well-known/oauth-protected-resource/mcp'));
      // No resourceName option: the runtime's name (createRuntime({ name })).
      assert.deepEqual(await document.json(), {
        resource: 'https://mcp.example.com/mcp',
        bearer_methods_supported: ['header'],
        resource_name: 'taskvisor-e2e',
      });
      const elsewhere = await entry.fetch(new Request('http://internal:8080/.well-known/oauth-protected-resource/other'));
      assert.equal(elsewhere.status, 404);
    } finally {
      await entry.close();
    }
  });

  it('auth and authenticate together are a TypeError', async () => {
    const verifier = await tokenFileVerifier(join(dir.path, 'tokens.yaml'));
    await assert.rejects(listenHttp(runtime, { port: 0, auth: { verifier }, authenticate: () => ({ id: 'x' }) }), TypeError);
    await assert.rejects(listenWebSocket(runtime, { port: 0, auth: { verifier }, authenticate: () => ({ id: 'x' }) }), TypeError);
  });
});

describe('bearer auth: JWT against a real JWKS on 127.0.0.1', () => {
  let runtime: TaskvisorRuntime;
  let issuer: Issuer;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let url = '';
  let scopedUrl = '';
  let emailUrl = '';

  before(async () => {
    dir = await tempDir('taskvisor-jwt-');
    runtime = await startE2eRuntime();
    issuer = await startIssuer(AUDIENCE);
    const verifier = await jwtVerifier({ jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: AUDIENCE, clockToleranceSec: 30 });
    url = (await listenHttp(runtime, { port: 0, auth: { verifier, authorizationServers: [issuer.issuer], resource: AUDIENCE } })).url;
    scopedUrl = (await listenHttp(runtime, { port: 0, auth: { verifier, requiredScopes: ['tasks:write'] } })).url;
    const byEmail = await jwtVerifier({
      jwksUrl: issuer.jwksUrl,
      issuer: issuer.issuer,
      audience: [AUDIENCE, 'other'],
      principalClaim: 'email',
    });
    emailUrl = (await listenHttp(runtime, { port: 0, auth: { verifier: byEmail } })).url;
  });
  after(async () => {
    await runtime.close();
    await issuer.close();
    await dir.remove();
  });

  it('a valid token is admitted; the JWKS is fetched once and cached', async () => {
    assertAdmitted(await getTask(url, bearer(await issuer.sign({ sub: 'alice' }))), 'valid');
    assertAdmitted(await getTask(url, bearer(await issuer.sign({ sub: 'bob' }))), 'valid');
    assert.equal(issuer.fetches, 1);
  });

  it('the metadata document names the configured resource and the issuer as authorization server', async () => {
    const reply = await fetch(url, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    const challenge = reply.headers.get('www-authenticate') ?? '';
    // With a configured resource, the metadata path follows the resource's path (RFC 9728 §3.1), on this server.
    assert.match(challenge, /resource_metadata="https:\/\/taskvisor\.test\/\.well-known\/oauth-protected-resource\/mcp"/);
    const document = await fetch(new URL('/.well-known/oauth-protected-resource/mcp', url));
    assert.deepEqual(await document.json(), {
      resource: AUDIENCE,
      authorization_servers: [issuer.issuer],
      bearer_methods_supported: ['header'],
      resource_name: 'taskvisor-e2e',
    });
  });

  const rejections: Array<[string, (issuer: Issuer) => Promise<string>, RegExp]> = [
    ['another audience', (i) => i.sign({ sub: 'alice' }, { audience: 'https://elsewhere.test/mcp' }), /the aud claim check/],
    ['another issuer', (i) => i.sign({ sub: 'alice' }, { issuer: 'https://evil.test/' }), /the iss claim check/],
    ['expired beyond the clock tolerance', (i) => i.sign({ sub: 'alice', exp: Math.floor(Date.now() / 1000) - 120 }), /has expired/],
    [
      'not yet valid beyond the tolerance',
      (i) => i.sign({ sub: 'alice', nbf: Math.floor(Date.now() / 1000) + 120 }),
      /the nbf claim check/,
    ],
    ['no exp', async (i) => (await i.sign({ sub: 'alice' }, { expiresIn: false })).toString(), /the exp claim check \(missing\)/],
    [
      'signed by a key the JWKS does not publish (same kid)',
      (i) => i.sign({ sub: 'alice' }, { key: i.foreignKey }),
      /signature is not valid/,
    ],
    ['an unknown kid', (i) => i.sign({ sub: 'alice' }, { key: i.foreignKey, kid: 'key-2' }), /No key of the issuer matches/],
    [
      'alg none',
      async () => new UnsecuredJWT({ sub: 'alice' }).setIssuer('x').setAudience(AUDIENCE).setExpirationTime('5m').encode(),
      /not a valid JWT|algorithm/,
    ],
    ['no sub', (i) => i.sign({}), /no sub claim/],
    ['garbage', async () => 'not.a.jwt', /not a valid JWT/],
  ];
  for (const [what, make, description] of rejections) {
    it(`a token ${what} is 401 invalid_token with a description`, async () => {
      const response = await fetch(url, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json', ...bearer(await make(issuer)) },
      });
      assert.equal(response.status, 401);
      const challenge = response.headers.get('www-authenticate') ?? '';
      assert.match(challenge, /^Bearer error="invalid_token", error_description="[^"]+", resource_metadata="/);
      assert.match(challenge, description);
    });
  }

  it('clock tolerance: a token that expired 10 s ago still passes with 30 s tolerance', async () => {
    assertAdmitted(
      await getTask(url, bearer(await issuer.sign({ sub: 'alice', exp: Math.floor(Date.now() / 1000) - 10 }))),
      'within tolerance',
    );
  });

  it('requiredScopes: a token without them is 403 insufficient_scope with the scope named; with them it passes', async () => {
    const response = await fetch(scopedUrl, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json', ...bearer(await issuer.sign({ sub: 'alice', scope: 'tasks:read' })) },
    });
    assert.equal(response.status, 403);
    assert.match(
      response.headers.get('www-authenticate') ?? '',
      /^Bearer error="insufficient_scope", error_description="The access token lacks the scope tasks:write", scope="tasks:write", resource_metadata="/,
    );
    assertAdmitted(await getTask(scopedUrl, bearer(await issuer.sign({ sub: 'alice', scope: 'tasks:read tasks:write' }))), 'scope claim');
    assertAdmitted(await getTask(scopedUrl, bearer(await issuer.sign({ sub: 'alice', scp: ['tasks:write'] }))), 'scp claim');
    const missing = await fetch(scopedUrl, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    assert.match(missing.headers.get('www-authenticate') ?? '', /^Bearer scope="tasks:write", resource_metadata="/);
  });

  it('principalClaim: the principal is the configured claim, whatever the sub', async () => {
    const first = await connect({
      kind: 'http',
      url: emailUrl,
      headers: bearer(await issuer.sign({ sub: 'device-1', email: 'alice@example.com' })),
    });
    const second = await connect({
      kind: 'http',
      url: emailUrl,
      headers: bearer(await issuer.sign({ sub: 'device-2', email: 'alice@example.com' })),
    });
    const other = await connect({
      kind: 'http',
      url: emailUrl,
      headers: bearer(await issuer.sign({ sub: 'device-1', email: 'bob@example.com' })),
    });
    try {
      const created = await taskOps(() => first).createTask('blocking');
      assert.equal((await taskOps(() => second).task(created.taskId)).status, 'working');
      error_(await taskOps(() => other).get(created.taskId), -32602);
      await taskOps(() => first).cancel(created.taskId);
    } finally {
      await Promise.all([first.close(), second.close(), other.close()]);
    }
    const noEmail = await fetch(emailUrl, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json', ...bearer(await issuer.sign({ sub: 'x' })) },
    });
    assert.equal(noEmail.status, 401);
    assert.match(noEmail.headers.get('www-authenticate') ?? '', /no email claim naming the caller/);
  });

  it('an unreachable JWKS is 503 (the server cannot decide), not 401', async () => {
    const gone = await startIssuer(AUDIENCE);
    await gone.close();
    const verifier = await jwtVerifier({ jwksUrl: gone.jwksUrl, issuer: gone.issuer, audience: AUDIENCE, jwksTimeoutMs: 1000 });
    const listener = await listenHttp(runtime, { port: 0, auth: { verifier } });
    const response = await fetch(listener.url, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json', ...bearer(await gone.sign({ sub: 'alice' })) },
    });
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('retry-after'), '5');
    await listener.close();
  });

  it('a key file (PEM public key) works; a private key, garbage and an http JWKS URL off loopback are refused', async () => {
    const pem = join(dir.path, 'public.pem');
    await writeFile(pem, await exportSPKI(issuer.publicKey));
    const verifier = await jwtVerifier({ keyFile: pem, issuer: issuer.issuer, audience: AUDIENCE });
    assert.deepEqual((await verifier.verify(await issuer.sign({ sub: 'alice' }))).principal, { id: 'alice' });
    const jwks = join(dir.path, 'jwks.json');
    await writeFile(jwks, JSON.stringify(await (await fetch(issuer.jwksUrl)).json()));
    const fromJwks = await jwtVerifier({ keyFile: jwks, issuer: issuer.issuer, audience: AUDIENCE });
    assert.deepEqual((await fromJwks.verify(await issuer.sign({ sub: 'bob' }))).principal, { id: 'bob' });

    const { generateKeyPair } = await import('jose');
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const privatePem = join(dir.path, 'private.pem');
    await writeFile(privatePem, await exportPKCS8(privateKey), { mode: 0o600 });
    await assert.rejects(jwtVerifier({ keyFile: privatePem, issuer: 'i', audience: 'a' }), /holds a private key; give the public key only/);
    const garbage = join(dir.path, 'garbage.pem');
    await writeFile(garbage, 'hello');
    await assert.rejects(jwtVerifier({ keyFile: garbage, issuer: 'i', audience: 'a' }), JwtConfigError);
    await assert.rejects(jwtVerifier({ jwksUrl: 'http://idp.example.com/jwks', issuer: 'i', audience: 'a' }), /must use https/);
    await assert.rejects(jwtVerifier({ issuer: 'i', audience: 'a' }), /exactly one of jwksUrl and keyFile/);
  });
});
