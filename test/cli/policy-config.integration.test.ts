/**
 * `taskvisor serve --config F --stdio` with `toolPolicy` and `rateLimits`:
 * the config reaches the runtime — the local principal sees only what the
 * policy lets it call, a forbidden call is -32031, and a tool over its rate
 * is -32029 — through the real CLI and the v2 client over stdio.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { connect } from '../support/extTasksClient.js';
import { CLI, DEMO_TOOLS, tempDir, TSX_IMPORT } from '../support/processes.js';
import { taskOps, type RawResponse } from '../support/taskOps.js';

const codeOf = (response: RawResponse) => (response.kind === 'error' ? response.error.code : undefined);

describe('serve --config with toolPolicy and rateLimits (stdio, the local principal)', () => {
  it('lists only the allowed tools, refuses the rest with -32031 and a call over its rate with -32029', async () => {
    const dir = await tempDir('taskvisor-policy-cli-');
    try {
      const config = join(dir.path, 'taskvisor.yaml');
      await writeFile(
        config,
        [
          'store: { kind: memory }',
          `tools: [${JSON.stringify(DEMO_TOOLS)}]`,
          'toolPolicy:',
          '  default: deny',
          '  local: { groups: [readers] }',
          '  rules:',
          '    - { tools: [echo], groups: [readers] }',
          '    - { tools: [sleep], groups: [sleepers] }',
          'rateLimits:',
          '  tools: [{ tools: [echo], limit: 1, windowMs: 3600000 }]',
          '',
        ].join('\n'),
      );
      const connected = await connect({
        kind: 'stdio',
        command: process.execPath,
        args: ['--import', TSX_IMPORT, CLI, 'serve', '--config', config, '--stdio', '--quiet'],
        cwd: dir.path,
      });
      try {
        const names = (await connected.client.listTools()).tools.map((tool) => tool.name);
        assert.deepEqual(names, ['echo']);
        const ops = taskOps(() => connected);
        assert.equal((await ops.call('echo', { text: 'hi' })).kind, 'result');
        assert.equal(codeOf(await ops.call('echo', { text: 'again' })), -32029);
        assert.equal(codeOf(await ops.call('sleep', { ms: 1 })), -32031);
      } finally {
        await connected.close();
      }
    } finally {
      await dir.remove();
    }
  });
});
