/**
 * The bounded byte-level fuzz run of `npm test` (the long one:
 * `npm run fuzz -- --transport bytes --runs N --seed S`). A fixed seed unless
 * FUZZ_SEED is set, so a failure here replays exactly.
 */
import { it } from 'node:test';
import { CLI, DEMO_TOOLS, tempDir } from '../support/processes.js';
import { runByteFuzz } from './byteFuzz.js';

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20261204;

it(
  'raw bytes on HTTP, the WebSocket upgrade, WebSocket frames and stdio: the process lives, another client is answered, stored tasks unchanged',
  { timeout: 300_000 },
  async (t) => {
    const dir = await tempDir('taskvisor-byte-fuzz-');
    try {
      const { inputs } = await runByteFuzz({
        runs: 30,
        seed,
        cli: CLI,
        tools: DEMO_TOOLS,
        dir: dir.path,
        log: (line) => t.diagnostic(line),
      });
      t.diagnostic(`${inputs} inputs (seed ${seed})`);
    } finally {
      await dir.remove();
    }
  },
);
