/**
 * `npm run chaos`: the crash checker of test/chaos/chaosHarness.ts —
 * a real `taskvisor serve` over a real store, killed with SIGKILL at
 * seeded random points, restarted, and every acknowledged task id checked.
 *
 *   npm run chaos -- [--runs N] [--store lowdb|sqlite|postgres]... [--kills K] [--seed S]
 *
 * Prints one table row per store (acked, lost, stuck, duplicated, terminal
 * changed, bad result) and every finding; exits 1 when any count is not zero.
 * postgres needs the server of `bash scripts/ensure-postgres.sh`.
 */
import { parseArgs } from 'node:util';
import { CHAOS_STORES, chaosClean, chaosTable, runChaos, type ChaosRow, type ChaosStore } from '../test/chaos/chaosHarness.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    store: { type: 'string', multiple: true },
    kills: { type: 'string' },
    seed: { type: 'string' },
  },
});
const runs = Number(values.runs ?? 10);
const kills = Number(values.kills ?? 3);
const seed = Number(values.seed ?? Math.floor(Math.random() * 2 ** 31));
const stores = (values.store ?? ['lowdb', 'sqlite']) as ChaosStore[];
if (
  !Number.isSafeInteger(runs) ||
  runs < 1 ||
  !Number.isSafeInteger(kills) ||
  kills < 1 ||
  !Number.isSafeInteger(seed) ||
  stores.some((store) => !(CHAOS_STORES as readonly string[]).includes(store))
) {
  process.stderr.write('usage: npm run chaos -- [--runs N] [--store lowdb|sqlite|postgres]... [--kills K] [--seed S]\n');
  process.exit(2);
}
process.stdout.write(`chaos: seed ${seed}, ${runs} runs of ${kills} kills per store (${stores.join(', ')})\n`);
const rows: ChaosRow[] = [];
for (const store of stores) {
  const row = await runChaos({ store, runs, kills, seed, creators: 4, maxLifeMs: 4_000, log: (line) => process.stderr.write(`${line}\n`) });
  rows.push(row);
  for (const finding of row.findings) process.stdout.write(`${store}: ${finding}\n`);
}
process.stdout.write(`${chaosTable(rows)}\n`);
process.exit(rows.every(chaosClean) ? 0 : 1);
