/**
 * kill -9 in the middle of a workflow, then restart: the run resumes from
 * the step that was in flight (it runs again: at-least-once per step), the
 * steps before it do not run again, and the task completes. Real child
 * processes (`taskvisor serve`), a real sqlite file, real HTTP.
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
import { CLI, freePort, runNode, spawnNode, tempDir, waitFor, type Child } from '../support/processes.js';
import { taskOps, type Json } from '../support/taskOps.js';

const TOOLS = fileURLToPath(new URL('./fixtures/tools.ts', import.meta.url));

it('kill -9 mid-workflow, restart: the in-flight step runs again and the run completes', async (t) => {
  const dir = await tempDir('taskvisor-wf-kill9-');
  t.after(() => dir.remove());
  await mkdir(path.join(dir.path, 'workflows'));
  const marker = path.join(dir.path, 'in-flight');
  const release = path.join(dir.path, 'release');
  await writeFile(
    path.join(dir.path, 'workflows', 'durable.yaml'),
    stringify({
      taskBehavior: 'always',
      args: { marker: { type: 'string', required: true }, release: { type: 'string', required: true } },
      steps: [
        { id: 'first', tool: 'record', args: { label: 'first' } },
        { id: 'wait', tool: 'wait_for_file', args: { marker: '{{ input.marker }}', release: '{{ input.release }}' } },
        { id: 'last', tool: 'echo', args: { value: '{{ results.wait.pid }}' } },
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

  const first = await start();
  let client = await connect({ kind: 'http', url });
  let ops = taskOps(() => client);
  const created = await ops.createTask('workflow_durable', { marker, release });
  const firstPid = await waitFor(async () => (await readFile(marker, 'utf8').catch(() => '')) || undefined, {
    timeoutMs: 20_000,
    what: 'the in-flight step',
  });
  assert.equal(firstPid, String(first.process.pid));
  await client.close().catch(() => {});
  const killed = await first.kill('SIGKILL');
  assert.equal(killed.signal, 'SIGKILL');

  const second = await start();
  client = await connect({ kind: 'http', url });
  ops = taskOps(() => client);
  // The in-flight step runs again in the new process (at-least-once).
  await waitFor(async () => (await readFile(marker, 'utf8')) === String(second.process.pid), {
    timeoutMs: 20_000,
    what: 'the step to run again',
  });
  const during = await ops.task(created.taskId);
  assert.equal(during.status, 'working');
  assert.match(String(during.statusMessage), /Step 2\/3: wait/);
  await writeFile(release, '');
  const done = await waitFor(
    async () => {
      const task = await ops.task(created.taskId);
      return task.status === 'working' ? undefined : task;
    },
    { timeoutMs: 20_000, what: 'the run to finish' },
  );
  assert.equal(done.status, 'completed', JSON.stringify(done));
  const structured = (done.result as Json).structuredContent as { results: Json };
  assert.deepEqual(structured.results.first, { label: 'first' });
  assert.deepEqual(structured.results.wait, { released: true, pid: second.process.pid });
  assert.deepEqual(structured.results.last, { value: second.process.pid });
  await client.close();
  await second.kill('SIGTERM');

  // The admin view reads the same store out of band.
  const shown = await runNode([CLI, 'tasks', 'show', created.taskId, '--config', config], { cwd: dir.path });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /status\s+completed/);
  assert.match(shown.stdout, /wait\tinterrupted\twait_for_file/);
  assert.match(shown.stdout, /wait\tcompleted\twait_for_file/);
  const listed = await runNode([CLI, 'tasks', 'list', '--config', config, '--status', 'completed', '--tool', 'workflow_durable'], {
    cwd: dir.path,
  });
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, new RegExp(`${created.taskId}\tcompleted\tworkflow_durable`));

  // The live step records: first ran once; wait was interrupted by the kill, then ran again.
  const store = new SqliteTaskStore({ file: path.join(dir.path, 'tasks.sqlite') });
  await store.open();
  try {
    const record = await store.get(created.taskId);
    const steps = (record?.checkpoint as WorkflowCheckpoint).steps;
    assert.deepEqual(
      steps.map((step: StepRecord) => `${step.id}:${step.status}`),
      ['first:completed', 'wait:interrupted', 'wait:completed', 'last:completed'],
    );
    for (const step of steps) {
      assert.ok(step.startedAt && step.endedAt, JSON.stringify(step));
      if (step.status === 'completed') assert.ok(typeof step.durationMs === 'number' && step.input !== undefined, JSON.stringify(step));
    }
    assert.deepEqual(steps[1]!.input, { marker, release });
  } finally {
    await store.close();
  }
});
