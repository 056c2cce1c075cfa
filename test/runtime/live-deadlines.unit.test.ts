/**
 * Live tasks' ttl deadlines (T-26): one timer for the process sends
 * `DEADLINE` to each live task actor whose ttl ran out, instead of an invoked
 * timer actor per task. The task machine no longer invokes a `deadline`
 * child, and a snapshot stored before (with one) restores without it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor, type Snapshot } from 'xstate';
import { taskMachine, type TaskEvent } from '../../machines/task/index.js';
import { LiveDeadlines, type DeadlineActor } from '../../src/runtime/LiveDeadlines.js';
import { waitFor } from '../support/processes.js';

/** A stand-in task actor that records what it is sent. */
function fakeActor(taskId: string, createdAt: number, ttlMs: number | null) {
  const sent: TaskEvent[] = [];
  let status = 'active';
  const actor: DeadlineActor & { sent: TaskEvent[]; end(): void } = {
    sent,
    end: () => void (status = 'done'),
    getSnapshot: () => ({ status, context: { taskId, createdAt, ttlMs } }),
    send: (event) => void sent.push(event),
  };
  return actor;
}

function registryOf(actors: Map<string, DeadlineActor>) {
  return {
    get: (taskId: string) => (actors.has(taskId) ? { actor: actors.get(taskId)! } : undefined),
    all: () => [...actors.values()].map((actor) => ({ actor })),
    get size() {
      return actors.size;
    },
  };
}

describe('LiveDeadlines', () => {
  it('sends DEADLINE once to each live task whose ttl ran out, at its deadline and not before; ended and gone tasks get nothing', async () => {
    const start = Date.now();
    const actors = new Map<string, DeadlineActor>();
    const deadlines = new LiveDeadlines({ now: Date.now, registry: registryOf(actors) });
    const early = fakeActor('early', start, 40);
    const late = fakeActor('late', start, 150);
    const ended = fakeActor('ended', start, 40);
    const never = fakeActor('never', start, null);
    for (const actor of [early, late, ended, never]) actors.set(actor.getSnapshot().context.taskId, actor);
    deadlines.add('late', start + 150);
    deadlines.add('early', start + 40);
    deadlines.add('early', start + 40); // rehydrated: queued twice, ends once
    deadlines.add('ended', start + 40);
    deadlines.add('gone', start + 40); // passivated or removed since: no actor
    deadlines.add('never', null);
    ended.end();
    // The late deadline fires after every earlier one, so once it has, the others have had their chance.
    await waitFor(() => late.sent.length > 0, { what: 'the late DEADLINE' });
    assert.deepEqual(
      early.sent.map((event) => event.type),
      ['DEADLINE'],
    );
    assert.deepEqual(
      late.sent.map((event) => event.type),
      ['DEADLINE'],
    );
    assert.ok(
      early.sent.every((event) => event.at >= start + 40) && late.sent.every((event) => event.at >= start + 150),
      'not before its deadline',
    );
    assert.deepEqual(ended.sent, []);
    assert.deepEqual(never.sent, []);
    deadlines.stop();
  });

  it('after stop nothing fires (I-9)', async () => {
    const actor = fakeActor('t', Date.now(), 20);
    const deadlines = new LiveDeadlines({ now: Date.now, registry: registryOf(new Map([['t', actor]])) });
    deadlines.add('t', Date.now() + 20);
    deadlines.stop();
    deadlines.add('t', Date.now() + 20);
    // A running twin with a later deadline: timers fire in deadline order, so once its DEADLINE came,
    // the stopped one's would have come before it.
    const witness = fakeActor('w', Date.now(), 40);
    const running = new LiveDeadlines({ now: Date.now, registry: registryOf(new Map([['w', witness]])) });
    running.add('w', Date.now() + 40);
    await waitFor(() => witness.sent.length > 0, { what: "the running twin's DEADLINE" });
    running.stop();
    assert.deepEqual(actor.sent, []);
  });

  it('a rebuilt queue keeps every live task, the one being added included, and drops the stale items', async () => {
    const start = Date.now();
    const actors = new Map<string, DeadlineActor>();
    const deadlines = new LiveDeadlines({ now: Date.now, registry: registryOf(actors) });
    const kept = fakeActor('kept', start, 40);
    actors.set('kept', kept);
    deadlines.add('kept', start + 40);
    // Stale items (tasks long gone) up to the limit: 2 × 1 live task + 1,024 slack. The next add rebuilds.
    for (let i = 0; i < 1026; i++) deadlines.add(`gone-${i}`, start + 60_000);
    const queue = (deadlines as unknown as { timer: { size: number } }).timer;
    assert.equal(queue.size, 1027);
    // Not registered yet when it is added (recovery registers an actor around its start).
    const fresh = fakeActor('fresh', start, 40);
    deadlines.add('fresh', start + 40);
    actors.set('fresh', fresh);
    assert.equal(queue.size, 2, 'rebuilt from the live tasks, plus the one added');
    await waitFor(() => kept.sent.length > 0 && fresh.sent.length > 0, { what: 'both DEADLINEs' });
    assert.equal(kept.sent.length, 1);
    assert.equal(fresh.sent.length, 1);
    deadlines.stop();
  });
});

describe('task machine without a deadline child', () => {
  it('invokes no child, and restores a snapshot stored with deadline and worker children (an older machine version) without them', () => {
    const input = { taskId: 't1', owner: 'alice', tool: 'wait', args: {}, now: 1000, ttlMs: 60_000 };
    const actor = createActor(taskMachine, { input }).start();
    assert.deepEqual(Object.keys(actor.getSnapshot().children), []);
    const persisted = actor.getPersistedSnapshot() as unknown as { children: Record<string, unknown> };
    actor.stop();
    const old = {
      ...persisted,
      children: {
        worker: { src: 'worker', snapshot: { status: 'active', input: { taskId: 't1', tool: 'wait', args: {} } }, syncSnapshot: false },
        deadline: { src: 'deadline', snapshot: { status: 'active', input: { deadline: 61_000 } }, syncSnapshot: false },
      },
    };
    const restored = createActor(taskMachine, { snapshot: old as unknown as Snapshot<unknown>, input });
    assert.equal(restored.getSnapshot().status, 'active');
    restored.start();
    assert.deepEqual(Object.keys(restored.getSnapshot().children), []);
    restored.send({ type: 'DEADLINE', at: 61_000 });
    assert.equal(restored.getSnapshot().value, 'failed');
    assert.match((restored.getSnapshot().context.error as { message: string }).message, /expired/);
    restored.stop();
  });
});
