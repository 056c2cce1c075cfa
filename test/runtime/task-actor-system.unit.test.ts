/**
 * Task actors share one xstate system (TaskActorSystem): each leaves it when
 * it stops, ends or fails, so a runtime's shared system holds only its running
 * tasks; a member's persisted snapshot is the one a root actor of its own
 * system persists, and either restores into the other; a started actor keeps
 * neither its options nor its input.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor, type AnyActorRef } from 'xstate';
import { taskMachine } from '../../machines/task/index.js';
import { releaseStartOptions, sharedTaskSystem, stopTaskActor } from '../../src/runtime/TaskActorSystem.js';

const input = (taskId: string) => ({ taskId, owner: 'alice', tool: 'wait', args: { n: 1 }, now: 1000, ttlMs: 60_000 });

/** The shared system's running members, counted through the two calls xstate makes on it as they start and leave. */
function countMembers(parent: AnyActorRef): { readonly size: number } {
  const system = parent.system as unknown as { _register(id: string, ref: AnyActorRef): string; _unregister(ref: AnyActorRef): void };
  const members = new Set<string>();
  const register = system._register.bind(system);
  const unregister = system._unregister.bind(system);
  system._register = (id, ref) => (members.add(id), register(id, ref));
  system._unregister = (ref) => (members.delete(ref.sessionId), unregister(ref));
  return {
    get size() {
      return members.size;
    },
  };
}

describe('the task actors shared system', () => {
  it('holds only running tasks: stopped, finished and failed ones leave it', () => {
    const shared = sharedTaskSystem();
    const members = countMembers(shared.parent);
    const actors = ['a', 'b', 'c', 'd'].map((id) => createActor(taskMachine, { input: input(id), ...shared }));
    const completed: string[] = [];
    for (const actor of actors) {
      assert.equal(actor.system, shared.parent.system);
      actor.subscribe({ complete: () => completed.push(actor.getSnapshot().context.taskId), error: () => {} });
      actor.start();
    }
    assert.equal(members.size, 4);

    stopTaskActor(actors[0]!);
    actors[1]!.send({ type: 'WORK_DONE', at: 2000, result: { ok: true } });
    actors[2]!.send({ type: 'WORK_FAILED', at: 2000, error: { code: -32603, message: 'boom' } });
    assert.equal(members.size, 1);
    assert.equal(actors[1]!.getSnapshot().status, 'done');
    assert.deepEqual(completed.sort(), ['a', 'b', 'c']);

    stopTaskActor(actors[3]!);
    assert.equal(members.size, 0);
    // A stopped member ignores what it is sent, as a stopped root does.
    actors[3]!.send({ type: 'STATUS', at: 3000, message: 'late' });
    assert.equal(actors[3]!.getSnapshot().context.statusMessage, undefined);
  });

  it('persists the snapshot a root actor persists, and restores from either', () => {
    const shared = sharedTaskSystem();
    const member = createActor(taskMachine, { input: input('t1'), ...shared }).start();
    const root = createActor(taskMachine, { input: input('t1') }).start();
    for (const actor of [member, root]) actor.send({ type: 'STATUS', at: 2000, message: 'halfway' });
    const persisted = member.getPersistedSnapshot();
    assert.deepEqual(persisted, root.getPersistedSnapshot());

    const restoredMember = createActor(taskMachine, { input: input('t1'), snapshot: root.getPersistedSnapshot(), ...shared }).start();
    const restoredRoot = createActor(taskMachine, { input: input('t1'), snapshot: persisted }).start();
    assert.deepEqual(restoredMember.getPersistedSnapshot(), restoredRoot.getPersistedSnapshot());
    assert.equal(restoredMember.getSnapshot().context.statusMessage, 'halfway');
    for (const actor of [member, restoredMember]) stopTaskActor(actor);
    for (const actor of [root, restoredRoot]) stopTaskActor(actor);
  });

  it('a started actor lets go of its options and input, and goes on as before', () => {
    const shared = sharedTaskSystem();
    const taskInput = input('t2');
    const actor = createActor(taskMachine, { input: taskInput, ...shared }).start();
    releaseStartOptions(actor);
    assert.ok(!Object.values((actor as unknown as { options: object }).options).includes(taskInput));
    actor.send({ type: 'STATUS', at: 2000, message: 'halfway' });
    assert.equal(actor.getSnapshot().context.statusMessage, 'halfway');
    assert.equal(actor.getSnapshot().context.taskId, 't2');
    actor.send({ type: 'WORK_DONE', at: 3000, result: { ok: true } });
    assert.equal(actor.getSnapshot().status, 'done');
  });
});
