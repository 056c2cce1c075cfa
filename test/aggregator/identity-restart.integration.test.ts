/**
 * A forwarded task keeps acting as the principal that created it after the
 * aggregator restarts (identity passthrough). The upstream is taskvisor
 * itself, trusting the same JWT issuer: its tasks are bound to the token's
 * subject (I-7), so a `tasks/get` that reached it with any other identity
 * (the catalog's service token, another caller's) would be "not found".
 * The new aggregator holds no token at all until the caller's next request:
 * the wrapped id names the principal (MAC-bound), the request brings its token.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { createRuntime, silentLogger, stderrLogger, type TaskvisorRuntime } from '../../src/index.js';
import { jwtVerifier } from '../../src/auth/index.js';
import { listenHttp } from '../../src/transports/index.js';
import type { UpstreamSpec } from '../../src/upstreams/UpstreamSpec.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { startIssuer, type Issuer } from '../support/authFixtures.js';
import { callTool, errorOf, getTask, resultOf, tempDir, waitFor } from '../support/processes.js';

const AUDIENCE = 'https://taskvisor.test/mcp';
const logger = process.env.TASKVISOR_TEST_LOG ? stderrLogger() : silentLogger;

describe('identity passthrough: a forwarded task keeps its principal across an aggregator restart', () => {
  let issuer: Issuer;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let upstream: TaskvisorRuntime;
  let upstreamUrl = '';
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const tokens: Record<string, string> = {};
  const clients: ConnectedClient[] = [];
  const aggregators: TaskvisorRuntime[] = [];

  const startAggregator = async (): Promise<string> => {
    const spec: UpstreamSpec = {
      name: 'tv',
      type: 'streamable-http',
      url: upstreamUrl,
      headers: { authorization: `Bearer ${tokens.service}` },
      identity: { mode: 'passthrough' },
      pingIntervalMs: 0,
    };
    const runtime = createRuntime({
      store: { kind: 'memory' },
      stateFile: join(dir.path, 'runtime-state.json'),
      upstreams: [spec],
      logger,
    });
    aggregators.push(runtime);
    await runtime.start();
    await runtime.upstreams!.waitFor('tv', (status) => status.state === 'ready');
    const verifier = await jwtVerifier({ jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: AUDIENCE });
    return (await listenHttp(runtime, { port: 0, auth: { verifier } })).url;
  };
  const clientOf = async (url: string, who: string) => {
    const client = await connect({ kind: 'http', url, headers: { authorization: `Bearer ${tokens[who]}` } });
    clients.push(client);
    return client;
  };

  before(async () => {
    dir = await tempDir('taskvisor-identity-restart-');
    issuer = await startIssuer(AUDIENCE);
    for (const who of ['alice', 'bob', 'service']) tokens[who] = await issuer.sign({ sub: who }, { expiresIn: '1h' });
    upstream = createRuntime({ store: { kind: 'memory' }, logger });
    upstream.tool('hold', { taskBehavior: 'always', inputSchema: z.object({}) }, async (_args, ctx) => {
      await released;
      return `held for ${ctx.principal}`;
    });
    await upstream.start();
    const verifier = await jwtVerifier({ jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: AUDIENCE });
    upstreamUrl = (await listenHttp(upstream, { port: 0, auth: { verifier } })).url;
  });
  after(async () => {
    release();
    for (const client of clients) await client.close();
    for (const runtime of aggregators) await runtime.close();
    await upstream?.close();
    await issuer?.close();
    await dir?.remove();
  });

  it('alice’s task is hers upstream before and after the restart; bob’s identity never reaches it', async () => {
    const first = await startAggregator();
    const alice = await clientOf(first, 'alice');
    const created = resultOf(await callTool(alice, 'x_tv_hold'));
    assert.equal(created.resultType, 'task');
    const taskId = String(created.taskId);
    assert.equal(resultOf(await getTask(alice, taskId)).status, 'working');
    // Another principal gets the unknown-id answer (I-7): the wrapped id is bound to alice.
    const bob = await clientOf(first, 'bob');
    assert.equal(errorOf(await getTask(bob, taskId)).code, -32602);

    await aggregators[0]!.close();
    const second = await startAggregator();
    assert.equal(aggregators[1]!.callerCredentials!.size, 0, 'the new instance holds no token before a request brings one');
    const aliceAgain = await clientOf(second, 'alice');
    assert.equal(resultOf(await getTask(aliceAgain, taskId)).status, 'working', 'the upstream still knows it as alice’s');
    const bobAgain = await clientOf(second, 'bob');
    assert.equal(errorOf(await getTask(bobAgain, taskId)).code, -32602);

    release();
    const done = await waitFor(
      async () => {
        const task = resultOf(await getTask(aliceAgain, taskId));
        return task.status === 'completed' ? task : undefined;
      },
      { timeoutMs: 10_000, what: 'alice’s task to complete' },
    );
    const content = (done.result as { content: Array<{ text: string }> }).content;
    assert.equal(content[0]!.text, 'held for alice', 'the upstream ran and answered it as alice');
  });
});
