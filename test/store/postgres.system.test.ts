/**
 * The store contract against the real PostgreSQL (own schema per case), plus
 * what only a shared store has: concurrent migrations, fencing, atomic claims,
 * command routing and the change feed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  PostgresTaskStore,
  TaskExistsError,
  TaskFencedError,
  TaskRecordDamagedError,
  POSTGRES_SCHEMA_VERSION,
  type PostgresTaskStoreOptions,
} from '../../src/store/index.js';
import type { TaskChange } from '../../src/store/TaskStore.js';
import { freshSchema, pgQuery, TEST_PG_URL } from '../support/postgres.js';
import { waitFor } from '../support/processes.js';
import { runTaskStoreContract } from './contract.js';
import { plantPostgres } from './planting.js';
import { makeRecord } from './fixtures.js';

async function openStore(options: Partial<PostgresTaskStoreOptions> & { schema: string }): Promise<PostgresTaskStore> {
  const store = new PostgresTaskStore({ url: TEST_PG_URL, poolSize: 4, ...options });
  await store.open();
  return store;
}

runTaskStoreContract('PostgresTaskStore', async () => {
  const { schema, drop } = await freshSchema();
  // Reopened under the same instance id: the contract reopens "the same process".
  const instanceId = `contract-${schema}`;
  const reported: string[] = [];
  const onCorrupt = (taskId: string) => void reported.push(taskId);
  return {
    store: await openStore({ schema, instanceId, onCorrupt }),
    reopen: () => openStore({ schema, instanceId, onCorrupt }),
    cleanup: drop,
    plant: (row) => plantPostgres(schema, row),
    reported,
  };
});

/** Runs `fn` with a fresh schema, dropped afterwards whatever happens. */
async function withSchema(fn: (schema: string) => Promise<void>): Promise<void> {
  const { schema, drop } = await freshSchema();
  try {
    await fn(schema);
  } finally {
    await drop();
  }
}

