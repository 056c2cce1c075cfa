import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { requireSqliteDriver } from '../../src/store/sqliteDriver.js';
import { parseConfig } from '../../src/config/loadConfig.js';
import { serve } from '../../src/cli/serve.js';
import {
  createTaskStore,
  SQLITE_SCHEMA_VERSION,
  SqliteTaskStore,
  TaskExistsError,
  type SqliteTaskStoreOptions,
} from '../../src/store/index.js';
import { runTaskStoreContract } from './contract.js';
import { plantSqlite } from './planting.js';
import { makeRecord } from './fixtures.js';

/** better-sqlite3 as the stores load it (the major this Node runs). */
const Database = requireSqliteDriver();

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'taskvisor-sqlite-'));
}

async function openStore(options: SqliteTaskStoreOptions): Promise<SqliteTaskStore> {
  const store = new SqliteTaskStore({
    onCorrupt: (taskId, error) => {
      throw new Error(`unexpected corrupt record ${taskId}: ${error.message}`);
    },
    ...options,
  });
  await store.open();
  return store;
}

runTaskStoreContract('SqliteTaskStore', async () => {
  const dir = await tempDir();
  const file = join(dir, 'tasks.sqlite');
  const reported: string[] = [];
  const onCorrupt = (taskId: string) => void reported.push(taskId);
  return {
    store: await openStore({ file, onCorrupt }),
    reopen: () => openStore({ file, onCorrupt }),
    cleanup: () => rm(dir, { recursive: true, force: true }),
    plant: (row) => plantSqlite(file, row),
    reported,
  };
});

// One connection's private database: nothing can reopen it or plant a record in it.
runTaskStoreContract(
  'SqliteTaskStore (:memory:)',
  async () => ({
    store: await openStore({ file: ':memory:' }),
    cleanup: async () => undefined,
  }),
  { durable: false, plants: false },
);

