/**
 * `needs:` across a kill -9 (restart table): steps of a DAG
 * that had ended do not run again, the step that was in flight runs again
 * from its start (at-least-once), and the steps waiting on it start once it
 * ends. Real child processes (`taskvisor serve`), a real sqlite file, real HTTP.
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { it } from 'node:test';
import { stringify } from 'yaml';
import { SqliteTaskStore } from '../../src/store/SqliteTaskStore.js';
import type { StepRecord, WorkflowCheckpoint } from '../../src/workflows/index.js';
import { connect } from '../support/extTasksClient.js';
import { CLI, freePort, spawnNode, tempDir, waitFor, type Child } from '../support/processes.js';
import { taskOps, type Json } from '../support/taskOps.js';

const TOOLS = fileURLToPath(new URL('./fixtures/tools.ts', import.meta.url));

it('kill -9 in the middle of a DAG: ended steps stay done, the in-flight branch runs again, the join runs after it', async (t) => {
  const dir = await tempDir('taskvisor-wf-dag-kill9-');
  t.after(() => dir.remove());
  await mkdir(path.join(dir.path, 'workflows'));
  await writeFile(
    path.join(dir.path, 'workflows', 'dag.yaml'),
    stringify({
      taskBehavior: 'always',
      args: { marker: { type: 'string', required: true }, release: { type: 'string', required: true } },
      steps: [
        { id: 'quick', tool: 'record', args: { label: 'quick' }, needs: [] },
        { id: 'hold', tool: 'wait_for_file', args: { marker: '{{ .input.marker }}', release: '{{ .input.release }}' }, needs: [] },
        { id: 'after-quick', tool: 'record', args: { label: 'after-quick' }, needs: ['quick'] },
        { id: 'join', tool: 'echo', args: { value: '{{ .results.hold.pid }}' }, needs: ['hold', 'after-quick'] },
      ],
    }),
  );
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
  const steps = async (taskId: string): Promise<string[]> => {
    const store = new SqliteTaskStore({ file: path.join(dir.path, 'tasks.sqlite'), lock: false });
    await store.open();
    try {
      const checkpoint = (await store.get(taskId))?.checkpoint as WorkflowCheckpoint | undefined;
      return (checkpoint?.steps ?? []).map((step: StepRecord) => `${step.id}:${step.status}`);
    } finally {
      await store.close();
    }
  };
  const marker = path.join(dir.path, 'in-flight');
  const release = path.join(dir.path, 'release');

  const first = await start();
  let client = await connect({ kind: 'http', url });
  let ops = taskOps(() => client);
  const created = await ops.createTask('workflow_dag', { marker, release });
  // The other branch ends while hold waits: its records are stored before the kill.
  await waitFor(async () => ((await steps(created.taskId)).includes('after-quick:completed') ? true : undefined), {
    timeoutMs: 20_000,
    what: 'the quick branch to end',
  });
  await waitFor(async () => (await readFile(marker, 'utf8').catch(() => '')) || undefined, { timeoutMs: 20_000, what: 'hold' });
  await client.close().catch(() => {});
  await first.kill('SIGKILL');

  const second = await start();
  client = await connect({ kind: 'http', url });
  ops = taskOps(() => client);
  await waitFor(async () => ((await readFile(marker, 'utf8')) === String(second.process.pid) ? true : undefined), {
    timeoutMs: 20_000,
    what: 'hold to run again',
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
  assert.deepEqual(results.join, { value: second.process.pid });
  await client.close();
  await second.kill('SIGTERM');
  const records = await steps(created.taskId);
  // Each ended step ran once; hold was interrupted and ran again; join ran after it.
  assert.deepEqual(records.filter((r) => r.startsWith('quick:') || r.startsWith('after-quick:')).sort(), [
    'after-quick:completed',
    'quick:completed',
  ]);
  assert.deepEqual(
    records.filter((r) => r.startsWith('hold:') || r.startsWith('join:')),
    ['hold:interrupted', 'hold:completed', 'join:completed'],
  );
});
