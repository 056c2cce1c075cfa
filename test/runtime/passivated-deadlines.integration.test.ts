/**
 * PassivatedDeadlines over the shared DeadlineTimer (T-26): a due passivated
 * task gets one DEADLINE; one whose end could not be stored is tried again
 * within a second (it must not stay unexpired); nothing fires after stop (I-9).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { PassivatedDeadlines } from '../../src/runtime/PassivatedDeadlines.js';
import type { PassivatedTask } from '../../src/runtime/TaskRegistry.js';
import { silentLogger } from '../../src/index.js';

function registryOf(tasks: Map<string, PassivatedTask>) {
  return {
    passivated: (taskId: string) => tasks.get(taskId),
    get passivatedSize() {
      return tasks.size;
    },
    allPassivated: () => tasks.entries(),
  };
}

const entry = (deadline: number): PassivatedTask => ({ owner: 'alice', slot: {} as PassivatedTask['slot'], deadline, wakeAt: null });

describe('PassivatedDeadlines', () => {
  it('retries a DEADLINE whose delivery failed, and fires nothing after stop', async () => {
    const tasks = new Map([['t1', entry(Date.now() + 20)]]);
    const calls: string[] = [];
    let failures = 1;
    const deadlines = new PassivatedDeadlines({
      registry: registryOf(tasks),
      logger: silentLogger,
      now: Date.now,
      deliver: async (taskId, principal, event) => {
        calls.push(`${taskId}:${principal}:${event.type}`);
        if (failures-- > 0) throw new Error('disk full');
        tasks.delete(taskId);
        return true;
      },
    });
    deadlines.add('t1', tasks.get('t1')!.deadline);
    deadlines.add('t1', tasks.get('t1')!.deadline); // passivated twice: still one DEADLINE per firing
    await delay(120);
    assert.deepEqual(calls, ['t1:alice:DEADLINE']);
    await delay(1_100);
    assert.deepEqual(calls, ['t1:alice:DEADLINE', 't1:alice:DEADLINE'], 'tried again within a second');
    tasks.set('t2', entry(Date.now() + 20));
    deadlines.add('t2', tasks.get('t2')!.deadline);
    deadlines.stop();
    await delay(80);
    assert.equal(calls.length, 2);
  });
});
