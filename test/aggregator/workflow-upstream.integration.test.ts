/**
 * Workflow steps reach upstream tools through the one internal tool-call
 * path (ToolInvoker → the forwarder): an aggregator whose demo upstream is a
 * stdio child serves a workflow calling `x_demo_echo` and `x_demo_sleep`;
 * the upstream's own task is collapsed inside the workflow's task, and a
 * cancel of the workflow's task cancels the step in flight.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WorkflowCatalog } from '../../src/workflows/index.js';
import { silentLogger } from '../../src/index.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { taskOps, textOf } from '../support/taskOps.js';
import { tempDir } from '../support/processes.js';
import { startAggregator, stdioDemoSpec, type Aggregator } from './harness.js';

const WORKFLOW = `description: Greets through the upstream, then naps there
taskBehavior: always
args:
  name: { type: string }
  napMs: { type: integer, default: 300 }
steps:
  - id: greet
    tool: x_demo_echo
    args: { text: "hello {{ input.name }}" }
  - id: nap
    tool: x_demo_sleep
    args: { ms: "{{ input.napMs }}", message: "rested" }
`;

describe('workflow steps calling upstream tools (aggregator + workflows)', () => {
  let aggregator: Aggregator;
  let catalog: WorkflowCatalog;
  let client: ConnectedClient;
  let cleanup: Array<() => Promise<void>> = [];

  before(async () => {
    const cwd = await tempDir('taskvisor-agg-wf-');
    cleanup.push(() => cwd.remove());
    aggregator = await startAggregator([stdioDemoSpec(cwd.path)]);
    cleanup.unshift(() => aggregator.close());
    const dir = join(cwd.path, 'workflows');
    await mkdir(dir);
    await writeFile(join(dir, 'upstream_nap.yaml'), WORKFLOW);
    catalog = new WorkflowCatalog({ tools: aggregator.runtime.tools, dir, logger: silentLogger });
    // The workflow, and muster's read-only management tools served beside the workflows.
    assert.deepEqual(await catalog.load(), [
      'workflow_upstream_nap',
      'core_workflow_list',
      'core_workflow_get',
      'core_workflow_validate',
      'core_workflow_available',
    ]);
    client = await connect({ kind: 'http', url: aggregator.url, headers: { 'x-user': 'alice' } });
    cleanup.unshift(() => client.close());
  });
  after(async () => {
    for (const step of cleanup) await step();
    cleanup = [];
  });

  it('runs both upstream steps and completes with their results', async () => {
    const ops = taskOps(() => client);
    const created = await ops.createTask('workflow_upstream_nap', { name: 'Ada' });
    const { task } = await ops.waitForStatus(created.taskId, 'completed', 30_000);
    const result = task.result as { isError?: boolean; structuredContent?: { results?: Record<string, unknown> } };
    assert.notEqual(result.isError, true, JSON.stringify(result));
    const results = JSON.stringify(result.structuredContent?.results);
    assert.match(results, /hello Ada/, `the echo step's upstream answer: ${results}`);
    assert.match(results, /rested/, `the sleep step's upstream answer: ${results}`);
  });

  it('a cancel of the workflow task aborts the upstream step in flight and ends cancelled', async () => {
    const ops = taskOps(() => client);
    const created = await ops.createTask('workflow_upstream_nap', { name: 'Bo', napMs: 600_000 });
    await ops.pollUntil(created.taskId, (task) => String(task.statusMessage ?? '').includes('nap'), 30_000);
    await ops.cancel(created.taskId);
    const { task } = await ops.waitForStatus(created.taskId, 'cancelled', 30_000);
    assert.equal(task.status, 'cancelled');
    assert.equal(textOf(task.result), undefined);
  });
});
