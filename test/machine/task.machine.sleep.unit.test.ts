/**
 * The task machine's sleeps (`ctx.sleep`): `SLEEP` keeps a
 * key's first wake time and the earliest pending one, `WOKE` clears or moves
 * it, neither is a visible change (no `lastUpdatedAt` touch); an idle
 * `CANCEL` (a passivated sleeping task: nothing runs) ends a working task at
 * once while a plain one stays cooperative (T-24); a snapshot from before
 * sleeps existed restores and takes them (no version bump).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor, type Snapshot } from 'xstate';
import { statusOf, taskMachine, type TaskInput } from '../../machines/task/index.js';

const INPUT: TaskInput = { taskId: 't', owner: 'alice', tool: 'nap', args: {}, now: 0, ttlMs: 60_000 };

function started(snapshot?: unknown) {
  const actor = createActor(taskMachine, { input: INPUT, ...(snapshot ? { snapshot: snapshot as Snapshot<unknown> } : {}) });
  actor.start();
  return actor;
}

describe('task machine sleeps', () => {
  it('SLEEP keeps the first wake time of a key; WOKE clears the pending one; lastUpdatedAt untouched', () => {
    const actor = started();
    actor.send({ type: 'SLEEP', at: 5, key: 'a', wakeAt: 100, until: 100 });
    actor.send({ type: 'SLEEP', at: 6, key: 'a', wakeAt: 999, until: 100 });
    let { context } = actor.getSnapshot();
    assert.deepEqual(context.sleeps, { a: 100 });
    assert.equal(context.sleepingUntil, 100);
    assert.equal(context.lastUpdatedAt, 0);
    actor.send({ type: 'SLEEP', at: 7, key: '__proto__', wakeAt: 50, until: 50 });
    context = actor.getSnapshot().context;
    assert.deepEqual(Object.keys(context.sleeps!), ['a', '__proto__'], 'a "__proto__" key stays a plain own key (I-4)');
    assert.equal(context.sleepingUntil, 50);
    actor.send({ type: 'WOKE', at: 50, until: 100 });
    assert.equal(actor.getSnapshot().context.sleepingUntil, 100);
    actor.send({ type: 'WOKE', at: 100, until: null });
    assert.equal(actor.getSnapshot().context.sleepingUntil, undefined);
    assert.equal(statusOf(actor.getSnapshot()), 'working');
  });

  it('an idle CANCEL ends a working task at once; a plain one stays cooperative', () => {
    const idle = started();
    idle.send({ type: 'CANCEL', at: 3, idle: true });
    assert.equal(statusOf(idle.getSnapshot()), 'cancelled');
    assert.equal(idle.getSnapshot().context.statusMessage, 'The task was cancelled');
    assert.equal(idle.getSnapshot().context.lastUpdatedAt, 3);
    const live = started();
    live.send({ type: 'CANCEL', at: 3 });
    assert.equal(statusOf(live.getSnapshot()), 'working');
    assert.equal(live.getSnapshot().context.cancelRequested, true);
  });

  it('a snapshot without sleeps (older runtime) restores and records them', () => {
    const old = started();
    const persisted = JSON.parse(JSON.stringify(old.getPersistedSnapshot())) as { context: Record<string, unknown> };
    assert.equal('sleeps' in persisted.context, false);
    old.stop();
    const restored = started(persisted);
    restored.send({ type: 'SLEEP', at: 1, key: 'a', wakeAt: 10, until: 10 });
    assert.deepEqual(restored.getSnapshot().context.sleeps, { a: 10 });
  });
});