describe('SqliteTaskStore specifics', () => {
  let dir: string;
  let n = 0;
  before(async () => {
    dir = await tempDir();
  });
  after(() => rm(dir, { recursive: true, force: true }));
  const freshFile = (): string => join(dir, `db-${++n}`, 'tasks.sqlite');

  it('group commit: 200 concurrent creates take fewer transactions than callers, and all are durable', async () => {
    const file = freshFile();
    const store = await openStore({ file });
    const before = store.commits;
    const records = Array.from({ length: 200 }, () => makeRecord());
    await Promise.all(records.map((record) => store.create(record)));
    const used = store.commits - before;
    assert.ok(used >= 1 && used < records.length, `expected fewer than 200 transactions, got ${used}`);
    assert.equal(used, 1, 'issued in one tick: one batch');
    await store.close();
    const reopened = await openStore({ file });
    assert.equal((await reopened.list()).length, 200);
    await reopened.close();
  });

  it('sequential awaited writes commit one transaction each', async () => {
    const store = await openStore({ file: freshFile() });
    const record = makeRecord();
    const before = store.commits;
    await store.create(record);
    await store.put({ ...record, version: 2 });
    await store.delete(record.taskId);
    assert.equal(store.commits - before, 3);
    await store.close();
  });

  it('a duplicate inside one batch rejects only the duplicate', async () => {
    const store = await openStore({ file: freshFile() });
    const existing = makeRecord();
    await store.create(existing);
    const first = makeRecord({ statusMessage: 'first' });
    const before = store.commits;
    const outcomes = await Promise.allSettled([
      store.create(first),
      store.create(makeRecord({ taskId: first.taskId, statusMessage: 'second' })),
      store.create(makeRecord({ taskId: existing.taskId, statusMessage: 'clash with stored' })),
      store.create(makeRecord({ statusMessage: 'other' })),
    ]);
    assert.equal(store.commits - before, 1);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
    );
    const reasons = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
    assert.ok(reasons.every((reason) => reason instanceof TaskExistsError));
    assert.deepEqual(
      reasons.map((reason) => reason.taskId),
      [first.taskId, existing.taskId],
    );
    assert.deepEqual(await store.get(first.taskId), first);
    assert.deepEqual(await store.get(existing.taskId), existing);
    assert.equal((await store.list()).length, 3);
    await store.close();
  });

  it('a stale put in the same batch as a newer one is ignored; create, put and delete apply in call order', async () => {
    const store = await openStore({ file: freshFile() });
    const record = makeRecord();
    await store.create(record);
    const before = store.commits;
    const fresh = makeRecord();
    const gone = makeRecord();
    await Promise.all([
      store.put({ ...record, version: 5, statusMessage: 'v5' }),
      store.put({ ...record, version: 4, statusMessage: 'stale v4' }),
      store.put({ ...record, version: 5, statusMessage: 'other v5' }),
      // Created and updated in the same batch: the put sees the create.
      store.create(fresh),
      store.put({ ...fresh, version: 2, status: 'completed' }),
      // Created, then deleted, then a late put: stays deleted.
      store.create(gone),
      store.delete(gone.taskId).then((removed) => assert.equal(removed, true)),
      store.put({ ...gone, version: 3 }),
    ]);
    assert.equal(store.commits - before, 1);
    assert.equal((await store.get(record.taskId))?.statusMessage, 'v5');
    assert.deepEqual(await store.get(fresh.taskId), { ...fresh, version: 2, status: 'completed' });
    assert.equal(await store.get(gone.taskId), undefined);
    await store.close();
  });

  it('a failed commit rejects every caller of the batch with an error naming the file; the store keeps working', async () => {
    const file = freshFile();
    const store = await openStore({ file, busyTimeoutMs: 50 });
    const blocker = new Database(file);
    blocker.exec('BEGIN IMMEDIATE');
    try {
      const outcomes = await Promise.allSettled([store.create(makeRecord()), store.create(makeRecord())]);
      for (const outcome of outcomes) {
        assert.equal(outcome.status, 'rejected');
        assert.match(String(outcome.reason), /database is locked/);
        assert.ok(String(outcome.reason).includes(file));
      }
    } finally {
      blocker.exec('ROLLBACK');
      blocker.close();
    }
    const record = makeRecord();
    await store.create(record);
    assert.deepEqual(await store.get(record.taskId), record);
    await store.close();
  });

  it('uses WAL with synchronous=FULL and the indexed schema, at the current schema version', async () => {
    const file = freshFile();
    const store = await openStore({ file });
    await store.create(makeRecord({ createdAt: 1_000, ttlMs: 500 }));
    await store.create(makeRecord({ ttlMs: null }));
    await store.close();
    const db = new Database(file, { readonly: true });
    try {
      assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(db.prepare(`SELECT value FROM meta WHERE key = 'schema_version'`).pluck().get(), SQLITE_SCHEMA_VERSION);
      assert.equal(SQLITE_SCHEMA_VERSION, 3);
      const indexes = db
        .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tasks' AND sql IS NOT NULL ORDER BY name`)
        .pluck()
        .all();
      assert.deepEqual(indexes, ['tasks_expires', 'tasks_owner_created', 'tasks_status']);
      const expires = db.prepare('SELECT expires_at FROM tasks ORDER BY expires_at').pluck().all();
      assert.deepEqual(expires, [null, 1_500]);
      const plan = (sql: string): string =>
        (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join('; ');
      assert.match(plan(`SELECT record FROM tasks WHERE status IN ('working', 'input_required')`), /USING INDEX tasks_status/);
      assert.match(
        plan('SELECT task_id FROM tasks WHERE expires_at <= 5 ORDER BY expires_at, task_id LIMIT 10'),
        /USING (COVERING )?INDEX tasks_expires/,
      );
      assert.match(
        plan(`SELECT record FROM tasks WHERE owner = 'a' ORDER BY created_at DESC, task_id LIMIT 10`),
        /USING INDEX tasks_owner_created/,
      );
    } finally {
      db.close();
    }
  });

  it('the file (and its WAL) is created with mode 0600, parent folders included', async () => {
    const file = join(dir, 'mode', 'deep', 'tasks.sqlite');
    const store = await openStore({ file });
    await store.create(makeRecord());
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal((await stat(`${file}-wal`)).mode & 0o777, 0o600);
    await store.close();
  });

  it('a schema version newer than the code knows is refused with an error naming the file and both versions', async () => {
    const file = freshFile();
    const store = await openStore({ file });
    await store.close();
    const db = new Database(file);
    db.prepare(`UPDATE meta SET value = ? WHERE key = 'schema_version'`).run(SQLITE_SCHEMA_VERSION + 41);
    db.close();
    const newer = new SqliteTaskStore({ file });
    await assert.rejects(newer.open(), (error: Error) => {
      assert.ok(error.message.includes(file), error.message);
      assert.match(
        error.message,
        new RegExp(
          `has schema version ${SQLITE_SCHEMA_VERSION + 41}, but this taskvisor knows only up to schema version ${SQLITE_SCHEMA_VERSION}:`,
        ),
      );
      return true;
    });
    await assert.rejects(newer.get('x'), /store is closed/);
  });

  it('a file that is not a SQLite database (or has a damaged header) is refused with an error naming it, and left untouched', async () => {
    const text = freshFile();
    await openStore({ file: text }).then((s) => s.close());
    await writeFile(text, 'this is not a database, just some text that is long enough to fill a header '.repeat(20));
    const before = await readFile(text);
    await assert.rejects(new SqliteTaskStore({ file: text }).open(), (error: Error) => {
      assert.ok(error.message.includes(text), error.message);
      assert.match(error.message, /not a database/);
      return true;
    });
    assert.deepEqual(await readFile(text), before);

    const damaged = freshFile();
    const store = await openStore({ file: damaged });
    await store.create(makeRecord());
    await store.close();
    const bytes = await readFile(damaged);
    bytes.fill(0x5a, 0, 100); // the 100-byte SQLite header
    await writeFile(damaged, bytes);
    await assert.rejects(new SqliteTaskStore({ file: damaged }).open(), (error: Error) => error.message.includes(damaged));
  });

  it('a path that is a folder is refused with an error naming it', async () => {
    await assert.rejects(new SqliteTaskStore({ file: dir }).open(), (error: Error) => error.message.includes(dir));
  });

  it('hostile ids round-trip; ids longer than 200 characters, empty or malformed are refused by create and unknown elsewhere', async () => {
    const file = freshFile();
    const store = await openStore({ file });
    const hostile = ["'; DROP TABLE tasks; --", 'nul\u0000byte', 'émoji✓🙂', 'Case', 'case', '%', '_', 'y'.repeat(200)];
    const records = hostile.map((taskId) => makeRecord({ taskId }));
    for (const record of records) await store.create(record);
    for (const record of records) assert.deepEqual(await store.get(record.taskId), record);
    assert.equal(await store.get('nul'), undefined);
    for (const taskId of ['x'.repeat(201), '', 'lone\uD800surrogate']) {
      await assert.rejects(store.create(makeRecord({ taskId })), (error: Error) => error.message.includes(file));
      assert.equal(await store.get(taskId), undefined);
      assert.equal(await store.delete(taskId), false);
      await store.put(makeRecord({ taskId, version: 3 }));
    }
    await store.close();
    const reopened = await openStore({ file });
    assert.equal((await reopened.list()).length, hostile.length);
    for (const record of records) assert.deepEqual(await reopened.get(record.taskId), record);
    await reopened.close();
  });

  it('a record with a non-finite number is refused before it can spoil a batch', async () => {
    const store = await openStore({ file: freshFile() });
    const good = makeRecord();
    const outcomes = await Promise.allSettled([store.create(makeRecord({ createdAt: Number.NaN })), store.create(good)]);
    assert.equal(outcomes[0]?.status, 'rejected');
    assert.match(String(outcomes[0].reason), /createdAt is not a finite number/);
    assert.equal(outcomes[1]?.status, 'fulfilled');
    assert.deepEqual(await store.get(good.taskId), good);
    await store.close();
  });

  it('a row with an unreadable record: get answers TaskRecordDamagedError, reports it once and quarantines it (kept)', async () => {
    const file = freshFile();
    const store = await openStore({ file });
    const good = makeRecord();
    const bad = makeRecord();
    await store.create(good);
    await store.create(bad);
    await store.close();
    const db = new Database(file);
    db.prepare('UPDATE tasks SET record = ? WHERE task_id = ?').run('{"taskId": tru', bad.taskId);
    db.close();
    const reports: string[] = [];
    const reopened = new SqliteTaskStore({ file, onCorrupt: (taskId) => reports.push(taskId) });
    await reopened.open();
    await assert.rejects(
      reopened.get(bad.taskId),
      (error: Error) => error.name === 'TaskRecordDamagedError' && !error.message.includes(file),
    );
    assert.deepEqual(await reopened.listNonTerminal(), [good]);
    await assert.rejects(reopened.get(bad.taskId), { name: 'TaskRecordDamagedError' });
    assert.deepEqual(reports, [bad.taskId]);
    // Set aside before get answered: the move is committed.
    assert.deepEqual(
      (await reopened.listQuarantined()).map((entry) => [entry.taskId, entry.stored]),
      [[bad.taskId, '{"taskId": tru']],
    );
    await reopened.close();
  });

  it('rejects calls before open() and a second open()', async () => {
    await assert.rejects(new SqliteTaskStore({ file: ':memory:' }).get('x'), /store is not open/);
    const store = await openStore({ file: ':memory:' });
    await assert.rejects(store.open(), /open\(\) called on a store that is open/);
    await store.close();
    await store.close();
  });

  it('createTaskStore({ kind: "sqlite" }) builds one on the given file', async () => {
    const file = freshFile();
    const store = createTaskStore({ kind: 'sqlite', file });
    assert.ok(store instanceof SqliteTaskStore);
    await store.open();
    const record = makeRecord();
    await store.create(record);
    await store.close();
    const db = new Database(file, { readonly: true });
    assert.equal(db.prepare('SELECT count(*) FROM tasks WHERE task_id = ?').pluck().get(record.taskId), 1);
    db.close();
  });

  it('config: { kind: sqlite } is accepted, with or without file; serve resolves file relative to the config file', async () => {
    assert.deepEqual(parseConfig('store:\n  kind: sqlite\n', 'x.yaml').store, { kind: 'sqlite' });
    assert.deepEqual(parseConfig('store:\n  kind: sqlite\n  file: db/t.sqlite\n', 'x.yaml').store, { kind: 'sqlite', file: 'db/t.sqlite' });
    assert.throws(() => parseConfig('store:\n  kind: sqlite\n  dir: x\n', 'x.yaml'), /x\.yaml:3:3: store\.dir: unknown field/);

    const configDir = join(dir, 'served', 'conf');
    await mkdir(configDir, { recursive: true });
    const config = join(configDir, 'taskvisor.yaml');
    await writeFile(config, 'store:\n  kind: sqlite\n  file: ./data/tasks.sqlite\n');
    const served = await serve({ config, http: '127.0.0.1:0', quiet: true });
    try {
      assert.ok(served.runtime.store instanceof SqliteTaskStore);
      assert.equal(served.runtime.store.file, join(configDir, 'data', 'tasks.sqlite'));
      assert.equal((await stat(join(configDir, 'data', 'tasks.sqlite'))).mode & 0o777, 0o600);
    } finally {
      await served.stop();
    }
  });
});
