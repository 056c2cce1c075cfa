/**
 * kill -9 of an aggregator mid-task, then another instance (same config,
 * same runtime state file) takes the task over: it keeps acting upstream as
 * the principal that created it (identity passthrough, from the config file).
 * The upstream is taskvisor trusting the same JWT issuer, whose tasks are
 * bound to the token's subject (I-7): any other identity reaching it would
 * get "not found" or a result for someone else.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { jwtVerifier } from '../../src/auth/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { startIssuer, type Issuer } from '../support/authFixtures.js';
import { CLI, callTool, errorOf, freePort, getTask, resultOf, spawnNode, tempDir, waitFor, type Child } from '../support/processes.js';

const AUDIENCE = 'https://taskvisor.test/mcp';

describe('identity passthrough: kill -9 of the aggregator mid-task, another instance keeps the task’s principal', () => {
  let issuer: Issuer;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let upstream: TaskvisorRuntime;
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const tokens: Record<string, string> = {};
  const clients: ConnectedClient[] = [];
  const children: Child[] = [];
  let config = '';

  /** An aggregator instance from the config file, served on a port of its own. */
  const startInstance = async (): Promise<string> => {
    const port = await freePort();
    const child = spawnNode([CLI, 'serve', '--config', config, '--http', `127.0.0.1:${port}`], { cwd: dir.path });
    children.push(child);
    const match = await child.waitForOutput(/serving MCP over Streamable HTTP at (\S+)/, { timeoutMs: 60_000 });
    return match[1]!;
  };
  const clientOf = async (url: string, who: string) => {
    const client = await connect({ kind: 'http', url, headers: { authorization: `Bearer ${tokens[who]}` } });
    clients.push(client);
    return client;
  };

  before(async () => {
    dir = await tempDir('taskvisor-identity-kill-');
    issuer = await startIssuer(AUDIENCE);
    for (const who of ['alice', 'bob', 'service']) tokens[who] = await issuer.sign({ sub: who }, { expiresIn: '1h' });
    upstream = createRuntime({ store: { kind: 'memory' }, logger: silentLogger });
    upstream.tool('hold', { taskBehavior: 'always', inputSchema: z.object({}) }, async (_args, ctx) => {
      await released;
      return `held for ${ctx.principal}`;
    });
    await upstream.start();
    const verifier = await jwtVerifier({ jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: AUDIENCE });
    const upstreamUrl = (await listenHttp(upstream, { port: 0, auth: { verifier } })).url;
    config = join(dir.path, 'aggregator.json');
    await writeFile(
      config,
      JSON.stringify({
        auth: { kind: 'jwt', jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: AUDIENCE },
        store: { kind: 'lowdb', dir: './store' },
        state: { file: './state/runtime-state.json' },
        upstreams: [
          {
            name: 'tv',
            type: 'streamable-http',
            url: upstreamUrl,
            headers: { authorization: `Bearer ${tokens.service}` },
            identity: 'passthrough',
            pingIntervalMs: 0,
          },
        ],
      }),
    );
  });
  after(async () => {
    release();
    for (const client of clients) await client.close().catch(() => undefined);
    for (const child of children) await child.kill();
    await upstream?.close();
    await issuer?.close();
    await dir?.remove();
  });

  it('the task created through the killed instance is alice’s, and only alice’s, through the next one', async () => {
    const first = await startInstance();
    const alice = await clientOf(first, 'alice');
    // The upstream's catalog arrives after the listener is up.
    const created = await waitFor(
      async () => {
        const outcome = await callTool(alice, 'x_tv_hold');
        return outcome.kind === 'result' ? resultOf(outcome) : undefined;
      },
      { timeoutMs: 60_000, what: 'the upstream tool to be served' },
    );
    assert.equal(created.resultType, 'task');
    const taskId = String(created.taskId);
    assert.equal(resultOf(await getTask(alice, taskId)).status, 'working');

    await children[0]!.kill('SIGKILL');

    const second = await startInstance();
    const aliceAgain = await clientOf(second, 'alice');
    const bob = await clientOf(second, 'bob');
    const working = await waitFor(
      async () => {
        const outcome = await getTask(aliceAgain, taskId);
        return outcome.kind === 'result' ? resultOf(outcome) : undefined;
      },
      { timeoutMs: 60_000, what: 'the new instance to route the task' },
    );
    assert.equal(working.status, 'working', 'the upstream still knows it as alice’s');
    assert.equal(errorOf(await getTask(bob, taskId)).code, -32602, 'another principal: unknown id (I-7)');

    release();
    const done = await waitFor(
      async () => {
        const task = resultOf(await getTask(aliceAgain, taskId));
        return task.status === 'completed' ? task : undefined;
      },
      { timeoutMs: 10_000, what: 'alice’s task to complete' },
    );
    assert.equal((done.result as { content: Array<{ text: string }> }).content[0]!.text, 'held for alice');
  });
});
