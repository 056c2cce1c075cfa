import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTaskStore, DurableJsonFile, LowdbTaskStore, type LowdbTaskStoreOptions } from '../../src/store/index.js';
import { FaultyTaskStore } from '../support/FaultyTaskStore.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';
import { runTaskStoreContract } from './contract.js';
import { plantLowdb } from './planting.js';
import { makeRecord } from './fixtures.js';

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'taskvisor-lowdb-'));
}

async function openStore(options: LowdbTaskStoreOptions): Promise<LowdbTaskStore> {
  const store = new LowdbTaskStore(options);
  await store.open();
  return store;
}

/** Fails the case if any record was reported corrupt. */
function strictOptions(dir: string): LowdbTaskStoreOptions {
  return {
    dir,
    onCorrupt: (path, error) => {
      throw new Error(`unexpected corrupt record ${path}: ${error.message}`);
    },
  };
}

runTaskStoreContract('LowdbTaskStore', async () => {
  const dir = await tempDir();
  const reported: string[] = [];
  const options = { dir, onCorrupt: (taskId: string) => void reported.push(taskId) };
  return {
    store: await openStore(options),
    reopen: () => openStore(options),
    cleanup: () => rm(dir, { recursive: true, force: true }),
    plant: (row) => plantLowdb(dir, row),
    reported,
  };
});

/** Independent re-implementation of the file naming, so the test checks the layout rather than echoing the code. */
function expectedPath(dir: string, taskId: string): string {
  const shard = createHash('sha256').update(taskId).digest('hex').slice(0, 2);
  const name = encodeURIComponent(taskId).replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return join(dir, 'tasks', shard, `${name}.json`);
}

/** The record files under `root` (the folder's lock, `store.lock` and its `.pid`, is not a record). */
async function listFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && !(e.parentPath === root && /^store\.lock(\.pid)?$/.test(e.name)))
    .map((e) => join(e.parentPath, e.name));
}

