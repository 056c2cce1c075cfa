/**
 * OAuth upstreams through the aggregator, end to end: taskvisor serves HTTP
 * (JWT callers alice and bob) and the OAuth callback; the upstream requires
 * tokens of the oidc-provider authorization server. A caller who has not
 * authorized gets -32600 (authorization required) with a URL bound to it; after the browser comes
 * back through taskvisor's callback, its calls act upstream as its own user.
 * A restart (a new runtime and authority over the same sealed files) keeps
 * every grant, and a task forwarded for alice runs upstream as alice.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createRuntime, silentLogger, stderrLogger, type TaskvisorRuntime } from '../../src/index.js';
import { jwtVerifier } from '../../src/auth/index.js';
import { CredentialCipher } from '../../src/store/credentials/CredentialCipher.js';
import { FileCredentialStore } from '../../src/store/credentials/FileCredentialStore.js';
import { SealedCredentials } from '../../src/store/credentials/SealedCredentials.js';
import { listenHttp } from '../../src/transports/index.js';
import { nodeRequestHandler } from '../../src/transports/nodeAdapter.js';
import { oauthCallbackRoute } from '../../src/upstreams/oauth/OAuthCallbackRoute.js';
import { OAuthRecords } from '../../src/upstreams/oauth/OAuthRecords.js';
import { UpstreamOAuth } from '../../src/upstreams/oauth/UpstreamOAuth.js';
import { startIssuer, type Issuer } from '../support/authFixtures.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { browseAuthorization, startAuthorizationServer, type TestAuthorizationServer } from '../support/oauthAuthorizationServer.js';
import { callTool, errorOf, freePort, getTask, resultOf, tempDir, waitFor } from '../support/processes.js';
import { startProtectedUpstream, type ProtectedUpstream } from '../support/protectedUpstream.js';

const AUDIENCE = 'https://taskvisor.test/mcp';
const logger = process.env.TASKVISOR_TEST_LOG ? stderrLogger() : silentLogger;

describe('OAuth upstream through the aggregator', () => {
  let as: TestAuthorizationServer;
  let upstream: ProtectedUpstream;
  let issuer: Issuer;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let port = 0;
  let callbackUrl = '';
  const key = randomBytes(32);
  const tokens: Record<string, string> = {};
  const clients: ConnectedClient[] = [];
  const runtimes: TaskvisorRuntime[] = [];
  const stores: FileCredentialStore[] = [];

  /** An authority over the sealed files in `dir`: what a (re)started server builds from its config. */
  const authority = async (): Promise<UpstreamOAuth> => {
    const store = new FileCredentialStore(join(dir.path, 'credentials'));
    await store.open();
    stores.push(store);
    const records = new OAuthRecords(new SealedCredentials(store, new CredentialCipher(key)));
    return new UpstreamOAuth({ records, upstreams: [{ name: 'files', url: upstream.url }], callbackUrl });
  };

  const startAggregator = async (): Promise<string> => {
    const oauth = await authority();
    const runtime = createRuntime({
      store: { kind: 'lowdb', dir: join(dir.path, 'store') },
      stateFile: join(dir.path, 'runtime-state.json'),
      upstreams: [{ name: 'files', type: 'streamable-http', url: upstream.url, identity: { mode: 'oauth' }, pingIntervalMs: 0 }],
      upstreamCredentials: { files: oauth },
      logger,
    });
    runtimes.push(runtime);
    await runtime.start();
    await runtime.upstreams!.waitFor('files', (status) => status.state === 'ready');
    const verifier = await jwtVerifier({ jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: AUDIENCE });
    return (await listenHttp(runtime, { port, auth: { verifier }, routes: oauthCallbackRoute(oauth) })).url;
  };
  const stopAggregator = async () => {
    for (const client of clients.splice(0)) await client.close();
    await runtimes.at(-1)!.close();
  };
  const clientOf = async (url: string, who: string) => {
    const client = await connect({ kind: 'http', url, headers: { authorization: `Bearer ${tokens[who]}` } });
    clients.push(client);
    return client;
  };
  const text = (result: Record<string, unknown>) => (result.content as Array<{ text: string }>)[0]!.text;

  before(async () => {
    dir = await tempDir('taskvisor-oauth-aggregator-');
    const started = await startProtectedUpstream();
    upstream = started;
    as = await startAuthorizationServer({ resource: () => started.url });
    started.attach(as);
    issuer = await startIssuer(AUDIENCE);
    for (const who of ['alice', 'bob']) tokens[who] = await issuer.sign({ sub: who }, { expiresIn: '1h' });
    port = await freePort();
    callbackUrl = `http://127.0.0.1:${port}/oauth/callback`;
    // The operator authorizes the catalog principal first (as `taskvisor upstreams auth files` does on a loopback port).
    const oauth = await authority();
    const route = oauthCallbackRoute(oauth);
    const server = createServer((req, res) => void nodeRequestHandler({ fetch: (request: Request) => route.fetch(request) })(req, res));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    try {
      const url = await oauth.startAuthorization('files', 'local', callbackUrl);
      assert.equal((await browseAuthorization(url.href, 'operator-at-as')).status, 200);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  after(async () => {
    for (const client of clients) await client.close();
    for (const runtime of runtimes) await runtime.close();
    for (const store of stores) await store.close();
    await upstream?.close();
    await as?.close();
    await issuer?.close();
    await dir?.remove();
  });

  it('refuses an unauthorized caller with authorization required and its own URL, then acts as its user once it authorized', async () => {
    const url = await startAggregator();
    const alice = await clientOf(url, 'alice');
    const refused = errorOf(await callTool(alice, 'x_files_whoami'));
    assert.equal(refused.code, -32600);
    assert.doesNotMatch(refused.message, /https?:/);
    const data = refused.data as { upstream: string; authorizationRequired: boolean; authorizeUrl: string };
    assert.equal(data.authorizationRequired, true);
    assert.equal(data.upstream, 'files');

    const page = await browseAuthorization(data.authorizeUrl, 'alice-at-as');
    assert.equal(page.status, 200, await page.clone().text());
    assert.equal(text(resultOf(await callTool(alice, 'x_files_whoami'))), 'alice-at-as');

    const bob = await clientOf(url, 'bob');
    const bobRefused = errorOf(await callTool(bob, 'x_files_whoami'));
    assert.equal(bobRefused.code, -32600, 'a second principal is refused: alice’s grant is hers');
    assert.notEqual((bobRefused.data as { authorizeUrl: string }).authorizeUrl, data.authorizeUrl);
    await stopAggregator();
  });

  it('keeps grants across a restart, sealed on disk; a forwarded task runs upstream as its principal', async () => {
    const url = await startAggregator();
    const alice = await clientOf(url, 'alice');
    assert.equal(text(resultOf(await callTool(alice, 'x_files_whoami'))), 'alice-at-as', 'no new authorization after the restart');
    const bytes = (
      await Promise.all((await readdir(join(dir.path, 'credentials'))).map((f) => readFile(join(dir.path, 'credentials', f), 'utf8')))
    ).join('\n');
    for (const token of upstream.tokensSeen) assert.ok(!bytes.includes(token), 'no access token in clear in the credential files');
    assert.doesNotMatch(bytes, /alice|local|refresh_token/);

    const created = resultOf(await callTool(alice, 'x_files_slow_whoami', { ms: 1500 }));
    if (created.resultType === 'task') {
      const done = await waitFor(
        async () => {
          const task = resultOf(await getTask(alice, String(created.taskId)));
          return task.status === 'completed' ? task : undefined;
        },
        { timeoutMs: 15_000, what: 'alice’s task to complete' },
      );
      assert.equal(text(done.result as Record<string, unknown>), 'alice-at-as');
    } else {
      assert.equal(text(created), 'alice-at-as');
    }
    await stopAggregator();
  });
});
