/**
 * The Persister skips a write that would store what is already stored, by
 * comparing the new record with the last one stored, not with a JSON copy of
 * it (no ~1 KB string kept per live task). Equality is JSON's: key
 * order and properties holding `undefined` make no difference, so a task
 * recovered from a store that gives keys back in another order is not written
 * again for nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor } from 'xstate';
import { taskMachine, TASK_MACHINE_VERSION } from '../../machines/task/index.js';
import { Persister, sameRecordContent } from '../../src/runtime/Persister.js';
import { recordOf } from '../../src/tasks/project.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';
import type { TaskStore } from '../../src/store/TaskStore.js';

/** Every key of every object in reverse order, as a store might give the record back. */
const reordered = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(reordered)
    : value !== null && typeof value === 'object'
      ? Object.fromEntries(
          Object.entries(value)
            .reverse()
            .map(([key, member]) => [key, reordered(member)]),
        )
      : value;

describe('Persister write dedupe', () => {
  it('writes nothing for a change event that changes nothing, even against a stored record in another key order', async () => {
    const puts: TaskRecord[] = [];
    const store = { put: async (record: TaskRecord) => void puts.push(record) } as unknown as TaskStore;
    const persister = new Persister({ store, machineVersion: TASK_MACHINE_VERSION, onError: () => {} }, 1);
    const actor = createActor(taskMachine, {
      input: { taskId: 't1', owner: 'alice', tool: 'wait', args: { n: 1 }, now: 1000, ttlMs: 60_000 },
    });
    const stored = recordOf(actor.getSnapshot(), actor.getPersistedSnapshot(), 1, TASK_MACHINE_VERSION);
    actor.start();
    persister.attach(actor, JSON.parse(JSON.stringify(reordered(stored))) as TaskRecord);

    persister.next();
    await persister.flushed();
    assert.equal(puts.length, 0);

    actor.send({ type: 'STATUS', at: 2000, message: 'halfway' });
    persister.next();
    await persister.flushed();
    assert.equal(puts.length, 1);
    assert.equal(puts[0]!.statusMessage, 'halfway');
    assert.equal(puts[0]!.version, 2);
    assert.equal(persister.durable, puts[0]);

    // The same message again: the guard makes it no change, and nothing is written.
    actor.send({ type: 'STATUS', at: 3000, message: 'halfway' });
    persister.next();
    await persister.flushed();
    assert.equal(puts.length, 1);
    actor.stop();
  });

  it('compares as JSON: key order and undefined members do not count, the version does not, anything else does', () => {
    const base: TaskRecord = {
      taskId: 't1',
      owner: 'alice',
      tool: 'wait',
      status: 'working',
      createdAt: 1,
      lastUpdatedAt: 1,
      ttlMs: null,
      version: 1,
      machineVersion: 1,
      snapshot: { value: { active: 'working' }, context: { list: [1, { a: 2 }] } },
    };
    const same: TaskRecord = {
      ...(reordered(base) as TaskRecord),
      version: 7,
      snapshot: { context: { list: [1, { a: 2 }], gone: undefined }, value: { active: 'working' } },
    };
    assert.equal(sameRecordContent(same, base), true);
    assert.equal(sameRecordContent(base, same), true);
    assert.equal(sameRecordContent({ ...base, statusMessage: 'x' }, base), false);
    assert.equal(sameRecordContent(base, { ...base, statusMessage: 'x' }), false);
    assert.equal(sameRecordContent({ ...base, snapshot: { value: { active: 'working' }, context: { list: [1, { a: 3 }] } } }, base), false);
    assert.equal(sameRecordContent({ ...base, snapshot: { value: { active: 'working' }, context: { list: [1] } } }, base), false);
    assert.equal(
      sameRecordContent({ ...base, snapshot: { value: { active: 'working' }, context: { list: { 0: 1, 1: { a: 2 } } } } }, base),
      false,
    );
  });
});
