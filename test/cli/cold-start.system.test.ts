/**
 * Cold start: MCP hosts spawn a stdio server for every
 * conversation, so `taskvisor serve --stdio --demo` must load only what its
 * first answers need. The speed itself is a benchmark cell (`npm run bench
 * -- --only coldstart`, a ratio to `node -e 0`); this test pins *what* is
 * loaded, which no load on the machine can blur: a real stdio child, asked
 * through the shipped client, with a probe recording every module it loads.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { TasksClient } from '../../src/client/index.js';
import { CLI, tempDir, waitFor } from '../support/processes.js';

const PROBE = fileURLToPath(new URL('../fixtures/load-probe/probe.mjs', import.meta.url));

/**
 * Packages the first answers of `serve --stdio --demo` do not need, with the
 * feature that does: each is loaded when that feature is on.
 */
const NOT_AT_START: Record<string, string> = {
  ajv: 'a tool with a JSON Schema (the demo tools have zod schemas or none)',
  'ajv-formats': 'a tool with a JSON Schema',
  'prom-client': 'metrics (--metrics, --ui)',
  '@opentelemetry/api': 'operations.openTelemetry',
  '@statelyai/inspect': '--inspect',
  pg: 'a postgres store',
  jsonata: 'workflows',
  jose: 'jwt auth',
  ws: '--ws',
  hono: '--http',
  '@hono/node-server': '--http',
};

/** The package a loaded file belongs to (the last node_modules segment of its path), if any. */
function packageOf(file: string): string | undefined {
  const match = /node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)[\\/](?!.*node_modules)/.exec(file);
  return match?.[1]!.replace('\\', '/');
}

let dir: Awaited<ReturnType<typeof tempDir>>;
let loaded: string[] = [];
let tools: string[] = [];

before(async () => {
  dir = await tempDir('taskvisor-cold-start-');
  const record = join(dir.path, 'loaded.json');
  const client = await TasksClient.connect({
    command: process.execPath,
    args: ['--import', PROBE, CLI, 'serve', '--stdio', '--demo', '--quiet'],
    env: { ...(process.env as Record<string, string>), TASKVISOR_LOAD_PROBE: record },
    cwd: dir.path,
    stderr: 'pipe',
  });
  tools = (await client.mcp.listTools()).tools.map((tool) => tool.name);
  // Closing stdin ends the server; the probe writes its record as the process exits.
  await client.close();
  await waitFor(() => existsSync(record), { timeoutMs: 30_000, what: 'the load record' });
  loaded = JSON.parse(await readFile(record, 'utf8')) as string[];
});
after(() => dir?.remove());

describe('serve --stdio --demo: what its first answers load', () => {
  it('answers initialize and tools/list with the demo tools', () => {
    assert.ok(tools.includes('hello_world') && tools.includes('sleep'), tools.join(', '));
    // The probe saw the server's own modules: a record that misses them proves nothing below.
    assert.ok(
      loaded.some((file) => /[\\/]src[\\/]cli[\\/]serve\.[tj]s$/.test(file)),
      'the probe recorded the CLI',
    );
    assert.ok(
      loaded.some((file) => packageOf(file) === 'xstate'),
      'the probe recorded packages',
    );
  });

  for (const [name, feature] of Object.entries(NOT_AT_START)) {
    it(`does not load ${name} (only for ${feature})`, () => {
      const files = loaded.filter((file) => packageOf(file) === name);
      assert.deepEqual(files, [], `${name} was loaded at start`);
    });
  }
});
