/**
 * Per-principal admission slots: one acquire/release
 * API. Property: whatever the interleaving of acquires (refused at the limit),
 * adoptions and releases (including double releases), a principal never holds
 * more than the limit through `acquire`, counts match the slots still held,
 * and once no slot is held every count is zero.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { AdmissionSlots, type Slot } from '../../src/runtime/AdmissionSlots.js';

const principal = fc.constantFrom('alice', 'bob', 'carol');
const command = fc.oneof(
  fc.record({ op: fc.constant('acquire' as const), principal }),
  fc.record({ op: fc.constant('adopt' as const), principal }),
  fc.record({ op: fc.constant('release' as const), index: fc.nat() }),
  fc.record({ op: fc.constant('releaseAgain' as const), index: fc.nat() }),
);

describe('AdmissionSlots', () => {
  it('slots always return to zero when no task is live; acquire never overshoots the limit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(command, { maxLength: 80 }), (limit, commands) => {
        const slots = new AdmissionSlots(limit);
        const held: Slot[] = [];
        const released: Slot[] = [];
        for (const step of commands) {
          if (step.op === 'acquire') {
            const before = slots.count(step.principal);
            try {
              held.push(slots.acquire(step.principal));
              assert.ok(before < limit, 'acquired above the limit');
            } catch (error) {
              assert.ok(before >= limit, `refused below the limit: ${(error as Error).message}`);
              assert.equal(slots.count(step.principal), before, 'a refused acquire changed the count');
            }
          } else if (step.op === 'adopt') {
            held.push(slots.adopt(step.principal));
          } else if (step.op === 'release' && held.length > 0) {
            const [slot] = held.splice(step.index % held.length, 1);
            slot!.release();
            released.push(slot!);
          } else if (step.op === 'releaseAgain' && released.length > 0) {
            released[step.index % released.length]!.release(); // idempotent
          }
          for (const name of ['alice', 'bob', 'carol']) {
            assert.equal(slots.count(name), held.filter((slot) => slot.principal === name).length);
          }
        }
        for (const slot of held.splice(0)) slot.release();
        assert.equal(slots.total, 0);
        for (const name of ['alice', 'bob', 'carol']) assert.equal(slots.count(name), 0);
      }),
      { numRuns: 300 },
    );
  });

  it('the refusal is the maxLiveTasksPerPrincipal limit error', () => {
    const slots = new AdmissionSlots(1);
    slots.acquire('alice');
    assert.throws(() => slots.acquire('alice'), /maxLiveTasksPerPrincipal = 1/);
    slots.acquire('bob');
  });
});
