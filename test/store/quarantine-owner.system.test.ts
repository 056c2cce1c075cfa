/**
 * A damaged record set aside, seen by principals (I-7, T-14): a quarantined record keeps its
 * owner, so only that principal is told the id was set aside; any other
 * principal — and every principal when the owner cannot be told from what
 * is left — gets exactly what an unknown id gets. Stores set aside before
 * owners were kept (sqlite schema 2, postgres migration 2, lowdb notes
 * without an owner) are upgraded in place: the owner is read from the kept
 * bytes where they still tell it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { requireSqliteDriver } from '../../src/store/sqliteDriver.js';
import demoTools from '../../examples/demo/tools.js';
import { createRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { LowdbTaskStore, PostgresTaskStore, SqliteTaskStore, type TaskStore } from '../../src/store/index.js';
import { MIGRATIONS as PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { SQLITE_MIGRATIONS, SQLITE_SCHEMA_VERSION } from '../../src/store/SqliteTaskStore.js';
import { locateTask } from '../../src/store/taskFiles.js';
import { TaskDamagedError, TaskRecordDamagedError } from '../../src/store/TaskStore.js';
import { postJsonRpc } from '../support/httpRaw.js';
import { freshSchema, pgQuery, TEST_PG_URL } from '../support/postgres.js';
import { tempDir } from '../support/processes.js';
import { makeRecord } from './fixtures.js';

/** better-sqlite3 as the stores load it (the major this Node runs). */
const Database = requireSqliteDriver();

const newId = () => randomBytes(16).toString('hex');

/** Three records set aside under the old schema: one still parses (alice's), one cut short (bob's), one whose owner is gone. */
function oldQuarantine() {
  const parsed = newId();
  const cut = newId();
  const lost = newId();
  return {
    parsed,
    cut,
    lost,
    rows: [
      { taskId: parsed, stored: JSON.stringify({ ...makeRecord({ taskId: parsed, owner: 'alice' }), ttlMs: 'soon' }) },
      { taskId: cut, stored: `{"taskId":${JSON.stringify(cut)},"owner":"bob","tool":"sleep","stat` },
      { taskId: lost, stored: '{"broken' },
    ],
  };
}

/** What every store must answer for the records of {@link oldQuarantine} once upgraded. */
async function assertOwnersKept(store: TaskStore, ids: ReturnType<typeof oldQuarantine>): Promise<void> {
  const owners = new Map((await store.listQuarantined()).map((entry) => [entry.taskId, entry.owner]));
  assert.deepEqual(
    [owners.get(ids.parsed), owners.get(ids.cut), owners.get(ids.lost)],
    ['alice', 'bob', undefined],
    'owners read from the kept bytes',
  );
  await assert.rejects(store.get(ids.parsed, 'alice'), TaskRecordDamagedError);
  await assert.rejects(store.get(ids.cut, 'bob'), TaskRecordDamagedError);
  assert.equal(await store.get(ids.parsed, 'mallory'), undefined, "another principal's quarantined id is unknown to mallory");
  assert.equal(await store.get(ids.cut, 'alice'), undefined);
  // Owner not to be told: unknown to every principal, still damaged to the runtime and operators.
  assert.equal(await store.get(ids.lost, 'alice'), undefined);
  assert.equal(await store.get(ids.lost, 'anonymous'), undefined);
  await assert.rejects(store.get(ids.lost), TaskRecordDamagedError);
  // The deprecated name is the same class: code that catches it keeps working.
  await assert.rejects(store.get(ids.lost), TaskDamagedError);
}

