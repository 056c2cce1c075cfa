import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTaskStore, MemoryTaskStore } from '../../src/store/index.js';
import { runTaskStoreContract } from './contract.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';
import { makeRecord } from './fixtures.js';

runTaskStoreContract(
  'MemoryTaskStore',
  async () => {
    const reported: string[] = [];
    const store = new MemoryTaskStore({ onCorrupt: (taskId) => reported.push(taskId) });
    await store.open();
    return {
      store,
      cleanup: async () => undefined,
      // A memory store holds what it is handed: a record that is not one gets in through create.
      plant: ({ text }) => store.create(JSON.parse(text) as TaskRecord),
      reported,
    };
  },
  { durable: false },
);

describe('MemoryTaskStore specifics', () => {
  it('rejects calls before open()', async () => {
    await assert.rejects(new MemoryTaskStore().get('x'), /store is not open/);
  });

  it('createTaskStore({ kind: "memory" }) builds one', () => {
    assert.ok(createTaskStore({ kind: 'memory' }) instanceof MemoryTaskStore);
  });

  it("a read copies what is not plain JSON exactly as structuredClone does, and the copy is the reader's own", async () => {
    // The read copies plain data by hand (cheaper than structuredClone); these shapes must fall back to structuredClone.
    const sparse: unknown[] = [1];
    sparse[2] = 3;
    const checkpoint = {
      at: new Date(5),
      seen: new Map([['a', 1]]),
      sparse,
      parsed: JSON.parse('{"__proto__": {"polluted": true}, "x": [1, {"y": null}]}') as unknown,
      nothing: undefined,
    };
    const store = new MemoryTaskStore();
    await store.open();
    const record = makeRecord({ checkpoint });
    await store.create(record);
    const read = await store.get(record.taskId);
    assert.deepStrictEqual(read, structuredClone(record));
    const copied = read.checkpoint as typeof checkpoint;
    assert.ok(copied.at instanceof Date && copied.seen instanceof Map);
    assert.equal(1 in copied.sparse, false, 'the hole stays a hole');
    assert.ok(Object.hasOwn(copied.parsed as object, '__proto__'), '__proto__ stays an own key');
    assert.equal(Object.getPrototypeOf(copied.parsed), Object.prototype);
    // Plain records: a deep copy, in key order, undefined values kept.
    const plain = makeRecord({ checkpoint: { a: [1, { b: 'c' }], u: undefined } });
    await store.create(plain);
    const first = (await store.get(plain.taskId))!;
    assert.deepStrictEqual(Object.keys(first), Object.keys(structuredClone(plain)));
    assert.ok(Object.hasOwn(first.checkpoint as object, 'u'));
    ((first.checkpoint as { a: unknown[] }).a[1] as { b: string }).b = 'changed';
    assert.equal((((await store.get(plain.taskId))!.checkpoint as { a: unknown[] }).a[1] as { b: string }).b, 'c');
  });

  it('a write copies as structuredClone does: the writer keeps nothing shared, and what cannot be cloned is refused', async () => {
    // Writes copy plain data by hand too; the copy must be the store's own.
    const store = new MemoryTaskStore();
    await store.open();
    const record = makeRecord({ checkpoint: { a: [1, { b: 'c' }], at: new Date(7) } });
    await store.create(record);
    ((record.checkpoint as { a: unknown[] }).a[1] as { b: string }).b = 'changed after create';
    let read = (await store.get(record.taskId))!;
    assert.equal(((read.checkpoint as { a: unknown[] }).a[1] as { b: string }).b, 'c');
    assert.ok((read.checkpoint as { at: unknown }).at instanceof Date);
    const next = { ...read, version: read.version + 1, checkpoint: { a: [2, { b: 'd' }] } };
    await store.put(next);
    (next.checkpoint.a[1] as { b: string }).b = 'changed after put';
    read = (await store.get(record.taskId))!;
    assert.equal(((read.checkpoint as { a: unknown[] }).a[1] as { b: string }).b, 'd');
    const many = { ...read, version: read.version + 1, checkpoint: { a: [3, { b: 'e' }] } };
    await store.putMany([many]);
    (many.checkpoint.a[1] as { b: string }).b = 'changed after putMany';
    read = (await store.get(record.taskId))!;
    assert.equal(((read.checkpoint as { a: unknown[] }).a[1] as { b: string }).b, 'e');
    // A function is not data: refused on the way in exactly as structuredClone refuses it, and nothing is stored.
    const bad = makeRecord({ checkpoint: { f: () => 1 } });
    await assert.rejects(store.create(bad), (error: Error) => error.name === 'DataCloneError');
    assert.equal(await store.get(bad.taskId), undefined);
  });
});
