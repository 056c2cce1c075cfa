/**
 * Identity forwarding through the aggregator (docs/aggregator.md
 * "Identity"), all over real HTTP on 127.0.0.1: callers authenticate to
 * taskvisor with JWTs of a real issuer (JWKS served locally), and each
 * upstream call goes over that principal's own connection:
 *
 * - passthrough: a plain v2 SDK upstream that records the Authorization
 *   header of every call sees each caller's own token, never the service
 *   token of the catalog connection, and never another caller's;
 * - tokenExchange: a real RFC 8693 endpoint exchanges each caller's token
 *   for the upstream's audience, once per principal while it is valid;
 * - a caller without a token it can forward, or one the exchange refuses,
 *   gets a stable error naming no URL.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createRuntime, silentLogger, stderrLogger, type TaskvisorRuntime } from '../../src/index.js';
import { jwtVerifier } from '../../src/auth/index.js';
import { listenHttp } from '../../src/transports/index.js';
import type { UpstreamSpec } from '../../src/upstreams/UpstreamSpec.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { startIssuer, type Issuer } from '../support/authFixtures.js';
import { callTool, errorOf, resultOf, tempDir } from '../support/processes.js';
import {
  startRecordingUpstream,
  startTokenExchange,
  type RecordingUpstream,
  type TokenExchangeServer,
} from './fixtures/identityServers.js';

const AUDIENCE = 'https://taskvisor.test/mcp';
const SERVICE_TOKEN = 'service-token-for-the-catalog';
const logger = process.env.TASKVISOR_TEST_LOG ? stderrLogger() : silentLogger;

const textOf = (outcome: Awaited<ReturnType<typeof callTool>>) =>
  ((resultOf(outcome).content as Array<{ text: string }>)[0] ?? { text: '' }).text;

interface Aggregator {
  runtime: TaskvisorRuntime;
  /** Bearer-authenticated entry. */
  url: string;
  /** An entry whose principals carry no token (a custom authenticate hook): `x-user` names them. */
  hookUrl: string;
}

async function startAggregator(issuer: Issuer, dir: string, upstream: UpstreamSpec): Promise<Aggregator> {
  const runtime = createRuntime({ store: { kind: 'memory' }, stateFile: join(dir, 'runtime-state.json'), upstreams: [upstream], logger });
  await runtime.start();
  await runtime.upstreams!.waitFor(upstream.name, (status) => status.state === 'ready');
  const verifier = await jwtVerifier({ jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: AUDIENCE });
  const url = (await listenHttp(runtime, { port: 0, auth: { verifier } })).url;
  const hookUrl = (await listenHttp(runtime, { port: 0, authenticate: (request) => ({ id: request.headers.get('x-user') ?? 'carol' }) }))
    .url;
  return { runtime, url, hookUrl };
}

