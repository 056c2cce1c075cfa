/**
 * The passivated tasks' deadline queue: a min-heap in place
 * of a scan of every passivated task. Property: for any interleaving of
 * pushes, pops of what is due and compactions, what comes out is exactly
 * what a sorted list would give (every due item, earliest first, none twice,
 * none early), and `earliest` is the smallest deadline still queued.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { DeadlineQueue } from '../../src/runtime/DeadlineQueue.js';

const step = fc.oneof(
  fc.record({ op: fc.constant('push' as const), at: fc.integer({ min: 0, max: 1000 }) }),
  fc.record({ op: fc.constant('popDue' as const), now: fc.integer({ min: -1, max: 1000 }) }),
  fc.record({ op: fc.constant('compact' as const), keepEvery: fc.integer({ min: 1, max: 3 }) }),
);

describe('DeadlineQueue', () => {
  it('gives out due items earliest first, as a sorted list would, through pushes, pops and compactions', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        const queue = new DeadlineQueue();
        let model: Array<{ at: number; key: string }> = [];
        let next = 0;
        for (const s of steps) {
          if (s.op === 'push') {
            const key = `k${next++}`;
            queue.push(s.at, key);
            model.push({ at: s.at, key });
          } else if (s.op === 'popDue') {
            const due = queue.popDue(s.now);
            const expected = model.filter((item) => item.at <= s.now).sort((a, b) => a.at - b.at);
            // Equal deadlines may come out in any order: compare deadlines in order, and the keys as a set.
            assert.deepEqual(
              due.map((item) => item.at),
              expected.map((item) => item.at),
            );
            assert.deepEqual(due.map((item) => item.key).sort(), expected.map((item) => item.key).sort());
            model = model.filter((item) => item.at > s.now);
          } else {
            // What passivation does when stale items pile up: rebuild from the ones still wanted.
            model = model.filter((_, index) => index % s.keepEvery === 0);
            queue.compact(model);
          }
          assert.equal(queue.size, model.length);
          assert.equal(queue.earliest, model.length === 0 ? Infinity : Math.min(...model.map((item) => item.at)));
        }
      }),
    );
  });
});
