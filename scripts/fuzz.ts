/**
 * `npm run fuzz`: the long fuzz run of test/security/fuzzHarness.ts.
 *
 *   npm run fuzz -- [--runs N] [--seed S] [--transport http|ws|stdio]...
 *
 * Also FUZZ_RUNS and FUZZ_SEED. The seed is printed first; a failure prints
 * the (shrunk) frames and the seed to replay it with.
 */
import { parseArgs } from 'node:util';
import { runFuzz, type FuzzTransport } from '../test/security/fuzzHarness.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    seed: { type: 'string' },
    transport: { type: 'string', multiple: true },
  },
});
const runs = Number(values.runs ?? process.env.FUZZ_RUNS ?? 2000);
const seed = Number(values.seed ?? process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const transports = (values.transport ?? ['http', 'ws', 'stdio']) as FuzzTransport[];
if (!Number.isSafeInteger(runs) || runs < 1 || !Number.isSafeInteger(seed) || transports.some((t) => !['http', 'ws', 'stdio'].includes(t))) {
  process.stderr.write('usage: npm run fuzz -- [--runs N] [--seed S] [--transport http|ws|stdio]...\n');
  process.exit(2);
}
process.stdout.write(`fuzz: seed ${seed}, ${runs} runs per transport (${transports.join(', ')})\n`);
const started = Date.now();
try {
  const { frames } = await runFuzz({ runs, seed, transports, shrink: true, log: (line) => process.stdout.write(`${line}\n`) });
  process.stdout.write(`fuzz: ok, ${frames} frames in ${((Date.now() - started) / 1000).toFixed(1)} s (seed ${seed})\n`);
  process.exit(0);
} catch (error) {
  process.stderr.write(`fuzz: FAILED (seed ${seed})\n${(error as Error).message}\n`);
  process.exit(1);
}
