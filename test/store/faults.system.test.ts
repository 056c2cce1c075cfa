/**
 * The fault-injecting store wrapper (`FaultyTaskStore`) over every store:
 * with no fault in force it passes the whole store contract (it is
 * transparent), and each injected fault does what it says without corrupting
 * the store underneath: a refused write leaves the previous record, a retry
 * after healing lands, a hung write lands once released.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FaultyTaskStore } from '../support/FaultyTaskStore.js';
import type { TaskStore } from '../../src/store/TaskStore.js';
import { isDurableKind, STORE_KINDS, storeSite, type StoreSite } from '../support/storeKinds.js';
import { runTaskStoreContract } from './contract.js';
import { makeRecord } from './fixtures.js';

async function opened(site: StoreSite, onCorrupt?: (taskId: string) => void): Promise<FaultyTaskStore> {
  const store = new FaultyTaskStore(site.make(onCorrupt));
  await store.open();
  return store;
}

for (const kind of STORE_KINDS) {
  runTaskStoreContract(
    `FaultyTaskStore over ${kind} (no fault in force)`,
    async () => {
      const site = await storeSite(kind);
      const reported: string[] = [];
      const onCorrupt = (taskId: string) => void reported.push(taskId);
      return {
        store: await opened(site, onCorrupt),
        ...(site.durable ? { reopen: () => opened(site, onCorrupt) } : {}),
        cleanup: site.cleanup,
        // Planted in the store underneath: the wrapper must pass the damage through as the store reports it.
        plant: site.plant,
        reported,
      };
    },
    { durable: isDurableKind(kind) },
  );

  describe(`FaultyTaskStore over ${kind}: injected faults`, () => {
    const withStore = async (fn: (store: FaultyTaskStore, reopen: () => Promise<TaskStore>) => Promise<void>) => {
      const site = await storeSite(kind);
      let store = await opened(site);
      try {
        await fn(store, async () => {
          await store.close();
          store = await opened(site);
          return store;
        });
      } finally {
        store.heal();
        await store.close();
        await site.cleanup();
      }
    };

    it('ENOSPC and EIO refuse the write before it lands; the previous record stays; a later retry lands', () =>
      withStore(async (store, reopen) => {
        const record = makeRecord();
        await store.create(record);
        for (const code of ['ENOSPC', 'EIO'] as const) {
          const fault = store.inject({ effect: code, ops: ['put'] });
          await assert.rejects(store.put({ ...record, status: 'completed', version: 2 }), (error: NodeJS.ErrnoException) => {
            assert.equal(error.code, code);
            return true;
          });
          assert.equal(fault.hits, 1);
          assert.equal((await store.get(record.taskId))?.status, 'working');
          fault.remove();
        }
        await store.put({ ...record, status: 'completed', version: 2 });
        const after = await reopen();
        assert.equal((await after.get(record.taskId))?.status, kindIsDurable(kind) ? 'completed' : undefined);
      }));

    it('failure on the Nth write: the writes before it and after it land', () =>
      withStore(async (store) => {
        const records = Array.from({ length: 5 }, () => makeRecord());
        store.inject({ effect: 'ENOSPC', skip: 2, times: 1 });
        const outcomes = [];
        for (const record of records)
          outcomes.push(
            await store.create(record).then(
              () => 'ok',
              (error: NodeJS.ErrnoException) => error.code,
            ),
          );
        assert.deepEqual(outcomes, ['ok', 'ok', 'ENOSPC', 'ok', 'ok']);
        assert.equal(store.injectedFailures, 1);
        assert.equal(await store.get(records[2]!.taskId), undefined);
        for (const index of [0, 1, 3, 4]) assert.ok(await store.get(records[index]!.taskId));
      }));

    it('putMany is one write: ENOSPC refuses every record of the batch and only those; a retry after healing lands them all', () =>
      withStore(async (store, reopen) => {
        const batch = Array.from({ length: 4 }, () => makeRecord());
        const other = makeRecord();
        for (const record of [...batch, other]) await store.create(record);
        const ended = batch.map((record) => ({ ...record, version: 2, status: 'failed' as const, statusMessage: 'ended' }));
        const fault = store.inject({ effect: 'ENOSPC', ops: ['putMany'] });
        const outcomes = await Promise.allSettled([store.putMany(ended), store.put({ ...other, version: 2, statusMessage: 'other' })]);
        assert.equal(outcomes[0].status, 'rejected');
        assert.equal((outcomes[0].reason as NodeJS.ErrnoException).code, 'ENOSPC');
        assert.equal(outcomes[1].status, 'fulfilled');
        assert.equal(fault.hits, 1);
        for (const record of batch) assert.equal((await store.get(record.taskId))?.status, 'working');
        assert.equal((await store.get(other.taskId))?.statusMessage, 'other');
        fault.remove();
        await store.putMany(ended);
        const after = await reopen();
        for (const record of ended) assert.deepEqual(await after.get(record.taskId), kindIsDurable(kind) ? record : undefined);
      }));

    it('a hung putMany shows none of its records until healed, then all of them; it counts as one write', () =>
      withStore(async (store) => {
        const batch = Array.from({ length: 3 }, () => makeRecord());
        for (const record of batch) await store.create(record);
        const before = store.writeAttempts;
        store.inject({ effect: 'hang', ops: ['putMany'], when: (write) => write.records?.length === 3 });
        let settled = false;
        const write = store
          .putMany(batch.map((record) => ({ ...record, version: 2, status: 'failed' as const })))
          .finally(() => (settled = true));
        assert.equal(store.writeAttempts, before + 1);
        for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
        assert.equal(settled, false);
        for (const record of batch) assert.equal((await store.get(record.taskId))?.status, 'working');
        store.heal();
        await write;
        for (const record of batch) assert.equal((await store.get(record.taskId))?.status, 'failed');
      }));

    it('a slow write resolves after the delay, and only then is it visible', () =>
      withStore(async (store) => {
        const record = makeRecord();
        await store.create(record);
        store.inject({ effect: { delayMs: 150 }, ops: ['put'] });
        const started = performance.now();
        const write = store.put({ ...record, statusMessage: 'slow', version: 2 });
        assert.equal((await store.get(record.taskId))?.statusMessage, 'starting');
        await write;
        assert.ok(performance.now() - started >= 140);
        assert.equal((await store.get(record.taskId))?.statusMessage, 'slow');
      }));

    it('a hung write never settles until healed, then lands', () =>
      withStore(async (store) => {
        const record = makeRecord();
        await store.create(record);
        store.inject({ effect: 'hang', ops: ['put'], when: (write) => write.record?.status === 'completed' });
        let settled = false;
        const write = store.put({ ...record, status: 'completed', version: 2 }).finally(() => (settled = true));
        await store.put({ ...record, statusMessage: 'not matched', version: 3 }).catch(() => undefined);
        for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
        assert.equal(settled, false);
        assert.equal(store.hungWrites, 1);
        store.heal();
        await write;
        assert.equal(store.hungWrites, 0);
      }));
  });
}

function kindIsDurable(kind: string): boolean {
  return kind !== 'memory';
}