describe('LowdbTaskStore specifics', () => {
  let dir: string;
  before(async () => {
    dir = await tempDir();
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const freshDir = async (name: string): Promise<string> => {
    const path = join(dir, name);
    await mkdir(path);
    return path;
  };

  it('writes compact JSON at tasks/<sha256 shard>/<id>.json and leaves no temp file', async () => {
    const storeDir = await freshDir('layout');
    const store = await openStore(strictOptions(storeDir));
    const record = makeRecord();
    await store.create(record);
    // Durable in the journal already; checkpoint() moves it into its task file now.
    await store.checkpoint();
    const path = expectedPath(storeDir, record.taskId);
    assert.equal(await readFile(path, 'utf8'), JSON.stringify(record));
    await store.put({ ...record, version: 2, status: 'completed' });
    await store.checkpoint();
    assert.equal(await readFile(path, 'utf8'), JSON.stringify({ ...record, version: 2, status: 'completed' }));
    assert.deepEqual(await listFiles(storeDir), [path]);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    await store.close();
  });

  it('open() deletes leftover .tmp files and still loads the records', async () => {
    const storeDir = await freshDir('leftover');
    const first = await openStore(strictOptions(storeDir));
    const record = makeRecord();
    await first.create(record);
    await first.close();
    const path = expectedPath(storeDir, record.taskId);
    const shardDir = join(path, '..');
    const leftovers = [join(shardDir, `.${record.taskId}.json.4242.7.tmp`), join(shardDir, '.half-written.json.1.1.tmp')];
    for (const leftover of leftovers) await writeFile(leftover, '{"taskId":"trunc');
    const second = await openStore(strictOptions(storeDir));
    for (const leftover of leftovers) await assert.rejects(stat(leftover), { code: 'ENOENT' });
    assert.deepEqual(await second.get(record.taskId), record);
    assert.deepEqual(await listFiles(storeDir), [path]);
    await second.close();
  });

  it('open() reports corrupt or misplaced files through onCorrupt (by task id, as every store), sets them aside and loads the rest', async () => {
    const storeDir = await freshDir('corrupt');
    const first = await openStore(strictOptions(storeDir));
    const [good, truncated, notRecord, misplaced] = [makeRecord(), makeRecord(), makeRecord(), makeRecord()];
    for (const record of [good, truncated, notRecord]) await first.create(record);
    await first.close();
    const truncatedPath = expectedPath(storeDir, truncated.taskId);
    const notRecordPath = expectedPath(storeDir, notRecord.taskId);
    await writeFile(truncatedPath, JSON.stringify(truncated).slice(0, 40));
    await writeFile(notRecordPath, JSON.stringify({ ...notRecord, status: 'exploded' }));
    // A valid record under a name that is not its own.
    const misplacedPath = join(storeDir, 'tasks', 'ab', 'someone-else.json');
    await mkdir(join(storeDir, 'tasks', 'ab'), { recursive: true });
    await writeFile(misplacedPath, JSON.stringify(misplaced));

    const reports: { taskId: string; message: string }[] = [];
    const second = await openStore({ dir: storeDir, onCorrupt: (taskId, error) => reports.push({ taskId, message: error.message }) });
    assert.deepEqual(reports.map((r) => r.taskId).sort(), [truncated.taskId, notRecord.taskId, 'someone-else'].sort());
    assert.match(reports.find((r) => r.taskId === truncated.taskId)?.message ?? '', /invalid JSON/);
    assert.match(reports.find((r) => r.taskId === notRecord.taskId)?.message ?? '', /status is missing or unknown/);
    assert.match(reports.find((r) => r.taskId === 'someone-else')?.message ?? '', /another task id/);

    assert.deepEqual(await second.get(good.taskId), good);
    assert.deepEqual(await second.list(), [good]);
    assert.deepEqual(await second.listNonTerminal(), [good]);
    // Set aside as found: a stable error naming no file, the bytes kept in quarantine.
    await assert.rejects(
      second.get(truncated.taskId),
      (error: Error) => error.name === 'TaskRecordDamagedError' && !error.message.includes(storeDir),
    );
    const kept = await second.listQuarantined();
    assert.deepEqual(
      kept.map((entry) => entry.stored).sort(),
      [JSON.stringify(truncated).slice(0, 40), JSON.stringify({ ...notRecord, status: 'exploded' }), JSON.stringify(misplaced)].sort(),
    );
    // The quarantined file still occupies the id: create must not silently reuse it.
    await assert.rejects(second.create(makeRecord({ taskId: truncated.taskId })), { name: 'TaskExistsError' });
    await second.close();
  });

  it('hostile ids stay inside the store folder, encoded, and reload after reopen', async () => {
    const storeDir = await freshDir('hostile');
    const hostile = [
      '../../etc/passwd',
      '..',
      '.',
      '/absolute',
      'a\\b',
      '%2e%2e%2f',
      'nul\u0000byte',
      'tasks/../../../x',
      'émoji✓🙂',
      'Case',
      'case',
      "quote'star*tilde~",
      '/'.repeat(200), // encodes to 600 chars: stored under a hashed name
    ];
    const store = await openStore(strictOptions(storeDir));
    const records = hostile.map((taskId) => makeRecord({ taskId }));
    for (const record of records) await store.create(record);
    for (const record of records) assert.deepEqual(await store.get(record.taskId), record);

    await store.checkpoint();
    const files = await listFiles(storeDir);
    assert.equal(files.length, hostile.length);
    for (const file of files) {
      const parts = relative(storeDir, file).split(sep);
      assert.equal(parts.length, 3, `unexpected location ${file}`);
      assert.equal(parts[0], 'tasks');
      assert.match(parts[1] ?? '', /^[0-9a-f]{2}$/);
      assert.match(parts[2] ?? '', /^[A-Za-z0-9._%~-]+\.json$/);
      assert.ok(Buffer.byteLength(parts[2] ?? '') <= 210);
    }
    assert.equal(files.includes(expectedPath(storeDir, '../../etc/passwd')), true);
    await assert.rejects(stat(join(storeDir, '..', 'etc')), { code: 'ENOENT' });

    await store.close();
    const reopened = await openStore(strictOptions(storeDir));
    assert.equal((await reopened.list()).length, hostile.length);
    for (const record of records) assert.deepEqual(await reopened.get(record.taskId), record);
    await reopened.close();
  });

  it('ids longer than 200 characters, empty or malformed are refused by create and unknown elsewhere', async () => {
    const storeDir = await freshDir('long-ids');
    const store = await openStore(strictOptions(storeDir));
    for (const taskId of ['x'.repeat(201), '', 'lone\uD800surrogate']) {
      await assert.rejects(store.create(makeRecord({ taskId })), (error: Error) => error.message.includes(storeDir));
      assert.equal(await store.get(taskId), undefined);
      assert.equal(await store.delete(taskId), false);
      await store.put(makeRecord({ taskId, version: 3 }));
    }
    const longest = makeRecord({ taskId: 'y'.repeat(200) });
    await store.create(longest);
    assert.deepEqual(await store.get(longest.taskId), longest);
    await store.checkpoint();
    assert.equal((await listFiles(storeDir)).length, 1);
    await store.close();
  });

  it('open() creates missing parent folders', async () => {
    const storeDir = join(dir, 'missing', 'parents', 'store');
    const store = await openStore(strictOptions(storeDir));
    const record = makeRecord();
    await store.create(record);
    await store.checkpoint();
    assert.deepEqual(await listFiles(storeDir), [expectedPath(storeDir, record.taskId)]);
    await store.close();
  });

  it('open() on a path that is a file fails with an error naming it', async () => {
    const file = join(dir, 'not-a-folder');
    await writeFile(file, 'x');
    const store = new LowdbTaskStore({ dir: file });
    await assert.rejects(store.open(), (error: Error) => error.message.includes(file));
    await assert.rejects(store.get('x'), /store is closed/);
  });

  it('rejects calls before open()', async () => {
    await assert.rejects(new LowdbTaskStore({ dir }).get('x'), /store is not open/);
  });

  it('every create and put reports a file sync and a directory sync', async () => {
    const storeDir = await freshDir('hooks');
    const kinds: string[] = [];
    const store = await openStore({ ...strictOptions(storeDir), hooks: { onSync: (kind) => kinds.push(kind) } });
    const record = makeRecord();
    await store.create(record);
    assert.deepEqual(kinds, ['file', 'dir']);
    await store.put({ ...record, version: 2 });
    await store.put({ ...record, version: 2 }); // stale: no write, no sync
    assert.deepEqual(kinds, ['file', 'dir', 'file', 'dir']);
    await store.close();
  });

  it('concurrent creates and puts share one durable batch: one file sync and one folder sync for all of them', async () => {
    const storeDir = await freshDir('group-commit');
    const kinds: string[] = [];
    const store = await openStore({ ...strictOptions(storeDir), hooks: { onSync: (kind) => kinds.push(kind) } });
    const records = Array.from({ length: 20 }, () => makeRecord());
    await Promise.all(records.map((record) => store.create(record)));
    assert.deepEqual(kinds, ['file', 'dir']);
    for (const record of records) assert.deepEqual(await store.get(record.taskId), record);
    const finished = records.map((record) => ({ ...record, version: 2, status: 'completed' as const }));
    await Promise.all(finished.map((record) => store.put(record)));
    assert.deepEqual(kinds, ['file', 'dir', 'file', 'dir']);
    assert.deepEqual(
      (await store.list({ status: ['completed'] })).map((record) => record.taskId).sort(),
      records.map((record) => record.taskId).sort(),
    );
    await store.close();
    // A clean close leaves one file per task, each with its latest record, and no journal batch.
    const files = await listFiles(storeDir);
    assert.deepEqual(files.sort(), records.map((record) => expectedPath(storeDir, record.taskId)).sort());
    for (const record of finished) assert.equal(await readFile(expectedPath(storeDir, record.taskId), 'utf8'), JSON.stringify(record));
  });

  it('a batch that cannot be written fails exactly its members; earlier and later batches land and survive a reopen', async () => {
    const storeDir = await freshDir('failed-batch');
    const store = await openStore(strictOptions(storeDir));
    const [before, failedA, failedB, later] = [makeRecord(), makeRecord(), makeRecord(), makeRecord()];
    await store.create(before);
    // A real fault on the journal's folder: a file where the folder was, so the batch's temp file cannot be created (ENOTDIR).
    const journalDir = join(storeDir, 'journal');
    await rm(journalDir, { recursive: true, force: true });
    await writeFile(journalDir, 'not a folder');
    const outcomes = await Promise.allSettled([store.create(failedA), store.create(failedB)]);
    for (const outcome of outcomes) {
      assert.ok(outcome.status === 'rejected');
      assert.match(String(outcome.reason), /cannot commit 2 write\(s\)/);
    }
    // Not visible, not counted: the id is free again.
    assert.equal(await store.get(failedA.taskId), undefined);
    assert.equal(await store.get(failedB.taskId), undefined);
    assert.deepEqual(
      (await store.list()).map((record) => record.taskId),
      [before.taskId],
    );
    await rm(journalDir);
    await mkdir(journalDir, { mode: 0o700 });
    await store.create(later);
    await store.create(failedA); // the failed id can be created again
    await store.close();
    const reopened = await openStore(strictOptions(storeDir));
    assert.deepEqual((await reopened.list()).map((record) => record.taskId).sort(), [before.taskId, later.taskId, failedA.taskId].sort());
    assert.equal(await reopened.get(failedB.taskId), undefined);
    await reopened.close();
  });

  it('through the fault wrapper: ENOSPC on the Nth create and a hung create fail or hold only themselves; the rest share one batch', async () => {
    const storeDir = await freshDir('faulty-batch');
    const kinds: string[] = [];
    const inner = await openStore({ ...strictOptions(storeDir), hooks: { onSync: (kind) => kinds.push(kind) } });
    const store = new FaultyTaskStore(inner);
    const records = Array.from({ length: 6 }, () => makeRecord());
    const [, second, , , , hung] = records as [TaskRecord, TaskRecord, TaskRecord, TaskRecord, TaskRecord, TaskRecord];
    store.inject({ effect: 'ENOSPC', ops: ['create'], skip: 1, times: 1 });
    store.inject({ effect: 'hang', ops: ['create'], when: (write) => write.taskId === hung.taskId });
    const outcomes = records.map((record) =>
      store.create(record).then(
        () => 'stored',
        (error: Error) => error.message,
      ),
    );
    const settled = await Promise.all(outcomes.slice(0, 5));
    assert.deepEqual(
      settled.map((outcome) => (outcome === 'stored' ? outcome : 'failed')),
      ['stored', 'failed', 'stored', 'stored', 'stored'],
    );
    assert.match(settled[1] ?? '', /ENOSPC/);
    // The four that reached the store were one batch; the hung one is not stored and holds nobody up.
    assert.deepEqual(kinds, ['file', 'dir']);
    assert.equal(await store.get(second.taskId), undefined);
    assert.equal(await store.get(hung.taskId), undefined);
    store.heal();
    assert.equal(await outcomes[5], 'stored');
    assert.deepEqual(kinds, ['file', 'dir', 'file', 'dir']);
    await inner.close();
    const reopened = await openStore(strictOptions(storeDir));
    assert.deepEqual(
      (await reopened.list()).map((record) => record.taskId).sort(),
      records
        .filter((record) => record !== second)
        .map((record) => record.taskId)
        .sort(),
    );
    await reopened.close();
  });

  it('open() replays journal batches a crash left (newer than the task file wins, older ones do not) and drops a half-written batch', async () => {
    const storeDir = await freshDir('replay');
    const first = await openStore(strictOptions(storeDir));
    const [kept, updated, onlyJournaled] = [makeRecord(), makeRecord(), makeRecord()];
    await first.create(kept);
    await first.create(updated);
    await first.close();
    // What a crash between a batch's commit and its checkpoint leaves behind (the format the journal writes: one record per line).
    const journalDir = join(storeDir, 'journal');
    const newer = { ...updated, version: 5, status: 'completed' as const };
    const stale = { ...kept, version: 0, status: 'failed' as const };
    await writeFile(
      join(journalDir, '0000000000000007.jsonl'),
      `${JSON.stringify(onlyJournaled)}\n${JSON.stringify(newer)}\n${JSON.stringify(stale)}\n`,
    );
    const neverAcknowledged = join(journalDir, '.0000000000000008.4242.tmp');
    await writeFile(neverAcknowledged, JSON.stringify(makeRecord()).slice(0, 30));
    const second = await openStore(strictOptions(storeDir));
    await assert.rejects(stat(neverAcknowledged), { code: 'ENOENT' });
    assert.deepEqual(await second.get(kept.taskId), kept);
    assert.deepEqual(await second.get(updated.taskId), newer);
    assert.deepEqual(await second.get(onlyJournaled.taskId), onlyJournaled);
    assert.deepEqual((await second.listNonTerminal()).map((record) => record.taskId).sort(), [kept.taskId, onlyJournaled.taskId].sort());
    // New batches number after the replayed ones, so replay order stays commit order.
    const next = makeRecord();
    await second.create(next);
    await second.checkpoint();
    assert.deepEqual(await readdir(journalDir), []);
    assert.equal(await readFile(expectedPath(storeDir, updated.taskId), 'utf8'), JSON.stringify(newer));
    assert.equal(await readFile(expectedPath(storeDir, onlyJournaled.taskId), 'utf8'), JSON.stringify(onlyJournaled));
    await second.close();
  });

  it('a delete waits until no journal batch holds the task, so a crash cannot bring it back', async () => {
    const storeDir = await freshDir('delete-journaled');
    const store = await openStore(strictOptions(storeDir));
    const record = makeRecord();
    await store.create(record);
    assert.equal((await readdir(join(storeDir, 'journal'))).length, 1);
    assert.equal(await store.delete(record.taskId), true);
    // Nothing left to replay: the batch that held the create is gone, and so is the task file.
    assert.deepEqual(await readdir(join(storeDir, 'journal')), []);
    assert.deepEqual(await listFiles(storeDir), []);
    assert.equal(await store.get(record.taskId), undefined);
    await store.close();
  });

  it('createTaskStore({ kind: "lowdb" }) builds one on the given folder', async () => {
    const storeDir = await freshDir('factory');
    const store = createTaskStore({ kind: 'lowdb', dir: storeDir });
    assert.ok(store instanceof LowdbTaskStore);
    await store.open();
    await store.create(makeRecord());
    await store.close();
    assert.equal((await listFiles(storeDir)).length, 1);
  });
});

describe('DurableJsonFile', () => {
  let dir: string;
  before(async () => {
    dir = await tempDir();
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('one write fdatasyncs the file and fsyncs the folder (hooks and the real FileHandle calls)', async () => {
    const kinds: ('file' | 'dir')[] = [];
    const path = join(dir, 'synced.json');
    const adapter = new DurableJsonFile<{ a: number[] }>(path, { hooks: { onSync: (kind) => kinds.push(kind) } });

    // Count the real FileHandle calls too, so the hooks cannot lie about what happened.
    const probe = await open(dir, 'r');
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void>; sync: () => Promise<void> };
    await probe.close();
    const original = { datasync: proto.datasync, sync: proto.sync };
    const calls: string[] = [];
    proto.datasync = function (this: unknown) {
      calls.push('datasync');
      return original.datasync.call(this);
    };
    proto.sync = function (this: unknown) {
      calls.push('sync');
      return original.sync.call(this);
    };
    try {
      await adapter.write({ a: [1, 2] });
    } finally {
      proto.datasync = original.datasync;
      proto.sync = original.sync;
    }
    assert.deepEqual(kinds, ['file', 'dir']);
    assert.deepEqual(calls, ['datasync', 'sync']);
    assert.equal(await readFile(path, 'utf8'), '{"a":[1,2]}');
  });

  it('read() is null for a missing file and round-trips a written one', async () => {
    const adapter = new DurableJsonFile<{ n: number }>(join(dir, 'roundtrip.json'));
    assert.equal(await adapter.read(), null);
    await adapter.write({ n: 1 });
    await adapter.write({ n: 2 });
    assert.deepEqual(await adapter.read(), { n: 2 });
    assert.deepEqual(
      (await readdir(dir)).filter((name) => name.endsWith('.tmp')),
      [],
    );
  });

  it('invalid JSON throws an error naming the file', async () => {
    const path = join(dir, 'broken.json');
    await writeFile(path, '{"n": 1');
    await assert.rejects(
      new DurableJsonFile(path).read(),
      (error: Error) => error.message.includes(path) && /invalid JSON/.test(error.message),
    );
  });

  it('a failed write names the file and leaves no temp file behind', async () => {
    const path = join(dir, 'missing-folder', 'x.json');
    await assert.rejects(new DurableJsonFile<TaskRecord>(path).write(makeRecord()), (error: Error) => error.message.includes(path));
  });
});
