/**
 * OAuth to a protected upstream, per principal, with real components: the
 * oidc-provider authorization server and a v2 SDK upstream behind the SDK's
 * bearer gate, both on 127.0.0.1; taskvisor's UpstreamOAuth with its callback
 * route on a real listener; the SDK client transport using the provider.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { CredentialCipher } from '../../src/store/credentials/CredentialCipher.js';
import { MemoryCredentialStore } from '../../src/store/credentials/MemoryCredentialStore.js';
import { SealedCredentials } from '../../src/store/credentials/SealedCredentials.js';
import { nodeRequestHandler } from '../../src/transports/nodeAdapter.js';
import { OAuthAuthorizationRequiredError } from '../../src/upstreams/oauth/OAuthAuthorizationRequiredError.js';
import { oauthCallbackRoute } from '../../src/upstreams/oauth/OAuthCallbackRoute.js';
import { OAuthRecords } from '../../src/upstreams/oauth/OAuthRecords.js';
import { UpstreamOAuth } from '../../src/upstreams/oauth/UpstreamOAuth.js';
import { browseAuthorization, startAuthorizationServer, type TestAuthorizationServer } from '../support/oauthAuthorizationServer.js';
import { startProtectedUpstream, type ProtectedUpstream } from '../support/protectedUpstream.js';

const alice = { id: 'alice' };
const bob = { id: 'bob' };

describe('OAuth to a protected upstream, per principal', () => {
  let as: TestAuthorizationServer;
  let upstream: ProtectedUpstream;
  let callbackServer: http.Server;
  let oauth: UpstreamOAuth;
  let clock = Date.now();

  before(async () => {
    const started = await startProtectedUpstream();
    upstream = started;
    as = await startAuthorizationServer({ resource: () => started.url });
    started.attach(as);
    callbackServer = http.createServer();
    await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    const callbackUrl = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/oauth/callback`;
    const records = new OAuthRecords(new SealedCredentials(new MemoryCredentialStore(), new CredentialCipher(randomBytes(32))));
    oauth = new UpstreamOAuth({ records, upstreams: [{ name: 'files', url: upstream.url }], callbackUrl, now: () => clock });
    const route = oauthCallbackRoute(oauth);
    const serve = nodeRequestHandler({ fetch: (request: Request) => route.fetch(request) });
    callbackServer.on('request', (req, res) => void serve(req, res));
  });

  after(async () => {
    callbackServer.closeAllConnections();
    await new Promise((resolve) => callbackServer.close(resolve));
    await upstream.close();
    await as.close();
  });

  async function whoami(principal: { id: string }): Promise<string> {
    const { authProvider } = await oauth.connectionAuth('files', principal);
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(upstream.url), { authProvider }));
    try {
      const result = await client.callTool({ name: 'whoami', arguments: {} });
      return (result.content as Array<{ text: string }>)[0]!.text;
    } finally {
      await client.close();
    }
  }

  async function authorizationUrlOf(principal: { id: string }): Promise<string> {
    const error = await oauth.connectionAuth('files', principal).then(
      () => assert.fail('expected authorization required'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof OAuthAuthorizationRequiredError);
    assert.doesNotMatch(error.message, /https?:/, 'the message holds no URL');
    assert.ok(error.authorizeUrl);
    return error.authorizeUrl;
  }

  it('refuses a principal that has not authorized, with a URL bound to it (PKCE S256, state)', async () => {
    const url = new URL(await authorizationUrlOf(alice));
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
    assert.ok((url.searchParams.get('state') ?? '').length >= 40);
    assert.equal(url.searchParams.get('resource'), upstream.url);
  });

  it('authorizes through the callback, then calls the upstream as that principal', async () => {
    const page = await browseAuthorization(await authorizationUrlOf(alice), 'alice-at-as');
    assert.equal(page.status, 200, await page.clone().text());
    assert.match(await page.text(), /may now call files/);
    assert.equal(await whoami(alice), 'alice-at-as');
  });

  it('a second principal is still refused, and its own grant acts as its own user', async () => {
    await authorizationUrlOf(bob);
    const page = await browseAuthorization(await authorizationUrlOf(bob), 'bob-at-as');
    assert.equal(page.status, 200);
    assert.equal(await whoami(bob), 'bob-at-as');
    assert.equal(await whoami(alice), 'alice-at-as');
  });

  it('an authorization link is single-use', async () => {
    const url = await authorizationUrlOf({ id: 'carol' });
    // The first browser redeems it; replaying the same callback finds nothing.
    const first = await browseAuthorization(url, 'carol-at-as');
    assert.equal(first.status, 200);
    const replay = await fetch(first.url);
    assert.equal(replay.status, 400);
    assert.match(await replay.text(), /unknown or was already used/);
  });

  it('an expired authorization link is refused', async () => {
    const url = await authorizationUrlOf({ id: 'dave' });
    clock += 11 * 60_000;
    try {
      const page = await browseAuthorization(url, 'dave-at-as');
      assert.equal(page.status, 400);
      assert.match(await page.text(), /expired/);
    } finally {
      clock -= 11 * 60_000;
    }
  });

  it('refreshes a token before it expires', async () => {
    assert.equal(await whoami(alice), 'alice-at-as');
    const before = upstream.tokensSeen.at(-1);
    clock += 3600_000; // the access token now expires within the skew
    try {
      assert.equal(await whoami(alice), 'alice-at-as');
      const after = upstream.tokensSeen.at(-1);
      assert.notEqual(after, before, 'a new access token was used');
      assert.equal(await whoami(alice), 'alice-at-as');
    } finally {
      clock -= 3600_000;
    }
  });

  it('revoke forgets the grant and revokes it at the authorization server', async () => {
    const { authProvider } = await oauth.connectionAuth('files', bob);
    const held = (await authProvider.tokens())!.access_token;
    assert.equal(await oauth.revoke('files', 'bob'), true);
    await authorizationUrlOf(bob);
    assert.equal(await as.provider.AccessToken.find(held), undefined, 'the AS no longer knows the access token');
    assert.equal(await oauth.revoke('files', 'bob'), false);
    assert.equal(await whoami(alice), 'alice-at-as', 'other principals keep theirs');
  });
});
