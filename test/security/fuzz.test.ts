/**
 * The bounded fuzz run of `npm test` (the long one: `npm run fuzz`). A fixed
 * seed unless FUZZ_SEED is set, so a failure here replays exactly.
 */
import { it } from 'node:test';
import { runFuzz } from './fuzzHarness.js';

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20260728;

it('fuzzed JSON-RPC frames over HTTP, WebSocket and stdio: always answered, never 5xx or a hang, victim tasks unchanged', { timeout: 120_000 }, async (t) => {
  const { frames } = await runFuzz({ runs: 60, seed, log: (line) => t.diagnostic(line) });
  t.diagnostic(`${frames} frames sent`);
});
