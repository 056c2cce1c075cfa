/**
 * A stdio upstream that writes something other than
 * JSON-RPC to stdout is reported as such (the SDK's transport drops those
 * lines silently, so it used to look like an upstream that never answers:
 * "connecting timed out"). Also pins the SDK internal the tap relies on.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRuntime, type Logger } from '../../src/index.js';
import { tempDir } from '../support/processes.js';
import { join } from 'node:path';

/** Prints a banner and a log line to stdout, never speaks the protocol, and exits. */
const BANNER_CHILD = `process.stdout.write('Weather server v1.2 listening\\n\\tdebug: \\u001b[31mready\\u001b[0m\\n'); setTimeout(() => process.exit(3), 300);`;

describe('a stdio upstream writing non-protocol output to stdout', () => {
  it('is reported with the first bytes it wrote, in the upstream status and once in the log, not only as a closed connection or a timeout', async () => {
    const dir = await tempDir('taskvisor-noise-');
    const logged: string[] = [];
    const logger: Logger = { info: () => {}, error: (message) => logged.push(message) };
    const runtime = createRuntime({
      store: { kind: 'memory' },
      stateFile: join(dir.path, 'state', 'runtime-state.json'),
      upstreams: [
        {
          name: 'chatty',
          type: 'stdio',
          command: process.execPath,
          args: ['-e', BANNER_CHILD],
          // Long: the child's exit ends the attempt, not this (a loaded machine may take seconds to start node).
          timeout: 120_000,
          backoff: { maxAttempts: 1 },
        },
      ],
      logger,
    });
    try {
      await runtime.start();
      const status = await runtime.upstreams!.waitFor('chatty', (s) => s.state === 'failed', 120_000);
      assert.match(
        status.lastError ?? '',
        /^Connection closed; its stdout had 2 non-protocol lines, the first: "Weather server v1\.2 listening"$/,
      );
      const warnings = logged.filter((line) => line.includes('non-protocol output to stdout'));
      assert.equal(warnings.length, 1, 'one warning per connection, not one per line');
      assert.match(warnings[0]!, /upstream chatty wrote non-protocol output/);
      assert.ok(!/\u001b/.test(status.lastError ?? ''), 'control characters are escaped');
    } finally {
      await runtime.close();
      await dir.remove();
    }
  });
});
