/**
 * Rate limits across two instances sharing the real PostgreSQL
 * (127.0.0.1:5432): each instance takes an equal share of every rate
 * (1 / live instances, counted from the lease table on each heartbeat).
 * Measured here, and stated in docs/scaling.md:
 *
 * - traffic spread evenly over the instances: exactly the limit is admitted;
 * - all of a principal's traffic on one instance: limit / N is admitted
 *   (the tolerance is on the safe side: never more than the limit);
 * - when an instance leaves, the others take its share at their next beat.
 *
 * The window is an hour: no token comes back while the test runs, so the
 * counts are exact. Each instance is a runtime with its own HTTP listener.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { PostgresTaskStore } from '../../src/store/index.js';
import { freshSchema, TEST_PG_URL } from '../support/postgres.js';
import { standardHeaders } from '../support/httpRaw.js';
import { envelope } from '../support/extTasksClient.js';
import { NO_TASKS_CAPABILITIES, sleepMs } from '../support/taskOps.js';

const LIMIT = 10;
const LEASE_MS = 600;

interface Instance {
  runtime: TaskvisorRuntime;
  url: string;
}

async function startInstance(schema: string): Promise<Instance> {
  const runtime = createRuntime({
    store: new PostgresTaskStore({ url: TEST_PG_URL, schema, poolSize: 2, leaseMs: LEASE_MS }),
    logger: silentLogger,
    reapIntervalMs: 0,
    rateLimits: { tools: [{ tools: ['limited_*'], limit: LIMIT, windowMs: 3_600_000 }] },
  });
  runtime.tool('limited_echo', { taskBehavior: 'never' }, () => 'echo');
  await runtime.start();
  // The principal is named by a header (an authenticate hook): the limits are per principal.
  const url = (
    await listenHttp(runtime, { port: 0, authenticate: (request) => ({ id: request.headers.get('x-principal') ?? 'anonymous' }) })
  ).url;
  return { runtime, url };
}

/** One tools/call; true when admitted, false when a rate limit refused it (429). */
async function call(instance: Instance, principal: string): Promise<boolean> {
  const params = { name: 'limited_echo', arguments: {}, _meta: envelope(NO_TASKS_CAPABILITIES) };
  const response = await fetch(instance.url, {
    method: 'POST',
    headers: { ...standardHeaders('tools/call', params), 'x-principal': principal },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }),
  });
  await response.text();
  assert.ok(response.status === 200 || response.status === 429, `status ${response.status}`);
  return response.status === 200;
}

/** Waits until `instance` enforces `share` of each rate (its cluster node counted the instances). */
async function untilShare(instance: Instance, share: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (instance.runtime.rateLimiter!.share !== share) {
    if (Date.now() > deadline) assert.fail(`share stayed ${instance.runtime.rateLimiter!.share}, expected ${share}`);
    await sleepMs(LEASE_MS / 6);
  }
}

describe('rate limits across two instances on PostgreSQL: each instance takes an equal share', () => {
  let schema: Awaited<ReturnType<typeof freshSchema>>;
  let a: Instance;
  let b: Instance;

  before(async () => {
    schema = await freshSchema('tv_rate');
    a = await startInstance(schema.schema);
    b = await startInstance(schema.schema);
    await untilShare(a, 1 / 2);
    await untilShare(b, 1 / 2);
  });
  after(async () => {
    await a?.runtime.close();
    await b?.runtime.close().catch(() => {});
    await schema?.drop();
  });

  it('spread evenly over both instances, exactly the limit is admitted', async () => {
    let admitted = 0;
    for (let i = 0; i < 3 * LIMIT; i++) if (await call(i % 2 === 0 ? a : b, 'even')) admitted++;
    assert.equal(admitted, LIMIT);
  });

  it('all on one instance, limit / 2 is admitted: never more than the limit', async () => {
    let admitted = 0;
    for (let i = 0; i < 3 * LIMIT; i++) if (await call(a, 'skewed')) admitted++;
    assert.equal(admitted, LIMIT / 2);
  });

  it('when one instance leaves, the survivor takes the whole rate at its next beat', async () => {
    await b.runtime.close();
    await untilShare(a, 1);
    let admitted = 0;
    for (let i = 0; i < 3 * LIMIT; i++) if (await call(a, 'after')) admitted++;
    assert.equal(admitted, LIMIT);
  });
});
