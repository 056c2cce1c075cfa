/**
 * Who may read the operator surfaces: with bearer auth, a token
 * carrying the operator scope (an ordinary principal's token gets 403, no
 * token 401); `serve` refuses, before anything starts, metrics that would be
 * exposed without auth or served nowhere.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { tokenFileVerifier } from '../../src/auth/index.js';
import { connect } from '../support/extTasksClient.js';
import { taskOps } from '../support/taskOps.js';
import { serve } from '../../src/cli/serve.js';
import { ConfigError } from '../../src/config/loadConfig.js';
import { writeTokenFile } from '../support/authFixtures.js';
import { tempDir } from '../support/processes.js';
import { serveWithOperations, type Served } from './support.js';

const ALICE = 'tv_alice_' + 'a'.repeat(32);
const OPERATOR = 'tv_operator_' + 'o'.repeat(32);

describe('operator access with bearer auth', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let served: Served;
  before(async () => {
    dir = await tempDir('taskvisor-operator-');
    const file = await writeTokenFile(join(dir.path, 'tokens.yaml'), [
      { principal: 'alice', token: ALICE },
      { principal: 'ops', token: OPERATOR, scopes: ['taskvisor:operator'] },
    ]);
    const auth = { verifier: await tokenFileVerifier(file) };
    served = await serveWithOperations({
      http: { auth },
      operations: { metrics: true, ui: true, auth },
      register: (runtime) =>
        runtime.tool('note', { taskBehavior: 'always', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => `noted ${text}`),
    });
  });
  after(async () => {
    await served?.close();
    await dir?.remove();
  });
  const scrape = (token?: string) =>
    fetch(new URL('/metrics', served.base), token ? { headers: { authorization: `Bearer ${token}` } } : {});

  it('no token: 401 with a bearer challenge', async () => {
    const response = await scrape();
    assert.equal(response.status, 401);
    assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer /);
  });

  it('an ordinary principal’s valid token: 403 insufficient_scope naming the operator scope', async () => {
    const response = await scrape(ALICE);
    assert.equal(response.status, 403);
    assert.match(response.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
    assert.match(response.headers.get('www-authenticate') ?? '', /scope="taskvisor:operator"/);
  });

  it('a token with the operator scope: 200 and the metrics', async () => {
    const response = await scrape(OPERATOR);
    assert.equal(response.status, 200);
    assert.match(await response.text(), /^# HELP taskvisor_/m);
  });

  it('the operator API lists every principal’s tasks to the operator only; the page itself is static', async () => {
    const alice = await connect({ kind: 'http', url: served.url, headers: { authorization: `Bearer ${ALICE}` } });
    let taskId: string;
    try {
      const ops = taskOps(() => alice);
      ({ taskId } = await ops.createTask('note', { text: 'secret-argument' }));
      await ops.waitForStatus(taskId, 'completed');
      await served.runtime.flushed();
    } finally {
      await alice.close();
    }
    const asOperator = { headers: { authorization: `Bearer ${OPERATOR}` } };
    const listed = await fetch(new URL('/ops/api/tasks?tool=note&status=completed', served.base), asOperator);
    assert.equal(listed.status, 200);
    const { tasks } = (await listed.json()) as { tasks: { taskId: string; owner: string; status: string }[] };
    assert.deepEqual(
      tasks.map((task) => [task.taskId, task.owner, task.status]),
      [[taskId, 'alice', 'completed']],
    );
    const detail = await fetch(new URL(`/ops/api/tasks/${taskId}`, served.base), asOperator);
    const body = await detail.text();
    assert.equal(detail.status, 200);
    assert.ok(!body.includes('secret-argument'), 'summaries only: no arguments, no result content');
    const { timeline } = JSON.parse(body) as { timeline: { kind: string; status: string }[] };
    assert.deepEqual(
      timeline.map((entry) => `${entry.kind}:${entry.status}`),
      ['created:working', 'status:completed', 'result:completed'],
    );
    // Alice's own token cannot read the operator API, not even her own task; no token gets 401.
    const asAlice = await fetch(new URL(`/ops/api/tasks/${taskId}`, served.base), { headers: { authorization: `Bearer ${ALICE}` } });
    assert.equal(asAlice.status, 403);
    assert.equal((await fetch(new URL('/ops/api/overview', served.base))).status, 401);
    assert.equal((await fetch(new URL('/ops/api/tasks?status=bogus', served.base), asOperator)).status, 400);
    assert.equal((await fetch(new URL('/ops/api/tasks', served.base), { ...asOperator, method: 'POST' })).status, 405);
    const page = await fetch(new URL('/ui/', served.base));
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    assert.match(await page.text(), /<script type="module" src="\/ui\/app\.js"><\/script>/);
  });

  it('health and readiness stay open to balancers without a token', async () => {
    assert.equal((await fetch(new URL('/readyz', served.base))).status, 200);
  });
});

describe('taskvisor serve --metrics', () => {
  const dirs: { remove(): Promise<void> }[] = [];
  after(() => Promise.all(dirs.map((dir) => dir.remove())));
  const memoryConfig = async () => {
    const dir = await tempDir('taskvisor-metrics-serve-');
    dirs.push(dir);
    const config = join(dir.path, 'taskvisor.yaml');
    // `auth: none` says in so many words that the exposed MCP listener is meant to be open.
    await writeFile(config, 'store: { kind: memory }\nauth: { kind: none }\n');
    return config;
  };

  it('refuses metrics on a non-loopback listener without auth, and metrics with no listener, before anything starts', async () => {
    const config = await memoryConfig();
    await assert.rejects(serve({ config, http: '0.0.0.0:0', metrics: true, quiet: true }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /^--metrics\/--ui without auth: HTTP binds 0\.0\.0\.0, not loopback; configure auth/);
      return true;
    });
    await assert.rejects(
      serve({ config, http: '0.0.0.0:0', operations: '0.0.0.0:0', metrics: true, quiet: true }),
      /operations port binds 0\.0\.0\.0/,
    );
    await assert.rejects(serve({ config, ws: '127.0.0.1:0', metrics: true, quiet: true }), /--metrics and --ui need a listener/);
  });

  it('on a non-loopback HTTP listener without auth, serves metrics only on the loopback operations port', async () => {
    const config = await memoryConfig();
    const running = await serve({ config, http: '0.0.0.0:0', operations: '127.0.0.1:0', metrics: true, quiet: true });
    try {
      const httpBase = `http://127.0.0.1:${new URL(running.url!).port}`;
      assert.equal((await fetch(new URL('/metrics', httpBase))).status, 404, 'not on the exposed listener');
      assert.equal((await fetch(new URL('/readyz', httpBase))).status, 200, 'health still is');
      const scraped = await fetch(new URL('/metrics', running.operationsUrl));
      assert.equal(scraped.status, 200);
      assert.match(await scraped.text(), /^taskvisor_ready 1$/m);
    } finally {
      await running.stop();
    }
  });
});