describe('PostgresTaskStore: shared-store capabilities', () => {
  it('a read-only view reports a damaged record once and moves nothing, like an embedded store opened without its lock', () =>
    withSchema(async (schema) => {
      const owner = await openStore({ schema });
      await owner.close();
      const damaged = makeRecord();
      const { ttlMs: _dropped, ...withoutTtl } = damaged;
      await plantPostgres(schema, { taskId: damaged.taskId, owner: 'alice', text: JSON.stringify(withoutTtl) });
      const reported: string[] = [];
      const view = await openStore({ schema, readOnly: true, onCorrupt: (taskId) => void reported.push(taskId) });
      try {
        await assert.rejects(view.get(damaged.taskId), TaskRecordDamagedError);
        assert.deepEqual(await view.list(), []);
        await assert.rejects(view.get(damaged.taskId), TaskRecordDamagedError);
        assert.deepEqual(reported, [damaged.taskId]);
        assert.deepEqual(await view.listQuarantined(), []);
        assert.equal((await pgQuery(`SELECT 1 FROM "${schema}".tasks WHERE task_id = $1`, [damaged.taskId])).rowCount, 1);
      } finally {
        await view.close();
      }
    }));

  it('five instances opening one new schema at once migrate it exactly once', () =>
    withSchema(async (schema) => {
      const stores = await Promise.all(Array.from({ length: 5 }, () => openStore({ schema })));
      try {
        const rows = await pgQuery<{ version: number }>(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`);
        assert.deepEqual(
          rows.rows.map((row) => row.version),
          Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1),
        );
      } finally {
        await Promise.all(stores.map((store) => store.close()));
      }
    }));

  it('the recovery scan reads keyset pages through the partial index of unfinished tasks (start-up recovery of 100k tasks)', () =>
    withSchema(async (schema) => {
      const store = await openStore({ schema });
      try {
        // Enough unfinished rows for the planner to prefer the index over sorting them all, among many finished ones
        // (a scan that walked the whole table, or an OFFSET, would read those too).
        await pgQuery(
          `INSERT INTO ${schema}.tasks (task_id, owner, tool, status, created_at, last_updated_at, ttl_ms, version, machine_version, record)
           SELECT 'done-' || n, 'p', 't', 'completed', 0, 0, NULL, 1, 1, '{}' FROM generate_series(1, 5000) AS n`,
        );
        await pgQuery(
          `INSERT INTO ${schema}.tasks (task_id, owner, tool, status, created_at, last_updated_at, ttl_ms, version, machine_version, record)
           SELECT md5(n::text), 'p', 't', 'working', 0, 0, NULL, 1, 1,
             json_build_object('taskId', md5(n::text), 'owner', 'p', 'tool', 't', 'status', 'working', 'createdAt', 0,
               'lastUpdatedAt', 0, 'ttlMs', NULL, 'version', 1, 'machineVersion', 1)::text
           FROM generate_series(1, 3000) AS n`,
        );
        await pgQuery(`ANALYZE ${schema}.tasks`);
        const scans = async () =>
          Number(
            (
              await pgQuery<{ n: string }>(
                `SELECT idx_scan AS n FROM pg_stat_user_indexes WHERE schemaname = $1 AND indexrelname = 'tasks_unfinished_by_id'`,
                [schema],
              )
            ).rows[0]?.n ?? 0,
          );
        const before = await scans();
        const seen: string[] = [];
        for await (const page of store.scanNonTerminal(250)) {
          assert.ok(page.length >= 1 && page.length <= 250, `page of ${page.length}`);
          seen.push(...page.map((record) => record.taskId));
        }
        // Every unfinished row once, in id order (each page continues after the last id of the one before).
        assert.equal(seen.length, 3000);
        assert.deepEqual(seen, [...seen].sort());
        assert.equal(new Set(seen).size, 3000);
        // Statistics reach pg_stat_user_indexes a little after the reads: wait for them.
        await waitFor(async () => (await scans()) > before, { timeoutMs: 20_000, what: 'index scans of tasks_unfinished_by_id' });
      } finally {
        await store.close();
      }
    }));

  it('refuses a schema newer than the code, naming it', () =>
    withSchema(async (schema) => {
      await (await openStore({ schema })).close();
      await pgQuery(`INSERT INTO ${schema}.schema_migrations (version) VALUES (999)`);
      await assert.rejects(openStore({ schema }), new RegExp(`schema ${schema} is at version 999, newer than this taskvisor understands`));
    }));

  it('an unreachable server is a clear error', async () => {
    const store = new PostgresTaskStore({ url: 'postgres://postgres@127.0.0.1:1/test', schema: 'nowhere' });
    await assert.rejects(
      store.open(),
      /cannot open postgres postgres:\/\/postgres@127\.0\.0\.1:1\/test schema nowhere: connection refused/,
    );
  });

  it('a bad schema name is refused before connecting', () => {
    assert.throws(() => new PostgresTaskStore({ url: TEST_PG_URL, schema: 'Bad-Name' }), /schema "Bad-Name" must match/);
  });

  it('a batch of creates is one commit; a duplicate in the batch or in the table rejects only its caller', () =>
    withSchema(async (schema) => {
      const store = await openStore({ schema });
      try {
        await store.create(makeRecord({ taskId: 'taken' }));
        const before = store.commits;
        const outcomes = await Promise.allSettled([
          ...Array.from({ length: 30 }, (_, i) => store.create(makeRecord({ taskId: `t${i}` }))),
          store.create(makeRecord({ taskId: 't0' })),
          store.create(makeRecord({ taskId: 'taken' })),
        ]);
        assert.equal(store.commits - before, 1);
        assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 30);
        for (const outcome of outcomes.slice(30)) {
          assert.equal(outcome.status, 'rejected');
          assert.ok(outcome.reason instanceof TaskExistsError);
        }
      } finally {
        await store.close();
      }
    }));

  it("after a claim, the old owner's writes are fenced; each expired task is claimed by exactly one of two racing survivors", () =>
    withSchema(async (schema) => {
      const a = await openStore({ schema, leaseMs: 200 });
      const b = await openStore({ schema, leaseMs: 60_000 });
      const c = await openStore({ schema, leaseMs: 60_000 });
      try {
        await a.join();
        await b.join();
        await c.join();
        const ids = Array.from({ length: 40 }, (_, i) => `task-${i}`);
        await Promise.all(ids.map((taskId) => a.create(makeRecord({ taskId }))));
        // A stops renewing; once its lease is over, B and C race.
        await waitFor(
          async () =>
            (await pgQuery(`SELECT 1 FROM ${schema}.instances WHERE instance_id = $1 AND lease_expires_at < now()`, [a.instanceId]))
              .rowCount === 1,
          {
            what: 'the lease of A to lapse',
            timeoutMs: 20_000,
          },
        );
        assert.equal(await a.renewLease(), false, 'an expired lease is not renewed');
        const [byB, byC] = await Promise.all([b.claimExpired(), c.claimExpired()]);
        const claimed = [...byB, ...byC].map((record) => record.taskId).sort();
        assert.deepEqual(claimed, [...ids].sort(), 'every task claimed exactly once');
        const winner = byB.length > 0 ? b : c;
        const taskId = (byB[0] ?? byC[0])!.taskId;
        const stale = makeRecord({ taskId, version: 5, status: 'completed', snapshot: undefined });
        await assert.rejects(a.put(stale), TaskFencedError);
        await winner.put(makeRecord({ taskId, version: 6, status: 'completed', snapshot: undefined }));
        assert.equal((await b.get(taskId))?.version, 6);
        assert.deepEqual(await b.claimExpired(), [], 'nothing left to claim');
      } finally {
        await Promise.all([a.close(), b.close(), c.close()]);
      }
    }));

  it("putMany of the old owner after a claim is fenced as a whole: nothing of it is stored; the new owner's lands", () =>
    withSchema(async (schema) => {
      const a = await openStore({ schema, leaseMs: 200 });
      const b = await openStore({ schema, leaseMs: 60_000 });
      try {
        await a.join();
        await b.join();
        const ids = ['p-0', 'p-1', 'p-2'];
        await Promise.all(ids.map((taskId) => a.create(makeRecord({ taskId }))));
        await a.putMany([makeRecord({ taskId: 'p-0', version: 2, statusMessage: 'a v2' })]);
        await waitFor(
          async () =>
            (await pgQuery(`SELECT 1 FROM ${schema}.instances WHERE instance_id = $1 AND lease_expires_at < now()`, [a.instanceId]))
              .rowCount === 1,
          { what: 'the lease of A to lapse', timeoutMs: 20_000 },
        );
        assert.deepEqual((await b.claimExpired()).map((record) => record.taskId).sort(), ids);
        // A task A never ran is not fenced for A (an admin write): alone it would land.
        await b.create(makeRecord({ taskId: 'free' }));
        // The batch's other tasks are another instance's now: the whole batch is refused, `free` included (all or none).
        const late = [...ids, 'free'].map((taskId) => makeRecord({ taskId, version: 3, status: 'failed', snapshot: undefined }));
        await assert.rejects(a.putMany(late), TaskFencedError);
        for (const taskId of [...ids, 'free']) assert.notEqual((await b.get(taskId))?.version, 3, taskId);
        await a.putMany([makeRecord({ taskId: 'free', version: 3, statusMessage: 'admin' })]);
        assert.equal((await b.get('free'))?.statusMessage, 'admin');
        await b.putMany(ids.map((taskId) => makeRecord({ taskId, version: 4, status: 'failed', snapshot: undefined })));
        for (const taskId of ids) assert.equal((await b.get(taskId))?.version, 4);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    }));

  it('commands reach the owner through NOTIFY; the feed reports writes and resyncs after its connection is killed', () =>
    withSchema(async (schema) => {
      const owner = await openStore({ schema });
      const other = await openStore({ schema });
      try {
        await owner.join();
        await other.join();
        let commandsSignalled = 0;
        let resyncs = 0;
        const changes: TaskChange[] = [];
        const stop = other.subscribe({ onChange: (change) => changes.push(change), onCommand: () => undefined, onResync: () => resyncs++ });
        let ownerResyncs = 0;
        const stopOwner = owner.subscribe({
          onChange: () => undefined,
          onCommand: () => commandsSignalled++,
          onResync: () => ownerResyncs++,
        });
        // Both LISTENs must be active: a NOTIFY sent before is lost (a real subscriber re-reads on resync).
        await waitFor(() => resyncs === 1 && ownerResyncs === 1, { what: 'both feeds to connect', timeoutMs: 20_000 });
        await owner.create(makeRecord({ taskId: 'x' }));
        assert.equal(await other.sendCommand('x', { type: 'cancel', principal: 'alice' }), true);
        assert.equal(await other.sendCommand('unknown', { type: 'cancel', principal: 'alice' }), false);
        await waitFor(() => commandsSignalled > 0, { what: 'the command NOTIFY', timeoutMs: 20_000 });
        assert.deepEqual(await owner.takeCommands(), [{ taskId: 'x', command: { type: 'cancel', principal: 'alice' } }]);
        assert.deepEqual(await owner.takeCommands(), []);
        await owner.put(makeRecord({ taskId: 'x', version: 2 }));
        await waitFor(() => changes.some((change) => change.taskId === 'x' && change.version === 2), {
          what: 'the change NOTIFY',
          timeoutMs: 20_000,
        });
        assert.equal(changes.find((change) => change.version === 2)?.instanceId, owner.instanceId);
        await pgQuery(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [
          `taskvisor ${other.instanceId} (listen)`,
        ]);
        await waitFor(() => resyncs === 2, { what: 'the feed to reconnect and resync', timeoutMs: 10_000 });
        stop();
        stopOwner();
      } finally {
        await Promise.all([owner.close(), other.close()]);
      }
    }));
});
