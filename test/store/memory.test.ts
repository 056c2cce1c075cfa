import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTaskStore, MemoryTaskStore } from '../../src/store/index.js';
import { runTaskStoreContract } from './contract.js';

runTaskStoreContract('MemoryTaskStore', async () => {
  const store = new MemoryTaskStore();
  await store.open();
  return { store, cleanup: async () => undefined };
});

describe('MemoryTaskStore specifics', () => {
  it('rejects calls before open()', async () => {
    await assert.rejects(new MemoryTaskStore().get('x'), /store is not open/);
  });

  it('createTaskStore({ kind: "memory" }) builds one', () => {
    assert.ok(createTaskStore({ kind: 'memory' }) instanceof MemoryTaskStore);
  });
});
