/**
 * `npm run fuzz`: the long fuzz run of test/security/fuzzHarness.ts.
 *
 *   npm run fuzz -- [--runs N] [--seed S] [--transport http|ws|stdio|stdio-child|bytes]...
 *
 * `stdio-child` fuzzes the stdin of a real `taskvisor serve --stdio` process.
 * `bytes` writes raw bytes to a real `taskvisor serve` (request heads, the
 * WebSocket upgrade, WebSocket frames, stdio line framing).
 * Also FUZZ_RUNS and FUZZ_SEED. The seed is printed first; a failure prints
 * the (shrunk) frames and the seed to replay it with.
 */
import { parseArgs } from 'node:util';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FUZZ_LIMITS, runFuzz, runStdioChildFuzz, type FuzzTransport } from '../test/security/fuzzHarness.js';
import { runByteFuzz } from '../test/security/byteFuzz.js';
import { CLI, DEMO_TOOLS, TSX_IMPORT } from '../test/support/processes.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    seed: { type: 'string' },
    transport: { type: 'string', multiple: true },
  },
});
const runs = Number(values.runs ?? process.env.FUZZ_RUNS ?? 2000);
const seed = Number(values.seed ?? process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const chosen = values.transport ?? ['http', 'ws', 'stdio', 'stdio-child', 'bytes'];
const transports = chosen.filter((t) => t !== 'stdio-child' && t !== 'bytes') as FuzzTransport[];
if (
  !Number.isSafeInteger(runs) ||
  runs < 1 ||
  !Number.isSafeInteger(seed) ||
  chosen.some((t) => !['http', 'ws', 'stdio', 'stdio-child', 'bytes'].includes(t))
) {
  process.stderr.write('usage: npm run fuzz -- [--runs N] [--seed S] [--transport http|ws|stdio|stdio-child|bytes]...\n');
  process.exit(2);
}
process.stdout.write(`fuzz: seed ${seed}, ${runs} runs per transport (${chosen.join(', ')})\n`);
const started = Date.now();
try {
  let frames = 0;
  if (transports.length > 0)
    frames += (await runFuzz({ runs, seed, transports, shrink: true, log: (line) => process.stdout.write(`${line}\n`) })).frames;
  if (chosen.includes('stdio-child')) {
    process.stdout.write(`fuzz stdio-child: ${runs} runs, seed ${seed} (replay: FUZZ_SEED=${seed})\n`);
    const dir = await mkdtemp(join(tmpdir(), 'taskvisor-fuzz-'));
    try {
      const configFile = join(dir, 'taskvisor.yaml');
      const tools = new URL('../test/security/fixtures/limitTools.ts', import.meta.url).pathname;
      const limits = Object.entries(FUZZ_LIMITS)
        .map(([key, value]) => `  ${key}: ${value}`)
        .join('\n');
      await writeFile(configFile, `store: { kind: memory }\ntools: [${JSON.stringify(tools)}]\nlimits:\n${limits}\n`);
      frames += (await runStdioChildFuzz({ runs, seed, cli: CLI, tsxImport: TSX_IMPORT, configFile, cwd: dir })).frames;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  if (chosen.includes('bytes')) {
    const dir = await mkdtemp(join(tmpdir(), 'taskvisor-byte-fuzz-'));
    try {
      frames += (await runByteFuzz({ runs, seed, cli: CLI, tools: DEMO_TOOLS, dir, log: (line) => process.stdout.write(`${line}\n`) }))
        .inputs;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  process.stdout.write(`fuzz: ok, ${frames} frames in ${((Date.now() - started) / 1000).toFixed(1)} s (seed ${seed})\n`);
  process.exit(0);
} catch (error) {
  process.stderr.write(`fuzz: FAILED (seed ${seed})\n${(error as Error).message}\n`);
  process.exit(1);
}