describe('a quarantined record keeps its owner (only its owner learns it was set aside)', () => {
  it('sqlite: a schema-2 file is upgraded in place to schema 3; owners come from the kept bytes', async () => {
    const dir = await tempDir('taskvisor-qowner-sqlite-');
    const file = join(dir.path, 'tasks.sqlite');
    const ids = oldQuarantine();
    try {
      // The file exactly as schema 2 left it.
      const db = new Database(file);
      db.exec('CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value)');
      for (const sql of SQLITE_MIGRATIONS.slice(0, 2)) db.exec(sql);
      db.prepare(`INSERT INTO meta (key, value) VALUES ('schema_version', 2)`).run();
      const insert = db.prepare('INSERT INTO quarantine (task_id, record, reason, quarantined_at) VALUES (?, ?, ?, ?)');
      for (const row of ids.rows) insert.run(row.taskId, row.stored, 'damaged before the upgrade', Date.now());
      db.close();

      const store = new SqliteTaskStore({ file });
      await store.open();
      try {
        const check = new Database(file, { readonly: true });
        assert.equal(check.prepare(`SELECT value FROM meta WHERE key = 'schema_version'`).pluck().get(), SQLITE_SCHEMA_VERSION);
        assert.equal(SQLITE_SCHEMA_VERSION, 3);
        check.close();
        await assertOwnersKept(store, ids);
        // Set aside now: the owner column (not the damaged bytes) says whose it is.
        const fresh = makeRecord({ taskId: newId(), owner: 'carol' });
        await store.create(fresh);
        await store.quarantine(fresh.taskId, 'a test sets it aside');
        await assert.rejects(store.get(fresh.taskId, 'carol'), TaskRecordDamagedError);
        assert.equal(await store.get(fresh.taskId, 'mallory'), undefined);
      } finally {
        await store.close();
      }
    } finally {
      await dir.remove();
    }
  });

  it('postgres: a schema at migration 2 is upgraded in place to the current version; owners come from the kept bytes', async () => {
    const { schema, drop } = await freshSchema('tv_qowner');
    const ids = oldQuarantine();
    const q = `"${schema}"`;
    try {
      await pgQuery(`CREATE SCHEMA ${q}`);
      await pgQuery(`CREATE TABLE ${q}.schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
      for (const [index, sql] of PG_MIGRATIONS.slice(0, 2).entries()) {
        await pgQuery(sql.replaceAll('$S', q));
        await pgQuery(`INSERT INTO ${q}.schema_migrations (version) VALUES ($1)`, [index + 1]);
      }
      for (const row of ids.rows)
        await pgQuery(`INSERT INTO ${q}.quarantine (task_id, record, reason, quarantined_at) VALUES ($1, $2, 'old', $3)`, [
          row.taskId,
          row.stored,
          Date.now(),
        ]);
      const store = new PostgresTaskStore({ url: TEST_PG_URL, schema, poolSize: 2 });
      await store.open();
      try {
        assert.equal((await pgQuery(`SELECT max(version) AS v FROM ${q}.schema_migrations`)).rows[0]?.v, PG_MIGRATIONS.length);
        await assertOwnersKept(store, ids);
        const fresh = makeRecord({ taskId: newId(), owner: 'carol' });
        await store.create(fresh);
        // The record's bytes are damaged behind the store's back: the owner column still says whose it was.
        await pgQuery(`UPDATE ${q}.tasks SET record = '{"broken' WHERE task_id = $1`, [fresh.taskId]);
        await store.quarantine(fresh.taskId, 'a test sets it aside');
        await assert.rejects(store.get(fresh.taskId, 'carol'), TaskRecordDamagedError);
        assert.equal(await store.get(fresh.taskId, 'mallory'), undefined);
      } finally {
        await store.ownership?.leave();
        await store.close();
      }
    } finally {
      await drop();
    }
  });

  it('lowdb: notes written before owners were kept get the owner from the kept bytes', async () => {
    const dir = await tempDir('taskvisor-qowner-lowdb-');
    const ids = oldQuarantine();
    try {
      const quarantine = join(dir.path, 'quarantine');
      await mkdir(quarantine, { recursive: true });
      for (const row of ids.rows) {
        const location = locateTask(join(dir.path, 'tasks'), row.taskId)!;
        const kept = join(quarantine, `${location.shard}-${row.taskId}.json`);
        await writeFile(kept, row.stored);
        await writeFile(`${kept}.reason.json`, JSON.stringify({ taskId: row.taskId, reason: 'old', quarantinedAt: Date.now() }));
      }
      const store = new LowdbTaskStore({ dir: dir.path, onCorrupt: () => {} });
      await store.open();
      try {
        await assertOwnersKept(store, ids);
      } finally {
        await store.close();
      }
    } finally {
      await dir.remove();
    }
  });

  it('lowdb over HTTP: bytes that no longer tell an owner answer every principal as an unknown id', async () => {
    const dir = await tempDir('taskvisor-qowner-http-');
    const taskId = newId();
    try {
      const file = locateTask(join(dir.path, 'tasks'), taskId)!.file;
      await mkdir(join(file, '..'), { recursive: true });
      await writeFile(file, '{"broken');
      const logged: string[] = [];
      const store = new LowdbTaskStore({ dir: dir.path, onCorrupt: (where) => logged.push(where) });
      const runtime = createRuntime({ store, logger: { info: () => {}, error: (message) => logged.push(message) } });
      runtime.use(...demoTools);
      await runtime.start();
      const listener = await listenHttp(runtime, {
        port: 0,
        authenticate: (request) => ({ id: request.headers.get('x-principal') ?? 'anonymous' }),
      });
      try {
        const as = (principal: string) => ({ headers: { 'x-principal': principal } });
        const unknown = await postJsonRpc(listener.url, 'tasks/get', { taskId: newId() }, as('anonymous'));
        assert.equal((unknown.message?.error as { code?: number })?.code, -32602, unknown.text);
        for (const principal of ['anonymous', 'alice']) {
          const damaged = await postJsonRpc(listener.url, 'tasks/get', { taskId }, as(principal));
          assert.deepEqual(damaged.message?.error, unknown.message?.error, `${principal}: ${damaged.text}`);
        }
        // Set aside and reported all the same: operators find it.
        assert.deepEqual(
          (await store.listQuarantined()).map((entry) => [entry.taskId, entry.owner]),
          [[taskId, undefined]],
        );
        assert.ok(logged.some((line) => line.includes(taskId)));
      } finally {
        await listener.close();
        await runtime.close();
      }
    } finally {
      await dir.remove();
    }
  });
});
