/**
 * The behaviour every {@link TaskStore} must show. A store's test file calls
 * {@link runTaskStoreContract} with a factory; each case gets a fresh store.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TaskStatus } from '../../machines/task/types.js';
import { TaskExistsError, TaskRecordDamagedError, type TaskStore } from '../../src/store/TaskStore.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';
import { makeRecord } from './fixtures.js';
import type { PlantedRow } from './planting.js';

/** What a factory hands the contract. */
export interface StoreHarness {
  /** An opened, empty store. */
  store: TaskStore;
  /**
   * For durable stores: opens a new instance over the same data. The contract
   * closes the current store before calling it.
   */
  reopen?: () => Promise<TaskStore>;
  /** Removes whatever the store left behind (called after the stores are closed). */
  cleanup: () => Promise<void>;
  /**
   * Writes `row.text` as the stored record of a working task behind the
   * store's back (`planting.ts`). A durable store is closed first and
   * reopened after; a memory store is planted while open. Required unless
   * the contract is registered with `plants: false`.
   */
  plant?: (row: PlantedRow) => Promise<void>;
  /** The task ids the stores of this harness reported through `onCorrupt`, in order. */
  reported?: readonly string[];
}

interface Ctx {
  store: TaskStore;
  harness: StoreHarness;
  /** Closes the current store (idempotent within a case). */
  close: () => Promise<void>;
  /** Closes the current store and returns a reopened one; `undefined` when the store is not durable. */
  closeAndReopen: (() => Promise<TaskStore>) | undefined;
}

const ALL_STATUSES: readonly TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];

/**
 * Registers the contract cases under `describe(name)`. Cases that do not apply to a store are left out
 * rather than skipped at run time (so every skip in a run means something is missing): `durable: false`
 * (a memory store) leaves out closing and reopening it, `plants: false` (a store nothing else can reach,
 * such as an SQLite `:memory:` database) the damaged record planted behind its back.
 */
