/**
 * kill -9 of an aggregator whose upstream requires OAuth: a task forwarded
 * for alice keeps acting upstream as alice's account after the restart.
 * The upstream is taskvisor itself behind JWT access tokens of the
 * oidc-provider authorization server: its tasks are bound to the token's
 * subject (I-7), so a `tasks/get` that reached it with another account's
 * token (the catalog grant, bob's) would be "not found". The restarted
 * aggregator holds nothing in memory: the wrapped id names alice (MAC-bound),
 * and her grant comes back from the sealed files.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { jwtVerifier } from '../../src/auth/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { startIssuer, type Issuer } from '../support/authFixtures.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { browseAuthorization, startAuthorizationServer, type TestAuthorizationServer } from '../support/oauthAuthorizationServer.js';
import { callTool, CLI, errorOf, freePort, getTask, resultOf, spawnNode, tempDir, waitFor, type Child } from '../support/processes.js';

const AUDIENCE = 'https://taskvisor.test/mcp';

describe('OAuth upstream: kill -9 of the aggregator mid-task', () => {
  let as: TestAuthorizationServer;
  let issuer: Issuer;
  let upstream: TaskvisorRuntime;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const tokens: Record<string, string> = {};
  const clients: ConnectedClient[] = [];
  const children: Child[] = [];
  let config = '';
  let aggregatorUrl = '';

  const startAggregator = async (): Promise<void> => {
    const child = spawnNode([CLI, 'serve', '--config', config], { cwd: dir.path });
    children.push(child);
    await child.waitForOutput(/serving MCP over Streamable HTTP/, { stream: 'stderr' });
    await child.waitForOutput(/upstream files: ready/, { stream: 'stderr' });
  };
  const clientOf = async (who: string) => {
    const client = await connect({ kind: 'http', url: aggregatorUrl, headers: { authorization: `Bearer ${tokens[who]}` } });
    clients.push(client);
    return client;
  };
  const authorizeWithCli = async (principal: string, user: string) => {
    const child = spawnNode([CLI, 'upstreams', 'auth', 'files', '--config', config, '--principal', principal], { cwd: dir.path });
    const [, url] = await child.waitForOutput(/^\s+(http:\/\/\S+)$/m, { stream: 'stdout' });
    const page = await browseAuthorization(url!, user);
    assert.equal(page.status, 200, page.url);
    assert.equal((await child.exited).code, 0, child.stderr);
  };

  before(async () => {
    dir = await tempDir('taskvisor-oauth-kill9-');
    const upstreamPort = await freePort();
    const upstreamUrl = `http://127.0.0.1:${upstreamPort}/mcp`;
    as = await startAuthorizationServer({ resource: () => upstreamUrl, accessTokenFormat: 'jwt' });
    upstream = createRuntime({ store: { kind: 'memory' }, logger: silentLogger });
    upstream.tool('hold', { taskBehavior: 'always', inputSchema: z.object({}) }, async (_args, ctx) => {
      await released;
      return `held for ${ctx.principal}`;
    });
    await upstream.start();
    const verifier = await jwtVerifier({ jwksUrl: `${as.issuer}/jwks`, issuer: as.issuer, audience: upstreamUrl });
    await listenHttp(upstream, { port: upstreamPort, auth: { verifier, resource: upstreamUrl, authorizationServers: [as.issuer] } });

    issuer = await startIssuer(AUDIENCE);
    for (const who of ['alice', 'bob']) tokens[who] = await issuer.sign({ sub: who }, { expiresIn: '1h' });
    const port = await freePort();
    aggregatorUrl = `http://127.0.0.1:${port}/mcp`;
    await writeFile(join(dir.path, 'credentials.key'), randomBytes(32).toString('base64'), { mode: 0o600 });
    config = join(dir.path, 'taskvisor.yaml');
    await writeFile(
      config,
      [
        'store: { kind: lowdb, dir: store }',
        `http: { host: 127.0.0.1, port: ${port} }`,
        `auth: { kind: jwt, jwksUrl: "${issuer.jwksUrl}", issuer: "${issuer.issuer}", audience: "${AUDIENCE}" }`,
        `credentials: { keyFile: credentials.key, callbackUrl: "http://127.0.0.1:${port}/oauth/callback" }`,
        'upstreams:',
        '  - name: files',
        '    type: streamable-http',
        `    url: ${upstreamUrl}`,
        '    pingIntervalMs: 0',
        '    identity: { mode: oauth, scope: "mcp:tools" }',
        '',
      ].join('\n'),
    );
    // The operator's grant lists the catalog; alice authorizes her own.
    await authorizeWithCli('local', 'operator-at-as');
    await authorizeWithCli('alice', 'alice-at-as');
  });

  after(async () => {
    release();
    for (const client of clients) await client.close().catch(() => undefined);
    for (const child of children) await child.kill();
    await upstream?.close();
    await as?.close();
    await issuer?.close();
    await dir?.remove();
  });

  it('alice’s forwarded task is still hers upstream after kill -9; bob’s account never reaches it', async () => {
    await startAggregator();
    const alice = await clientOf('alice');
    const created = resultOf(await callTool(alice, 'x_files_hold'));
    assert.equal(created.resultType, 'task');
    const taskId = String(created.taskId);
    assert.equal(resultOf(await getTask(alice, taskId)).status, 'working');

    await children.at(-1)!.kill('SIGKILL');
    for (const client of clients.splice(0)) await client.close().catch(() => undefined);
    await startAggregator();

    const aliceAgain = await clientOf('alice');
    assert.equal(resultOf(await getTask(aliceAgain, taskId)).status, 'working', 'the upstream still finds it under alice’s account');
    const bob = await clientOf('bob');
    assert.equal(errorOf(await getTask(bob, taskId)).code, -32602);
    const bobCall = errorOf(await callTool(bob, 'x_files_hold'));
    assert.equal((bobCall.data as { authorizationRequired?: boolean }).authorizationRequired, true, 'bob has no grant of his own');

    release();
    const done = await waitFor(
      async () => {
        const task = resultOf(await getTask(aliceAgain, taskId));
        return task.status === 'completed' ? task : undefined;
      },
      { timeoutMs: 15_000, what: 'alice’s task to complete' },
    );
    const content = (done.result as { content: Array<{ text: string }> }).content;
    assert.equal(content[0]!.text, 'held for alice-at-as', 'the upstream ran it as alice’s account');
  });
});
