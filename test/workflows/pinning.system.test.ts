/**
 * A run keeps its definition across restarts: the workflow file is edited
 * (v2 → v3, with different steps) while a run is in flight, the server is
 * killed with SIGKILL and restarted, and the run finishes on v2 — the
 * definition pinned in its checkpoint, with its hash — while a new run uses
 * v3. Real child processes (`taskvisor serve`), a real sqlite file, real HTTP.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { it } from 'node:test';
import { stringify } from 'yaml';
import { SqliteTaskStore } from '../../src/store/SqliteTaskStore.js';
import type { WorkflowCheckpoint } from '../../src/workflows/index.js';
import { connect } from '../support/extTasksClient.js';
import { CLI, freePort, spawnNode, tempDir, waitFor, type Child } from '../support/processes.js';
import { taskOps, type Json } from '../support/taskOps.js';

const TOOLS = fileURLToPath(new URL('./fixtures/tools.ts', import.meta.url));

const version = (v: string, extra: boolean) => ({
  taskBehavior: 'always',
  args: { marker: { type: 'string', required: true }, release: { type: 'string', required: true } },
  steps: [
    { id: 'first', tool: 'record', args: { label: `${v}-first` } },
    { id: 'wait', tool: 'wait_for_file', args: { marker: '{{ .input.marker }}', release: '{{ .input.release }}' } },
    { id: 'last', tool: 'echo', args: { value: v } },
    ...(extra ? [{ id: 'extra', tool: 'record', args: { label: `${v}-extra` } }] : []),
  ],
});

it('edit the file mid-run, kill -9, restart: the run finishes on the definition it started with; new runs use the new one', async (t) => {
  const dir = await tempDir('taskvisor-wf-pin-');
  t.after(() => dir.remove());
  await mkdir(path.join(dir.path, 'workflows'));
  const file = path.join(dir.path, 'workflows', 'pinned.yaml');
  await writeFile(file, stringify(version('v2', false)));
  const config = path.join(dir.path, 'taskvisor.yaml');
  await writeFile(
    config,
    stringify({
      store: { kind: 'sqlite', file: './tasks.sqlite' },
      tasks: { pollIntervalMs: 20, reapIntervalMs: 0 },
      tools: [TOOLS],
      workflows: { dir: './workflows', watch: false },
    }),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  const start = async (): Promise<Child> => {
    const child = spawnNode([CLI, 'serve', '--config', config, '--http', `127.0.0.1:${port}`], { cwd: dir.path });
    t.after(() => child.kill());
    await child.waitForOutput(/serving MCP over Streamable HTTP/);
    return child;
  };
  const marker = path.join(dir.path, 'in-flight');
  const release = path.join(dir.path, 'release');

  const first = await start();
  let client = await connect({ kind: 'http', url });
  let ops = taskOps(() => client);
  const created = await ops.createTask('workflow_pinned', { marker, release });
  await waitFor(async () => (await readFile(marker, 'utf8').catch(() => '')) || undefined, {
    timeoutMs: 20_000,
    what: 'the in-flight step',
  });
  // v3: a changed last step and one more step. Before pinning, this made the run unresumable.
  await writeFile(file, stringify(version('v3', true)));
  await client.close().catch(() => {});
  await first.kill('SIGKILL');

  const second = await start();
  client = await connect({ kind: 'http', url });
  ops = taskOps(() => client);
  await waitFor(async () => (await readFile(marker, 'utf8')) === String(second.process.pid), {
    timeoutMs: 20_000,
    what: 'the step to run again',
  });
  await writeFile(release, '');
  const done = await waitFor(
    async () => {
      const task = await ops.task(created.taskId);
      return task.status === 'working' ? undefined : task;
    },
    { timeoutMs: 20_000, what: 'the run to finish' },
  );
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const results = ((done.result as Json).structuredContent as { results: Json }).results;
  assert.deepEqual(results.first, { label: 'v2-first' });
  assert.deepEqual(results.last, { value: 'v2' });
  assert.equal(Object.hasOwn(results, 'extra'), false);

  // A new run takes the file as it is now.
  const fresh = await ops.createTask('workflow_pinned', { marker: `${marker}-2`, release });
  const freshDone = await waitFor(
    async () => {
      const task = await ops.task(fresh.taskId);
      return task.status === 'working' ? undefined : task;
    },
    { timeoutMs: 20_000, what: 'the new run' },
  );
  const freshResults = ((freshDone.result as Json).structuredContent as { results: Json }).results;
  assert.deepEqual(freshResults.last, { value: 'v3' });
  assert.deepEqual(freshResults.extra, { label: 'v3-extra' });
  await client.close();
  await second.kill('SIGTERM');

  // The checkpoint holds the pinned definition and its hash.
  const store = new SqliteTaskStore({ file: path.join(dir.path, 'tasks.sqlite') });
  await store.open();
  try {
    const checkpoint = (await store.get(created.taskId))?.checkpoint as WorkflowCheckpoint;
    assert.equal(checkpoint.definition?.steps.length, 3);
    assert.equal(checkpoint.definitionHash, createHash('sha256').update(JSON.stringify(checkpoint.definition)).digest('hex'));
    assert.deepEqual(
      checkpoint.steps.map((step) => `${step.id}:${step.status}`),
      ['first:completed', 'wait:interrupted', 'wait:completed', 'last:completed'],
    );
  } finally {
    await store.close();
  }
});