export function runTaskStoreContract(
  name: string,
  makeStore: () => Promise<StoreHarness>,
  { durable = true, plants = true }: { durable?: boolean; plants?: boolean } = {},
): void {
  const withStore = async (fn: (ctx: Ctx) => Promise<void>): Promise<void> => {
    const harness = await makeStore();
    let current = harness.store;
    let currentOpen = true;
    const close = async (): Promise<void> => {
      if (!currentOpen) return;
      currentOpen = false;
      await current.close();
    };
    const reopen = harness.reopen;
    const ctx: Ctx = {
      store: current,
      harness,
      close,
      closeAndReopen:
        reopen === undefined
          ? undefined
          : async () => {
              await close();
              current = await reopen();
              currentOpen = true;
              return current;
            },
    };
    try {
      await fn(ctx);
    } finally {
      await close();
      await harness.cleanup();
    }
  };

  describe(`TaskStore contract: ${name}`, () => {
    it('create then get returns a deep-equal record (nested snapshot, result, error, null ttl)', () =>
      withStore(async ({ store }) => {
        const records = [
          makeRecord(),
          makeRecord({
            status: 'input_required',
            ttlMs: null,
            inputRequests: { ask: { method: 'elicitation/create', params: { message: 'Name?', requestedSchema: { type: 'object' } } } },
          }),
          makeRecord({
            status: 'completed',
            result: { content: [{ type: 'text', text: 'done' }], resultType: 'complete' },
            snapshot: undefined,
          }),
          makeRecord({ status: 'failed', error: { code: -32603, message: 'boom', data: { stack: ['a', 'b'], at: 1 } } }),
        ].map(dropUndefined);
        for (const record of records) await store.create(record);
        for (const record of records) assert.deepEqual(await store.get(record.taskId), record);
      }));

    it('the checkpoint field round-trips through create, put and reopen (working and terminal)', () =>
      withStore(async ({ store, closeAndReopen }) => {
        const checkpoint = {
          steps: [{ id: 'a', startedAt: 1, endedAt: 2, input: { n: [1, null, 'x'] }, result: { ok: true } }],
          cursor: 1,
        };
        const working = dropUndefined(makeRecord({ checkpoint }));
        await store.create(working);
        assert.deepEqual((await store.get(working.taskId))?.checkpoint, checkpoint);
        const next = { ...checkpoint, cursor: 2 };
        const done = dropUndefined({
          ...working,
          status: 'completed' as const,
          version: 2,
          snapshot: undefined,
          checkpoint: next,
          result: { content: [], resultType: 'complete' },
        });
        await store.put(done);
        assert.deepEqual(await store.get(working.taskId), done);
        if (closeAndReopen) {
          const reopened = await closeAndReopen();
          assert.deepEqual((await reopened.get(working.taskId))?.checkpoint, next);
        }
      }));

    it('create rejects a duplicate id with TaskExistsError and keeps the original', () =>
      withStore(async ({ store }) => {
        const record = makeRecord();
        await store.create(record);
        await assert.rejects(store.create(makeRecord({ taskId: record.taskId, version: 7, owner: 'mallory' })), (error: unknown) => {
          assert.ok(error instanceof TaskExistsError, `expected TaskExistsError, got ${String(error)}`);
          assert.equal(error.taskId, record.taskId);
          return true;
        });
        assert.deepEqual(await store.get(record.taskId), record);
      }));

    it('concurrent creates of one id: exactly one wins', () =>
      withStore(async ({ store }) => {
        const taskId = makeRecord().taskId;
        const outcomes = await Promise.allSettled(
          Array.from({ length: 5 }, (_, i) => store.create(makeRecord({ taskId, statusMessage: `c${i}` }))),
        );
        assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1);
        for (const outcome of outcomes) if (outcome.status === 'rejected') assert.ok(outcome.reason instanceof TaskExistsError);
        assert.equal((await store.list()).length, 1);
      }));

    it('get of an unknown id is undefined', () =>
      withStore(async ({ store }) => {
        await store.create(makeRecord());
        for (const id of ['nope', makeRecord().taskId, '', '../x', 'x'.repeat(500)]) assert.equal(await store.get(id), undefined);
      }));

    it('put with a higher version replaces the whole record', () =>
      withStore(async ({ store }) => {
        const record = makeRecord();
        await store.create(record);
        const { snapshot: _dropped, statusMessage: _alsoDropped, ...rest } = record;
        const done: TaskRecord = {
          ...rest,
          version: 2,
          status: 'completed',
          lastUpdatedAt: record.lastUpdatedAt + 5,
          result: { ok: true },
        };
        await store.put(done);
        assert.deepEqual(await store.get(record.taskId), done);
      }));

    it('put with a lower or equal version is ignored', () =>
      withStore(async ({ store }) => {
        const record = makeRecord();
        await store.create(record);
        const v3 = { ...record, version: 3, statusMessage: 'v3' };
        await store.put(v3);
        await store.put({ ...record, version: 2, statusMessage: 'late v2' });
        await store.put({ ...record, version: 3, statusMessage: 'other v3' });
        await store.put({ ...record, version: 1, status: 'cancelled' });
        assert.deepEqual(await store.get(record.taskId), v3);
      }));

    it('put for an unknown id is ignored (no resurrection)', () =>
      withStore(async ({ store }) => {
        const ghost = makeRecord({ version: 9 });
        await store.put(ghost);
        assert.equal(await store.get(ghost.taskId), undefined);
        assert.deepEqual(await store.list(), []);
        assert.deepEqual(await store.listNonTerminal(), []);
      }));

    it('concurrent puts of versions 2..50 in random order end at 50', () =>
      withStore(async ({ store }) => {
        const record = makeRecord();
        await store.create(record);
        const versions = shuffle(Array.from({ length: 49 }, (_, i) => i + 2));
        await Promise.all(versions.map((version) => store.put({ ...record, version, statusMessage: `v${version}` })));
        const stored = await store.get(record.taskId);
        assert.equal(stored?.version, 50);
        assert.equal(stored?.statusMessage, 'v50');
        assert.equal((await store.list()).length, 1);
      }));

    it('putMany stores each record as put would: newer versions land, stale and unknown ids are ignored, the highest of one task wins', (t) =>
      withStore(async ({ store, closeAndReopen }) => {
        // Every built-in store writes a batch at once (recovery ends 100k tasks in pages); only a custom store may fall back to put.
        const putMany = store.putMany?.bind(store);
        assert.ok(putMany, 'the store has putMany');
        await putMany([]);
        const ended = makeRecord();
        const stale = makeRecord();
        const twice = makeRecord({ status: 'input_required' });
        const untouched = makeRecord();
        for (const record of [ended, stale, twice, untouched]) await store.create(record);
        await store.put({ ...stale, version: 4, statusMessage: 'v4' });
        const { snapshot: _dropped, ...endedRest } = ended;
        const endedV2: TaskRecord = {
          ...endedRest,
          version: 2,
          status: 'failed',
          statusMessage: 'The server restarted',
          error: { code: -32603, message: 'The server restarted' },
        };
        const ghost = makeRecord({ version: 9 });
        const twiceV3: TaskRecord = { ...twice, version: 3, statusMessage: 'v3' };
        await putMany([endedV2, { ...stale, version: 3, statusMessage: 'late v3' }, ghost, twiceV3, { ...twice, version: 2 }]);
        const expected = new Map([
          [ended.taskId, endedV2],
          [stale.taskId, { ...stale, version: 4, statusMessage: 'v4' }],
          [twice.taskId, twiceV3],
          [untouched.taskId, untouched],
        ]);
        for (const [taskId, record] of expected) assert.deepEqual(await store.get(taskId), record);
        assert.equal(await store.get(ghost.taskId), undefined);
        assert.deepEqual(sortById(await store.listNonTerminal()), sortById([expected.get(stale.taskId)!, twiceV3, untouched]));
        assert.deepEqual(await store.list({ status: ['failed'] }), [endedV2]);
        if (closeAndReopen === undefined) {
          t.diagnostic('store is not durable: no reopen');
          return;
        }
        const reopened = await closeAndReopen();
        for (const [taskId, record] of expected) assert.deepEqual(await reopened.get(taskId), record);
        assert.equal(await reopened.get(ghost.taskId), undefined);
      }));

    it('putMany of many records resolves once all are readable; puts of the same tasks around it keep latest-wins', () =>
      withStore(async ({ store }) => {
        const putMany = store.putMany!.bind(store);
        const records = Array.from({ length: 300 }, (_, i) => makeRecord({ createdAt: 1_000 + i }));
        await Promise.all(records.map((record) => store.create(record)));
        const next = records.map((record) => ({ ...record, version: 3, status: 'failed' as const, statusMessage: 'ended' }));
        // In the same tick: a higher put of one task, a lower one of another; neither order may lose the newest.
        const writes = [
          store.put({ ...records[0]!, version: 4, statusMessage: 'put v4' }),
          putMany(next),
          store.put({ ...records[1]!, version: 2, statusMessage: 'put v2' }),
        ];
        await Promise.all(writes);
        const read = await Promise.all(records.map((record) => store.get(record.taskId)));
        assert.equal(read[0]?.statusMessage, 'put v4');
        assert.equal(read[1]?.statusMessage, 'ended');
        assert.deepEqual(read.slice(1), next.slice(1));
        assert.deepEqual(await store.listNonTerminal(), [read[0]]);
      }));

    it('delete resolves true for a stored task, false otherwise; a put cannot bring it back', () =>
      withStore(async ({ store }) => {
        const record = makeRecord();
        const other = makeRecord();
        await store.create(record);
        await store.create(other);
        assert.equal(await store.delete(record.taskId), true);
        assert.equal(await store.get(record.taskId), undefined);
        assert.equal(await store.delete(record.taskId), false);
        assert.equal(await store.delete('never-existed'), false);
        await store.put({ ...record, version: 2 });
        assert.equal(await store.get(record.taskId), undefined);
        assert.deepEqual(await store.get(other.taskId), other);
        assert.deepEqual(await store.listExpired(Number.MAX_SAFE_INTEGER, 10), [other.taskId]);
        // The id is free again once deleted.
        await store.create(record);
        assert.deepEqual(await store.get(record.taskId), record);
      }));

    it('listNonTerminal returns exactly the working and input_required tasks', () =>
      withStore(async ({ store }) => {
        const byStatus = new Map(ALL_STATUSES.map((status) => [status, makeRecord({ status })]));
        for (const record of byStatus.values()) await store.create(record);
        const nonTerminal = sortById(await store.listNonTerminal());
        assert.deepEqual(nonTerminal, sortById([byStatus.get('working'), byStatus.get('input_required')].map(defined)));

        const working = defined(byStatus.get('working'));
        await store.put({ ...working, version: 2, status: 'completed' });
        assert.deepEqual(await store.listNonTerminal(), [byStatus.get('input_required')]);
      }));

    it('scanNonTerminal yields every unfinished record once, in pages of at most the size, none finished', () =>
      withStore(async ({ store }) => {
        // Every built-in store pages its recovery scan (100k tasks never in memory at once); only a custom store may fall back to listNonTerminal.
        const scan = store.scanNonTerminal?.bind(store);
        assert.ok(scan, 'the store has scanNonTerminal');
        const unfinished: TaskRecord[] = [];
        for (let i = 0; i < 23; i++) {
          const record = makeRecord({ status: i % 3 === 0 ? 'input_required' : 'working' });
          unfinished.push(record);
          await store.create(record);
        }
        for (const status of ['completed', 'failed', 'cancelled'] as const) await store.create(makeRecord({ status }));
        const pages: TaskRecord[][] = [];
        for await (const page of scan(5)) pages.push(page);
        assert.ok(
          pages.every((page) => page.length >= 1 && page.length <= 5),
          `page sizes ${pages.map((page) => page.length).join(', ')}`,
        );
        assert.deepEqual(sortById(pages.flat()), sortById(unfinished));
        // A task finished while the scan runs: every other one is still yielded exactly once.
        const again = scan(5)[Symbol.asyncIterator]();
        const first = await again.next();
        const seen = (first.value as TaskRecord[]).map((record) => record.taskId);
        const later = unfinished.find((record) => !seen.includes(record.taskId))!;
        await store.put({ ...later, version: 2, status: 'completed' });
        for (let next = await again.next(); !next.done; next = await again.next()) seen.push(...next.value.map((record) => record.taskId));
        const others = seen.filter((taskId) => taskId !== later.taskId);
        assert.deepEqual(
          others.sort(),
          unfinished
            .filter((record) => record !== later)
            .map((record) => record.taskId)
            .sort(),
        );
      }));

    it('listExpired: createdAt + ttlMs <= now, null never expires, limit honoured', () =>
      withStore(async ({ store }) => {
        const now = 1_000_000;
        const expired = [
          makeRecord({ createdAt: now - 10_000, ttlMs: 5_000 }),
          makeRecord({ createdAt: now - 1_000, ttlMs: 1_000, status: 'completed' }), // exactly now: expired
          makeRecord({ createdAt: now - 100_000, ttlMs: 1 }),
        ];
        const alive = [
          makeRecord({ createdAt: now - 1_000, ttlMs: 1_001 }),
          makeRecord({ createdAt: 0, ttlMs: null }),
          makeRecord({ createdAt: now + 5, ttlMs: 0 }),
        ];
        for (const record of [...expired, ...alive]) await store.create(record);
        const ids = expired.map((r) => r.taskId).sort();
        assert.deepEqual((await store.listExpired(now, 100)).sort(), ids);
        const two = await store.listExpired(now, 2);
        assert.equal(two.length, 2);
        for (const id of two) assert.ok(ids.includes(id));
        assert.deepEqual(await store.listExpired(now, 0), []);
        assert.deepEqual(await store.listExpired(now - 99_999, 10), [expired[2]?.taskId]);
        assert.deepEqual(await store.listExpired(Number.MAX_SAFE_INTEGER, 100).then((l) => l.length), 5);
      }));

    it('list filters by owner, status and limit, newest first', () =>
      withStore(async ({ store }) => {
        const t0 = 1_700_000_000_000;
        const records = [
          makeRecord({ owner: 'alice', createdAt: t0 + 1, status: 'working' }),
          makeRecord({ owner: 'bob', createdAt: t0 + 2, status: 'completed' }),
          makeRecord({ owner: 'alice', createdAt: t0 + 3, status: 'failed' }),
          makeRecord({ owner: 'bob', createdAt: t0 + 4, status: 'working' }),
          makeRecord({ owner: 'alice', createdAt: t0 + 5, status: 'input_required' }),
        ];
        for (const record of shuffle([...records])) await store.create(record);
        const ids = (list: TaskRecord[]): string[] => list.map((r) => r.taskId);
        const newestFirst = [...records].reverse();

        assert.deepEqual(await store.list(), newestFirst);
        assert.deepEqual(ids(await store.list({ owner: 'bob' })), ids(newestFirst.filter((r) => r.owner === 'bob')));
        assert.deepEqual(ids(await store.list({ status: ['completed', 'failed'] })), ids([records[2], records[1]].map(defined)));
        assert.deepEqual(
          ids(await store.list({ owner: 'alice', status: ['working', 'input_required'] })),
          ids([records[4], records[0]].map(defined)),
        );
        assert.deepEqual(ids(await store.list({ limit: 2 })), ids(newestFirst.slice(0, 2)));
        assert.deepEqual(ids(await store.list({ owner: 'alice', limit: 1 })), ids([records[4]].map(defined)));
        assert.deepEqual(await store.list({ owner: 'nobody' }), []);
        assert.deepEqual(await store.list({ status: [] }), []);
        assert.deepEqual(await store.list({ limit: 0 }), []);

        // Filters see the latest put, not the status at create time.
        const first = defined(records[0]);
        await store.put({ ...first, version: 2, status: 'cancelled' });
        assert.deepEqual(ids(await store.list({ status: ['cancelled'] })), [first.taskId]);
        assert.deepEqual(ids(await store.list({ owner: 'alice', status: ['working'] })), []);
      }));

    it('200 concurrent creates are all readable', () =>
      withStore(async ({ store }) => {
        const records = Array.from({ length: 200 }, (_, i) => makeRecord({ createdAt: 1_000 + i, owner: `owner-${i % 7}` }));
        await Promise.all(records.map((record) => store.create(record)));
        const read = await Promise.all(records.map((record) => store.get(record.taskId)));
        assert.deepEqual(read, records);
        assert.equal((await store.list()).length, 200);
        assert.equal((await store.listNonTerminal()).length, 200);
        assert.equal((await store.list({ owner: 'owner-3' })).length, records.filter((r) => r.owner === 'owner-3').length);
      }));

    // A memory store keeps nothing across a reopen: the case is not registered for it.
    if (durable)
      it('close then reopen keeps creates, puts and deletes', () =>
        withStore(async ({ store, closeAndReopen }) => {
          assert.ok(closeAndReopen, 'a durable store harness reopens');
          const kept = makeRecord({ ttlMs: null });
          const updated = makeRecord({ owner: 'bob', createdAt: 5 });
          const deleted = makeRecord();
          const pending = Array.from({ length: 20 }, (_, i) => makeRecord({ createdAt: 100 + i }));
          await store.create(kept);
          await store.create(updated);
          await store.create(deleted);
          const updatedV2: TaskRecord = { ...updated, version: 2, status: 'completed', result: { answer: 42 } };
          await store.put(updatedV2);
          await store.delete(deleted.taskId);
          // Not awaited before close: close must wait for writes in flight.
          const inFlight = pending.map((record) => store.create(record));

          const reopened = await closeAndReopen();
          await Promise.all(inFlight);
          assert.deepEqual(await reopened.get(kept.taskId), kept);
          assert.deepEqual(await reopened.get(updated.taskId), updatedV2);
          assert.equal(await reopened.get(deleted.taskId), undefined);
          for (const record of pending) assert.deepEqual(await reopened.get(record.taskId), record);
          assert.equal((await reopened.list()).length, 22);
          assert.deepEqual(
            sortById(await reopened.listNonTerminal()).map((r) => r.taskId),
            sortById([kept, ...pending]).map((r) => r.taskId),
          );
          assert.deepEqual(await reopened.list({ owner: 'bob' }), [updatedV2]);
          assert.ok(!(await reopened.listExpired(Number.MAX_SAFE_INTEGER, 100)).includes(kept.taskId));

          // Version checks and duplicate detection survive the restart.
          await reopened.put({ ...updated, version: 1, status: 'working' });
          assert.deepEqual(await reopened.get(updated.taskId), updatedV2);
          await assert.rejects(reopened.create(makeRecord({ taskId: kept.taskId })), TaskExistsError);
          await reopened.put({ ...deleted, version: 5 });
          assert.equal(await reopened.get(deleted.taskId), undefined);
        }));

    it('records handed in and out are copies', () =>
      withStore(async ({ store }) => {
        const record = makeRecord();
        const expected = structuredClone(record);
        const creating = store.create(record);
        // Mutate before the create settles: the store must have taken its copy at call time.
        record.statusMessage = 'mutated by caller';
        snapshotArgs(record).n = 99;
        await creating;
        assert.deepEqual(await store.get(expected.taskId), expected);

        const got = defined(await store.get(expected.taskId));
        got.status = 'failed';
        snapshotArgs(got).n = -1;
        const listed = await store.list();
        defined(listed[0]).owner = 'mallory';
        const nonTerminal = await store.listNonTerminal();
        snapshotArgs(defined(nonTerminal[0])).nested = null;
        assert.deepEqual(await store.get(expected.taskId), expected);

        const v2 = { ...structuredClone(expected), version: 2, statusMessage: 'v2' };
        const v2Expected = structuredClone(v2);
        const putting = store.put(v2);
        snapshotArgs(v2).n = 1234;
        await putting;
        assert.deepEqual(await store.get(expected.taskId), v2Expected);

        const v3 = { ...structuredClone(expected), version: 3, statusMessage: 'v3' };
        const v3Expected = structuredClone(v3);
        const batch = [v3];
        const puttingMany = store.putMany!([...batch]);
        snapshotArgs(v3).n = 4321;
        batch.length = 0;
        await puttingMany;
        assert.deepEqual(await store.get(expected.taskId), v3Expected);
      }));

    if (plants)
      it('a damaged record planted behind its back is set aside, reported once and answered alike in every store', () =>
        withStore(async ({ store, harness, close, closeAndReopen }) => {
          const { plant, reported } = harness;
          assert.ok(plant && reported, 'a harness registered with plants: true plants records and collects reports');
          const healthy = makeRecord();
          await store.create(healthy);
          // The same two damaged records in every store: parseable JSON that is not a task record.
          const noTtl = makeRecord({ owner: 'alice' });
          const { ttlMs: _dropped, ...withoutTtl } = noTtl;
          const exploded = makeRecord({ owner: 'alice' });
          const planted: PlantedRow[] = [
            { taskId: noTtl.taskId, owner: 'alice', text: JSON.stringify(withoutTtl) },
            { taskId: exploded.taskId, owner: 'alice', text: JSON.stringify({ ...exploded, status: 'exploded' }) },
          ];
          let current = store;
          if (closeAndReopen === undefined) for (const row of planted) await plant(row);
          else {
            await close();
            for (const row of planted) await plant(row);
            current = await closeAndReopen();
          }
          const [first, second] = planted as [PlantedRow, PlantedRow];
          // Asked for by its owner (and internally): the one error, store to wire, naming nothing stored.
          for (let round = 0; round < 2; round++) {
            await assert.rejects(
              current.get(first.taskId),
              (error: Error) => error instanceof TaskRecordDamagedError && !error.message.includes('ttlMs'),
            );
            await assert.rejects(current.get(first.taskId, 'alice'), TaskRecordDamagedError);
          }
          // Another principal is not told the id exists (I-7).
          assert.equal(await current.get(first.taskId, 'bob'), undefined);
          // Lists and recovery skip it; the second damaged one is met there first and set aside the same way.
          assert.deepEqual(
            (await current.list()).map((record) => record.taskId),
            [healthy.taskId],
          );
          assert.deepEqual(
            (await current.listNonTerminal()).map((record) => record.taskId),
            [healthy.taskId],
          );
          const scanned: string[] = [];
          for await (const page of current.scanNonTerminal!(10)) scanned.push(...page.map((record) => record.taskId));
          assert.deepEqual(scanned, [healthy.taskId]);
          await assert.rejects(current.get(second.taskId), TaskRecordDamagedError);
          assert.deepEqual(await current.get(healthy.taskId), healthy);
          // Reported once each, by task id, however often met.
          assert.deepEqual([...reported].sort(), [first.taskId, second.taskId].sort());
          // Kept byte for byte with its owner, never deleted.
          const setAside = new Map((await current.listQuarantined()).map((entry) => [entry.taskId, entry]));
          for (const row of planted) {
            assert.equal(setAside.get(row.taskId)?.stored, row.text, row.taskId);
            assert.equal(setAside.get(row.taskId)?.owner, 'alice');
          }
          assert.match(setAside.get(first.taskId)?.reason ?? '', /ttlMs/);
          assert.match(setAside.get(second.taskId)?.reason ?? '', /status/);
        }));

    it('every method rejects after close', () =>
      withStore(async ({ store, close }) => {
        const record = makeRecord();
        await store.create(record);
        await close();
        const closed = /store is closed/;
        await assert.rejects(store.create(makeRecord()), closed);
        await assert.rejects(store.put({ ...record, version: 2 }), closed);
        await assert.rejects(store.putMany!([{ ...record, version: 2 }]), closed);
        await assert.rejects(store.get(record.taskId), closed);
        await assert.rejects(store.delete(record.taskId), closed);
        await assert.rejects(store.listNonTerminal(), closed);
        await assert.rejects(store.listExpired(Date.now(), 10), closed);
        await assert.rejects(store.list(), closed);
      }));
  });
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

function sortById(records: readonly TaskRecord[]): TaskRecord[] {
  return [...records].sort((a, b) => (a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0));
}

function defined<T>(value: T | undefined): T {
  assert.ok(value !== undefined, 'expected a value');
  return value;
}

/** Removes keys set to `undefined` so a record deep-equals its JSON round trip. */
function dropUndefined(record: TaskRecord): TaskRecord {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as unknown as TaskRecord;
}

/** The `args` object inside a {@link makeRecord} snapshot. */
function snapshotArgs(record: TaskRecord): Record<string, unknown> {
  return (record.snapshot as { context: { args: Record<string, unknown> } }).context.args;
}
