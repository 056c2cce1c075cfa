/**
 * Bounded: the crash checker of `npm run chaos` (real
 * `taskvisor serve` children, SIGKILL at seeded random points, every
 * acknowledged id checked) on lowdb and sqlite, two runs of one kill each (`npm run chaos` runs more);
 * any lost, stuck, duplicated, changed or wrong task fails the test. The
 * memory store is the negative control: not durable, so the checker must
 * report every acknowledged task of a killed server as lost.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chaosTable, runChaos } from './chaosHarness.js';

const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));

describe(`crash checker (seed ${seed}; replay with CHAOS_SEED)`, () => {
  it('memory (not durable): the checker reports every acknowledged task as lost', { timeout: 300_000 }, async () => {
    const row = await runChaos({ store: 'memory', runs: 1, kills: 1, seed, maxLifeMs: 1_500 });
    assert.ok(row.acked > 0, chaosTable([row]));
    assert.equal(row.lost, row.acked, `${chaosTable([row])}\n${row.findings.slice(0, 5).join('\n')}`);
  });

  for (const store of ['lowdb', 'sqlite'] as const) {
    it(`${store}: 2 runs of 1 kill: nothing lost, stuck, duplicated, changed or wrong`, { timeout: 600_000 }, async (t) => {
      const row = await runChaos({ store, runs: 2, kills: 1, seed, maxLifeMs: 1_500 });
      for (const line of chaosTable([row]).split('\n')) t.diagnostic(line);
      assert.ok(row.acked > 0, 'the checker acknowledged nothing');
      assert.deepEqual(
        { lost: row.lost, stuck: row.stuck, duplicated: row.duplicated, terminalChanged: row.terminalChanged, badResult: row.badResult },
        { lost: 0, stuck: 0, duplicated: 0, terminalChanged: 0, badResult: 0 },
        `${chaosTable([row])}\n${row.findings.join('\n')}`,
      );
    });
  }
});
