/**
 * PassivatedDeadlines over the shared DeadlineTimer (T-26): a due passivated
 * task gets one DEADLINE; one whose end could not be stored is tried again
 * within a second (it must not stay unexpired); nothing fires after stop (I-9).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PassivatedDeadlines } from '../../src/runtime/PassivatedDeadlines.js';
import type { PassivatedTask } from '../../src/runtime/TaskRegistry.js';
import { silentLogger } from '../../src/index.js';
import { waitFor } from '../support/processes.js';

/** PassivatedDeadlines' pause before it tries a failed delivery again. */
const RETRY_MS = 1_000;

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
    const callTimes: number[] = [];
    let failures = 1;
    const deliver = async (taskId: string, principal: string, event: { type: string }) => {
      calls.push(`${taskId}:${principal}:${event.type}`);
      callTimes.push(Date.now());
      if (failures-- > 0) throw new Error('disk full');
      tasks.delete(taskId);
      return true;
    };
    const deadlines = new PassivatedDeadlines({ registry: registryOf(tasks), logger: silentLogger, now: Date.now, deliver });
    deadlines.add('t1', tasks.get('t1')!.deadline);
    deadlines.add('t1', tasks.get('t1')!.deadline); // passivated twice: still one DEADLINE per firing
    // Both queued items fire in the same turn, so a second DEADLINE would be there as soon as the first is.
    await waitFor(() => calls.length > 0, { what: 'the first DEADLINE' });
    assert.deepEqual(calls, ['t1:alice:DEADLINE']);
    await waitFor(() => calls.length > 1, { timeoutMs: 10_000, what: 'the retried DEADLINE' });
    assert.ok(callTimes[1]! - callTimes[0]! >= RETRY_MS - 5, 'retried after its pause, not at once');
    assert.deepEqual(calls, ['t1:alice:DEADLINE', 't1:alice:DEADLINE']);
    tasks.set('t2', entry(Date.now() + 20));
    deadlines.add('t2', tasks.get('t2')!.deadline);
    deadlines.stop();
    // A running twin with a later deadline: the shared timer fires in deadline order, so once its DEADLINE
    // came, the stopped one's would have come before it.
    const witnessed: string[] = [];
    const witnessTasks = new Map([['w', entry(Date.now() + 40)]]);
    const witness = new PassivatedDeadlines({
      registry: registryOf(witnessTasks),
      logger: silentLogger,
      now: Date.now,
      deliver: async (taskId) => {
        witnessed.push(taskId);
        witnessTasks.delete(taskId);
        return Promise.resolve(true);
      },
    });
    witness.add('w', witnessTasks.get('w')!.deadline);
    await waitFor(() => witnessed.length > 0, { what: "the running twin's DEADLINE" });
    witness.stop();
    assert.equal(calls.length, 2);
  });
});
