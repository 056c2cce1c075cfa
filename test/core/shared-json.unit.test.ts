/**
 * Shared frozen JSON: what every live task would otherwise hold a copy of
 * (empty context collections, repeated client capabilities, state values).
 * A shared value is frozen to its leaves; the interner is bounded in count
 * and size; the memory store keeps shared parts as they are on the way in
 * and hands every reader a copy of its own; the task machine starts every
 * context with the shared empties, and its updates replace them, never edit.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor } from 'xstate';
import { taskMachine } from '../../machines/task/index.js';
import { EMPTY_JSON_ARRAY, EMPTY_JSON_OBJECT, internJson, isSharedJson, jsonInterner, shareJson } from '../../src/core/sharedJson.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { makeRecord } from '../store/fixtures.js';

describe('shared JSON', () => {
  it('shareJson freezes to the leaves and marks the value shared', () => {
    const value = shareJson({ a: { b: [1, { c: 2 }] } });
    assert.ok(isSharedJson(value) && isSharedJson(value.a) && isSharedJson(value.a.b[1]));
    assert.throws(() => {
      (value.a.b[1] as { c: number }).c = 3;
    }, TypeError);
    assert.equal(isSharedJson({}), false);
    assert.equal(isSharedJson(Object.freeze({})), false, 'frozen is not enough: only what shareJson froze to its leaves');
    assert.ok(isSharedJson(EMPTY_JSON_OBJECT) && isSharedJson(EMPTY_JSON_ARRAY));
  });

  it('internJson hands equal values one shared copy, never the caller’s own object', () => {
    const sent = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    const first = internJson(sent);
    const second = internJson(JSON.parse(JSON.stringify(sent)) as typeof sent);
    assert.equal(first, second);
    assert.notEqual(first, sent, 'the caller keeps its object unfrozen');
    assert.equal(Object.isFrozen(sent), false);
    assert.deepEqual(first, sent);
  });

  it('an interner is bounded: past its count or size a value comes back as it came, unfrozen', () => {
    const intern = jsonInterner(2, 20);
    const a = intern({ n: 1 });
    intern({ n: 2 });
    const third = { n: 3 };
    assert.equal(intern(third), third);
    assert.equal(Object.isFrozen(third), false);
    assert.equal(intern({ n: 1 }), a, 'the ones kept are still shared');
    const big = { text: 'x'.repeat(40) };
    assert.equal(jsonInterner(10, 20)(big), big);
  });

  it('the memory store keeps shared parts as they are, and every reader gets a copy of its own', async () => {
    const store = new MemoryTaskStore();
    await store.open();
    const capabilities = internJson({ elicitation: { form: {} } });
    const record = makeRecord({ checkpoint: { capabilities, empty: EMPTY_JSON_OBJECT, own: { x: 1 } } });
    await store.create(record);
    (record.checkpoint as { own: { x: number } }).own.x = 2;
    const read = (await store.get(record.taskId))!;
    const checkpoint = read.checkpoint as { capabilities: object; empty: object; own: { x: number } };
    assert.equal(checkpoint.own.x, 1, 'unshared parts were copied on the way in');
    assert.deepEqual(checkpoint.capabilities, capabilities);
    assert.notEqual(checkpoint.capabilities, capabilities, 'a read copies shared parts too');
    assert.equal(Object.isFrozen(checkpoint.capabilities), false);
    await store.close();
  });

  it('a new task context starts with the shared empties; answering and asking replace them', () => {
    const actor = createActor(taskMachine, {
      input: { taskId: 't', owner: 'o', tool: 'x', args: {}, now: 0, ttlMs: null },
    }).start();
    const { context } = actor.getSnapshot();
    assert.equal(context.answers, EMPTY_JSON_OBJECT);
    assert.equal(context.inputRequests, EMPTY_JSON_OBJECT);
    assert.equal(context.issuedKeys, EMPTY_JSON_ARRAY);
    const request = { method: 'roots/list' as const, params: {} };
    actor.send({ type: 'INPUT_NEEDED', at: 1, key: 'k', request });
    actor.send({ type: 'INPUT_RESPONSES', at: 2, responses: { k: { roots: [] } } });
    const after = actor.getSnapshot().context;
    assert.deepEqual(after.issuedKeys, ['k']);
    assert.deepEqual(after.answers, { k: { roots: [] } });
    assert.deepEqual(after.inputRequests, {});
    assert.ok(isSharedJson(EMPTY_JSON_OBJECT) && Object.keys(EMPTY_JSON_OBJECT).length === 0, 'the shared empty stayed empty');
    actor.stop();
  });
});