describe('identity passthrough: each caller acts upstream with its own token', () => {
  let issuer: Issuer;
  let upstream: RecordingUpstream;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let aggregator: Aggregator;
  const tokens: Record<string, string> = {};
  /** The tokens the upstream accepts, and whom each speaks for. */
  const subjects = new Map<string, string>();
  const clients: ConnectedClient[] = [];

  before(async () => {
    dir = await tempDir('taskvisor-identity-');
    issuer = await startIssuer(AUDIENCE);
    for (const who of ['alice', 'bob']) tokens[who] = await issuer.sign({ sub: who });
    subjects.set(SERVICE_TOKEN, 'taskvisor-service');
    for (const [who, token] of Object.entries(tokens)) subjects.set(token, who);
    upstream = await startRecordingUpstream((token) => subjects.get(token) ?? null);
    aggregator = await startAggregator(issuer, dir.path, {
      name: 'rec',
      type: 'streamable-http',
      url: upstream.url,
      headers: { authorization: `Bearer ${SERVICE_TOKEN}` },
      identity: { mode: 'passthrough' },
      pingIntervalMs: 0,
    });
  });
  after(async () => {
    for (const client of clients) await client.close();
    await aggregator?.runtime.close();
    await upstream?.close();
    await issuer?.close();
    await dir?.remove();
  });

  const clientOf = async (who: string) => {
    const client = await connect({ kind: 'http', url: aggregator.url, headers: { authorization: `Bearer ${tokens[who]}` } });
    clients.push(client);
    return client;
  };

  it('two principals call the same upstream tool: the upstream sees each one, with its own token', async () => {
    const alice = await clientOf('alice');
    const bob = await clientOf('bob');
    const before = upstream.calls.length;
    const answers = await Promise.all([callTool(alice, 'x_rec_whoami'), callTool(bob, 'x_rec_whoami'), callTool(alice, 'x_rec_whoami')]);
    assert.deepEqual(answers.map(textOf), ['alice', 'bob', 'alice']);
    const seen = upstream.calls.slice(before).map((call) => call.authorization);
    assert.equal(seen.length, 3);
    assert.equal(seen.filter((header) => header === `Bearer ${tokens.alice}`).length, 2);
    assert.equal(seen.filter((header) => header === `Bearer ${tokens.bob}`).length, 1);
    assert.ok(!seen.includes(`Bearer ${SERVICE_TOKEN}`), 'no call went out with the catalog connection’s static token');
  });

  it('a caller whose token is not held (no bearer auth on its entry) gets a stable error, and nothing reaches the upstream', async () => {
    const carol = await connect({ kind: 'http', url: aggregator.hookUrl, headers: { 'x-user': 'carol' } });
    clients.push(carol);
    const before = upstream.calls.length;
    const error = errorOf(await callTool(carol, 'x_rec_whoami'));
    assert.equal(error.code, -32600);
    assert.match(error.message, /^Upstream rec acts as the caller and needs a valid bearer token of yours/);
    assert.doesNotMatch(error.message, /http|127\.0\.0\.1/);
    assert.deepEqual(error.data, { upstream: 'rec', authorizationRequired: true });
    assert.equal(upstream.calls.length, before);
  });

  it('a caller the upstream itself refuses (401) gets a stable error naming no URL; the upstream ran nothing', async () => {
    tokens.dave = await issuer.sign({ sub: 'dave' });
    const dave = await clientOf('dave');
    const before = upstream.calls.length;
    const error = errorOf(await callTool(dave, 'x_rec_whoami'));
    assert.equal(error.code, -32600);
    assert.equal(error.message, 'Upstream rec acts as the caller and did not accept your credentials; ask its administrator for access');
    assert.deepEqual(error.data, { upstream: 'rec', authorizationRequired: true });
    assert.equal(upstream.calls.length, before);
  });

  it('a forgotten (revoked) token is never sent again; the token of the principal’s next request is', async () => {
    const credentials = aggregator.runtime.callerCredentials!;
    assert.ok(credentials.current('alice'), 'alice’s token is held after her calls');
    credentials.forget('alice');
    assert.equal(credentials.current('alice'), undefined);
    const renewed = await issuer.sign({ sub: 'alice', jti: 'renewed' });
    subjects.set(renewed, 'alice');
    const alice = await connect({ kind: 'http', url: aggregator.url, headers: { authorization: `Bearer ${renewed}` } });
    clients.push(alice);
    const before = upstream.calls.length;
    assert.equal(textOf(await callTool(alice, 'x_rec_whoami')), 'alice');
    assert.deepEqual(
      upstream.calls.slice(before).map((call) => call.authorization),
      [`Bearer ${renewed}`],
    );
  });
});

