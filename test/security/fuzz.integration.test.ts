/**
 * The bounded fuzz run of `npm test` (the long one: `npm run fuzz`). A fixed
 * seed unless FUZZ_SEED is set, so a failure here replays exactly.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { CLI, tempDir, TSX_IMPORT } from '../support/processes.js';
import { FUZZ_LIMITS, runFuzz, runStdioChildFuzz } from './fuzzHarness.js';

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20260728;

it(
  'fuzzed JSON-RPC frames over HTTP, WebSocket and stdio: always answered, never 5xx or a hang, victim tasks unchanged',
  { timeout: 120_000 },
  async (t) => {
    const { frames } = await runFuzz({ runs: 80, seed, log: (line) => t.diagnostic(line) });
    t.diagnostic(`${frames} frames sent`);
  },
);

it(
  'fuzzed lines on the stdin of a real `taskvisor serve --stdio` child: every probe answered, the child alive, its tasks unchanged',
  { timeout: 120_000 },
  async (t) => {
    const dir = await tempDir('taskvisor-fuzz-');
    try {
      const configFile = join(dir.path, 'taskvisor.yaml');
      const tools = new URL('./fixtures/limitTools.ts', import.meta.url).pathname;
      const limits = Object.entries(FUZZ_LIMITS)
        .map(([key, value]) => `  ${key}: ${value}`)
        .join('\n');
      await writeFile(configFile, `store: { kind: memory }\ntools: [${JSON.stringify(tools)}]\nlimits:\n${limits}\n`);
      const { frames } = await runStdioChildFuzz({ runs: 40, seed, cli: CLI, tsxImport: TSX_IMPORT, configFile, cwd: dir.path });
      t.diagnostic(`${frames} lines sent (seed ${seed})`);
    } finally {
      await dir.remove();
    }
  },
);
