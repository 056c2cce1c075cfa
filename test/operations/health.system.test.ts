/**
 * Health and readiness over real HTTP: `/healthz` and `/readyz`
 * on the MCP listener and on a port of their own, readiness while recovery
 * runs, upstream states reported and gating only when configured, liveness
 * failing on a blocked event loop, and the `serve` wiring (config + flag).
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createOperations, listenOperations } from '../../src/operations/index.js';
import { MemoryTaskStore, PostgresTaskStore } from '../../src/store/index.js';
import { silentLogger } from '../../src/index.js';
import { createRuntime } from '../../src/server/TaskvisorRuntime.js';
import { serve } from '../../src/cli/serve.js';
import { ConfigError, parseConfig } from '../../src/config/loadConfig.js';
import { heldRecovery } from '../support/heldRecovery.js';
import { freePort, tempDir, waitFor } from '../support/processes.js';
import { freshSchema, TEST_PG_URL } from '../support/postgres.js';
import { getJson, serveWithOperations, type ReadyBody } from './support.js';

/** A memory store whose recovery read waits until released: a real store with a slow start. */
const busyWait = (ms: number) => {
  const until = Date.now() + ms;
  while (Date.now() < until);
};

describe('/healthz and /readyz on the HTTP listener', () => {
  it('answer 200 with the checks once the runtime is started, without credentials, never cached', async () => {
    const served = await serveWithOperations();
    try {
      const health = await getJson(served.base, '/healthz');
      assert.equal(health.status, 200);
      assert.equal(health.body.status, 'ok');
      assert.equal(health.headers.get('cache-control'), 'no-store');
      assert.equal(typeof (health.body.eventLoop as { p99Ms: number }).p99Ms, 'number');
      const ready = await getJson<ReadyBody>(served.base, '/readyz');
      assert.equal(ready.status, 200);
      assert.equal(ready.body.status, 'ready');
      assert.deepEqual(ready.body.reasons, []);
      const byName = Object.fromEntries(ready.body.checks.map((check) => [check.name, check.state]));
      assert.deepEqual(byName, { recovery: 'finished', phase: 'ready', store: 'open', 'listener:http': 'up' });
      // HEAD answers like GET without a body (HAProxy may check with HEAD); other methods are refused.
      const head = await fetch(new URL('/readyz', served.base), { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(await head.text(), '');
      const post = await fetch(new URL('/healthz', served.base), { method: 'POST' });
      assert.equal(post.status, 405);
      assert.equal(post.headers.get('allow'), 'GET, HEAD');
      // MCP is still served at its path, and other paths are still 404.
      assert.equal((await fetch(new URL('/nothing', served.base))).status, 404);
    } finally {
      await served.close();
    }
    // Closed: the phase says so (a draining instance is not ready).
    const report = served.operations.health.readiness();
    assert.equal(report.status, 'not ready');
    assert.deepEqual(report.reasons.slice(0, 2), ['phase is stopped', 'store is closed']);
  });

  it('/healthz fails when the event loop stays blocked past maxEventLoopDelayMs, and recovers', async () => {
    const served = await serveWithOperations({ operations: { maxEventLoopDelayMs: 60, eventLoopWindowMs: 60_000 } });
    try {
      // Several long turns in a row: the p99 of the window's delays is one of them.
      for (let turn = 0; turn < 6; turn++) {
        busyWait(150);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const blocked = await getJson<{ status: string; reasons: string[]; eventLoop: { p99Ms: number } }>(served.base, '/healthz');
      assert.equal(blocked.status, 503);
      assert.equal(blocked.body.status, 'unhealthy');
      assert.ok(blocked.body.eventLoop.p99Ms > 60, JSON.stringify(blocked.body));
      assert.match(blocked.body.reasons[0]!, /^event loop delay p99 [\d.]+ ms is over 60 ms$/);
      // Readiness is a different question: the instance is still ready.
      assert.equal((await getJson(served.base, '/readyz')).status, 200);
    } finally {
      await served.close();
    }
  });

  it('report upstream states without gating by default; upstreamsGateReadiness makes them gate', async () => {
    const port = await freePort(); // nothing listens there: the upstream cannot connect
    const upstream = {
      name: 'down',
      type: 'streamable-http' as const,
      url: `http://127.0.0.1:${port}/mcp`,
      timeout: 2000,
      backoff: { initialMs: 60_000, maxAttempts: 1 },
    };
    const dir = await tempDir('taskvisor-ops-');
    const stateFile = join(dir.path, 'state.json');
    const reported = await serveWithOperations({ runtime: { upstreams: [upstream], stateFile } });
    try {
      const ready = await getJson<ReadyBody>(reported.base, '/readyz');
      assert.equal(ready.status, 200, JSON.stringify(ready.body));
      const check = ready.body.checks.find((entry) => entry.name === 'upstream:down');
      assert.ok(check && !check.ok && !check.gating, JSON.stringify(ready.body.checks));
      assert.notEqual(check.state, 'ready');
    } finally {
      await reported.close();
    }
    const gated = await serveWithOperations({
      runtime: { upstreams: [upstream], stateFile },
      operations: { upstreamsGateReadiness: true },
    });
    try {
      const ready = await getJson<ReadyBody>(gated.base, '/readyz');
      assert.equal(ready.status, 503);
      assert.equal(ready.body.status, 'not ready');
      assert.match(ready.body.reasons.join('\n'), /^upstream:down is (connecting|backoff|failed|degraded|not started)$/m);
    } finally {
      await gated.close();
      await dir.remove();
    }
  });
});

describe('a store that holds a lock', () => {
  it('/readyz reports the lock of a sqlite store as held', async () => {
    const dir = await tempDir('taskvisor-ops-lock-');
    const served = await serveWithOperations({ runtime: { store: { kind: 'sqlite', file: join(dir.path, 'tasks.sqlite') } } });
    try {
      const ready = await getJson<ReadyBody>(served.base, '/readyz');
      assert.equal(ready.status, 200, JSON.stringify(ready.body));
      assert.ok(ready.body.checks.some((check) => check.name === 'storeLock' && check.state === 'held' && check.gating));
    } finally {
      await served.close();
      await dir.remove();
    }
  });
});

describe('the operations port of its own', () => {
  it('answers before start: not ready while unfinished tasks are recovered, ready after', async () => {
    // Recovery held at its store scan, however the memory store reads it (paged or whole).
    const held = heldRecovery(new MemoryTaskStore());
    const runtime = createRuntime({ store: held.store, logger: silentLogger, reapIntervalMs: 0 });
    const operations = createOperations(runtime);
    const listener = await listenOperations(runtime, operations, { port: 0 });
    const started = runtime.start();
    try {
      await held.reached;
      const recovering = await getJson<ReadyBody>(listener.url, '/readyz');
      assert.equal(recovering.status, 503);
      assert.equal(recovering.body.phase, 'recovering');
      assert.ok(recovering.body.reasons.includes('recovery is recovering'), JSON.stringify(recovering.body));
      // Alive all the same: a supervisor must not restart an instance for recovering.
      assert.equal((await getJson(listener.url, '/healthz')).status, 200);
      held.open();
      await started;
      const ready = await getJson<ReadyBody>(listener.url, '/readyz');
      assert.equal(ready.status, 200, JSON.stringify(ready.body));
      assert.ok(ready.body.checks.some((check) => check.name === 'listener:operations' && check.state === 'up'));
      assert.equal((await fetch(new URL('/mcp', listener.url))).status, 404);
    } finally {
      held.open();
      await started.catch(() => undefined);
      await runtime.close();
    }
    await assert.rejects(fetch(new URL('/healthz', listener.url)), 'closed with the runtime');
  });
});

describe('taskvisor serve: operations config and --operations', () => {
  const dirs: { remove(): Promise<void> }[] = [];
  after(() => Promise.all(dirs.map((dir) => dir.remove())));

  it('serves /readyz on operations.listen next to a WebSocket-only server, tracking its listeners', async () => {
    const dir = await tempDir('taskvisor-ops-serve-');
    dirs.push(dir);
    const config = join(dir.path, 'taskvisor.yaml');
    await writeFile(config, 'store: { kind: memory }\noperations:\n  listen: { port: 0 }\n  maxEventLoopDelayMs: 5000\n');
    const running = await serve({ config, ws: '127.0.0.1:0', quiet: true });
    try {
      assert.equal(running.url, undefined, 'no HTTP listener: --ws alone');
      assert.ok(running.operationsUrl);
      const ready = await getJson<ReadyBody>(running.operationsUrl, '/readyz');
      assert.equal(ready.status, 200, JSON.stringify(ready.body));
      const names = ready.body.checks.map((check) => check.name);
      assert.ok(names.includes('listener:ws') && names.includes('listener:operations'), names.join());
      const health = await getJson<{ eventLoop: { limitMs: number } }>(running.operationsUrl, '/healthz');
      assert.equal(health.body.eventLoop.limitMs, 5000);
    } finally {
      await running.stop();
    }
  });

  it('refuses a bad --operations value and a bad operations section before anything starts', async () => {
    await assert.rejects(serve({ demo: true, operations: 'nowhere', quiet: true }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /^--operations nowhere: expected host:port/);
      return true;
    });
    assert.throws(
      () => parseConfig('operations:\n  listen: { port: 70000 }\n', 'taskvisor.yaml'),
      /taskvisor\.yaml:2:\d+: operations\.listen\.port/,
    );
    assert.throws(() => parseConfig('operations:\n  gate: true\n', 'taskvisor.yaml'), /operations.*gate/);
  });
});

describe('on a shared PostgreSQL store', () => {
  it('/readyz reports the cluster lease held; /metrics counts its renewals', async () => {
    const { schema, drop } = await freshSchema('tv_ops');
    const store = new PostgresTaskStore({ url: TEST_PG_URL, schema, leaseMs: 600 });
    const served = await serveWithOperations({ runtime: { store }, operations: { metrics: { processMetrics: false } } });
    try {
      const ready = await getJson<ReadyBody>(served.base, '/readyz');
      assert.equal(ready.status, 200, JSON.stringify(ready.body));
      assert.ok(ready.body.checks.some((check) => check.name === 'clusterLease' && check.state === 'held'));
      // The lease is renewed every leaseMs / 3: wait for renewals to be counted.
      const renewals = await waitFor(
        async () => {
          const text = await (await fetch(new URL('/metrics', served.base))).text();
          const count = Number(/^taskvisor_cluster_lease_renewals_total\{outcome="renewed"\} (\d+)$/m.exec(text)?.[1] ?? 0);
          return count >= 2 && text;
        },
        { timeoutMs: 20_000, what: 'two lease renewals in /metrics' },
      );
      assert.match(renewals, /^taskvisor_cluster_lease_held 1$/m);
    } finally {
      await served.close();
      await drop();
    }
  });
});
