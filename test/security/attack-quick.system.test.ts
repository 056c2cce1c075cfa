/**
 * The quick subset of `npm run attack` (scripts/attack.ts): each scenario runs
 * against a real `taskvisor serve` with a bystander beside it, at a tenth of
 * the full run's scale. The server must serve the bystander throughout and
 * stay up; the full figures live in the attack report, not here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runScenario } from '../../scripts/attack/harness.js';
import { SCENARIOS } from '../../scripts/attack/scenarios.js';

for (const scenario of SCENARIOS.filter((candidate) => candidate.quick)) {
  test(`attack ${scenario.name}: ${scenario.resource} — the server serves a bystander throughout`, { timeout: 180_000 }, async () => {
    const result = await runScenario(scenario, 0.1);
    assert.equal(result.error, undefined, `the attack itself failed: ${result.error}`);
    assert.ok(
      result.servedThroughout,
      `not served throughout: ${result.failedCalls} of ${result.calls} bystander calls and ${result.healthFailures} health probes failed`,
    );
  });
}