describe('identity tokenExchange: each caller’s token is exchanged (RFC 8693) for the upstream’s audience', () => {
  let issuer: Issuer;
  let upstream: RecordingUpstream;
  let exchange: TokenExchangeServer;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let aggregator: Aggregator;
  const tokens: Record<string, string> = {};
  const clients: ConnectedClient[] = [];

  before(async () => {
    dir = await tempDir('taskvisor-identity-xchg-');
    issuer = await startIssuer(AUDIENCE);
    for (const who of ['alice', 'bob', 'mallory']) tokens[who] = await issuer.sign({ sub: who });
    exchange = await startTokenExchange({
      clientId: 'taskvisor',
      clientSecret: 's3cret:with/odd chars',
      issuerKey: issuer.publicKey,
      issuer: issuer.issuer,
      refuse: ['mallory'],
    });
    // The upstream accepts only tokens issued for its audience (and the catalog's service token).
    upstream = await startRecordingUpstream((token) => {
      if (token === SERVICE_TOKEN) return 'taskvisor-service';
      const match = /^xchg\.([a-z]+)\.rec-api\.\d+$/.exec(token);
      return match ? match[1]! : null;
    });
    aggregator = await startAggregator(issuer, dir.path, {
      name: 'rec',
      type: 'streamable-http',
      url: upstream.url,
      headers: { authorization: `Bearer ${SERVICE_TOKEN}` },
      identity: {
        mode: 'tokenExchange',
        tokenEndpoint: exchange.tokenEndpoint,
        audience: 'rec-api',
        clientId: 'taskvisor',
        clientSecret: 's3cret:with/odd chars',
      },
      pingIntervalMs: 0,
    });
  });
  after(async () => {
    for (const client of clients) await client.close();
    await aggregator?.runtime.close();
    await upstream?.close();
    await exchange?.close();
    await issuer?.close();
    await dir?.remove();
  });

  const clientOf = async (who: string) => {
    const client = await connect({ kind: 'http', url: aggregator.url, headers: { authorization: `Bearer ${tokens[who]}` } });
    clients.push(client);
    return client;
  };

  it('alice and bob act upstream with tokens exchanged for their own subjects, exchanged once each while valid', async () => {
    const alice = await clientOf('alice');
    const bob = await clientOf('bob');
    assert.equal(textOf(await callTool(alice, 'x_rec_whoami')), 'alice');
    assert.equal(textOf(await callTool(bob, 'x_rec_whoami')), 'bob');
    assert.equal(textOf(await callTool(alice, 'x_rec_whoami')), 'alice');
    assert.deepEqual(
      upstream.calls.map((call) => call.authorization),
      [
        `Bearer ${exchange.tokenFor('alice', 'rec-api')}`,
        `Bearer ${exchange.tokenFor('bob', 'rec-api')}`,
        `Bearer ${exchange.tokenFor('alice', 'rec-api')}`,
      ],
    );
    const granted = exchange.requests.filter((request) => request.subjectSub !== 'mallory');
    assert.deepEqual(
      granted.map((request) => request.subjectSub),
      ['alice', 'bob'],
      'one exchange per principal: the exchanged token is cached until it expires',
    );
    for (const request of granted) {
      assert.equal(request.grantType, 'urn:ietf:params:oauth:grant-type:token-exchange');
      assert.equal(request.subjectTokenType, 'urn:ietf:params:oauth:token-type:access_token');
      assert.equal(request.audience, 'rec-api');
      // RFC 6749 §2.3.1: the form-encoded id and secret, base64 in Basic.
      assert.equal(request.clientAuthorization, `Basic ${Buffer.from('taskvisor:s3cret%3Awith%2Fodd+chars').toString('base64')}`);
    }
  });

  it('the endpoint refusing taskvisor’s own client (a wrong secret) is not the caller’s fault: retryable, details only in the log', async () => {
    const misconfigured = await startAggregator(issuer, join(dir.path, 'wrong-secret'), {
      name: 'rec',
      type: 'streamable-http',
      url: upstream.url,
      headers: { authorization: `Bearer ${SERVICE_TOKEN}` },
      identity: {
        mode: 'tokenExchange',
        tokenEndpoint: exchange.tokenEndpoint,
        audience: 'rec-api',
        clientId: 'taskvisor',
        clientSecret: 'wrong',
      },
      pingIntervalMs: 0,
    });
    try {
      const alice = await connect({ kind: 'http', url: misconfigured.url, headers: { authorization: `Bearer ${tokens.alice}` } });
      clients.push(alice);
      const error = errorOf(await callTool(alice, 'x_rec_whoami'));
      assert.equal(error.code, -32603);
      assert.equal(error.message, 'Upstream rec: the identity service that issues its tokens is unavailable; retry later');
      assert.deepEqual(error.data, { upstream: 'rec', retryable: true });
    } finally {
      await misconfigured.runtime.close();
    }
  });

  it('a caller the exchange refuses gets a stable error naming no endpoint; the upstream hears nothing', async () => {
    const mallory = await clientOf('mallory');
    const before = upstream.calls.length;
    const error = errorOf(await callTool(mallory, 'x_rec_whoami'));
    assert.equal(error.code, -32600);
    assert.match(error.message, /^Upstream rec acts as the caller, and your token could not be exchanged for one it accepts/);
    assert.doesNotMatch(error.message, /http|127\.0\.0\.1|invalid_grant|delegation/);
    assert.equal(upstream.calls.length, before);
  });
});
