/**
 * `taskvisor upstreams auth|grants|revoke` as a child process against the
 * real authorization server and protected upstream: the grant it stores
 * (sealed, beside a lowdb or sqlite task store) serves a later, separate
 * authority over the same config — a restart — and the store's bytes hold
 * neither token nor principal in clear; another key reads nothing.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { loadConfig } from '../../src/config/loadConfig.js';
import { storeConfigOf } from '../../src/cli/serveOptions.js';
import { openUpstreamOAuth, type ConfiguredUpstreamOAuth } from '../../src/upstreams/oauth/fromConfig.js';
import { OAuthAuthorizationRequiredError } from '../../src/upstreams/oauth/OAuthAuthorizationRequiredError.js';
import { browseAuthorization, startAuthorizationServer, type TestAuthorizationServer } from '../support/oauthAuthorizationServer.js';
import { CLI, runNode, spawnNode, tempDir } from '../support/processes.js';
import { startProtectedUpstream, type ProtectedUpstream } from '../support/protectedUpstream.js';

let as: TestAuthorizationServer;
let upstream: ProtectedUpstream;
const removals: Array<() => Promise<void>> = [];

before(async () => {
  const started = await startProtectedUpstream();
  upstream = started;
  as = await startAuthorizationServer({ resource: () => started.url });
  started.attach(as);
});

after(async () => {
  for (const remove of removals) await remove();
  await upstream.close();
  await as.close();
});

async function project(store: string): Promise<{ dir: string; config: string; storeBytes: () => Promise<string> }> {
  const { path: dir, remove } = await tempDir('taskvisor-oauth-');
  removals.push(remove);
  await writeFile(join(dir, 'credentials.key'), randomBytes(32).toString('base64'), { mode: 0o600 });
  const config = join(dir, 'taskvisor.yaml');
  await writeFile(
    config,
    [
      `store: ${store}`,
      'credentials:',
      '  keyFile: credentials.key',
      'upstreams:',
      '  - name: files',
      '    type: streamable-http',
      `    url: ${upstream.url}`,
      '    identity: { mode: oauth }',
      '',
    ].join('\n'),
  );
  const storeBytes = async () => {
    const chunks: string[] = [];
    const walk = async (folder: string): Promise<void> => {
      for (const entry of await readdir(folder, { withFileTypes: true })) {
        const full = join(folder, entry.name);
        if (entry.isDirectory()) await walk(full);
        else if (!entry.name.endsWith('.key') && !entry.name.endsWith('.yaml')) chunks.push((await readFile(full)).toString('latin1'));
      }
    };
    await walk(dir);
    return chunks.join('\n');
  };
  return { dir, config, storeBytes };
}

async function authority(config: string): Promise<ConfiguredUpstreamOAuth> {
  const loaded = await loadConfig(config);
  return (await openUpstreamOAuth(loaded, storeConfigOf(loaded)))!;
}

async function whoami(configured: ConfiguredUpstreamOAuth, principal: string): Promise<{ user: string; token: string }> {
  const { authProvider } = await configured.oauth.connectionAuth('files', { id: principal });
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(upstream.url), { authProvider }));
  try {
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    return { user: (result.content as Array<{ text: string }>)[0]!.text, token: (await authProvider.tokens())!.access_token };
  } finally {
    await client.close();
  }
}

for (const store of ['{ kind: lowdb, dir: store }', '{ kind: sqlite, file: store/tasks.sqlite }']) {
  describe(`upstreams auth with store ${store}`, () => {
    it('authorizes in a browser, keeps the grant sealed across a restart, revokes it', async () => {
      const { config, storeBytes, dir } = await project(store);
      const child = spawnNode([CLI, 'upstreams', 'auth', 'files', '--config', config, '--principal', 'alice'], { cwd: dir });
      const [, url] = await child.waitForOutput(/^\s+(http:\/\/\S+)$/m, { stream: 'stdout' });
      const page = await browseAuthorization(url!, 'alice-at-as');
      assert.equal(page.status, 200);
      assert.equal((await child.exited).code, 0, child.stderr);
      assert.match(child.stdout, /authorized: alice may now use files/);

      // A separate authority over the same files: what a restarted server sees.
      const restarted = await authority(config);
      try {
        const { user, token } = await whoami(restarted, 'alice');
        assert.equal(user, 'alice-at-as');
        const bytes = await storeBytes();
        assert.ok(!bytes.includes(token), 'the access token is not in the store in clear');
        assert.doesNotMatch(bytes, /alice|refresh_token|access_token/, 'neither principal nor token fields in clear');

        await assert.rejects(restarted.oauth.connectionAuth('files', { id: 'bob' }), (error: unknown) => {
          assert.ok(error instanceof OAuthAuthorizationRequiredError);
          assert.equal(error.authorizeUrl, undefined);
          assert.match(error.message, /run `taskvisor upstreams auth files`/, 'no callback configured: the CLI flow is named');
          return true;
        });
      } finally {
        await restarted.close();
      }

      // The store alone, under another key, yields nothing.
      await writeFile(join(dir, 'credentials.key'), randomBytes(32).toString('hex'), { mode: 0o600 });
      const otherKey = await authority(config);
      try {
        await assert.rejects(otherKey.oauth.connectionAuth('files', { id: 'alice' }), OAuthAuthorizationRequiredError);
      } finally {
        await otherKey.close();
      }
    });
  });
}

describe('upstreams grants and revoke', () => {
  it('lists holders and revokes one at the authorization server', async () => {
    const { config, dir } = await project('{ kind: lowdb, dir: store }');
    const child = spawnNode([CLI, 'upstreams', 'auth', 'files', '--config', config, '--principal', 'carol'], { cwd: dir });
    const [, url] = await child.waitForOutput(/^\s+(http:\/\/\S+)$/m, { stream: 'stdout' });
    assert.equal((await browseAuthorization(url!, 'carol-at-as')).status, 200);
    assert.equal((await child.exited).code, 0);

    const configured = await authority(config);
    const { token } = await whoami(configured, 'carol');
    await configured.close();

    const grants = await runNode([CLI, 'upstreams', 'grants', 'files', '--config', config], { cwd: dir });
    assert.equal(grants.stdout, 'carol\n', grants.stderr);
    const revoked = await runNode([CLI, 'upstreams', 'revoke', 'files', '--config', config, '--principal', 'carol'], { cwd: dir });
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal(await as.provider.AccessToken.find(token), undefined, 'revoked at the authorization server too');
    const again = await runNode([CLI, 'upstreams', 'revoke', 'files', '--config', config, '--principal', 'carol'], { cwd: dir });
    assert.equal(again.code, 1);
    assert.match(again.stdout, /carol holds no grant for files/);
  });

  it('names the problem when the upstream is not an OAuth upstream', async () => {
    const { config, dir } = await project('{ kind: lowdb, dir: store }');
    const result = await runNode([CLI, 'upstreams', 'auth', 'nope', '--config', config], { cwd: dir });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /no upstream "nope" with identity mode oauth/);
  });
});
