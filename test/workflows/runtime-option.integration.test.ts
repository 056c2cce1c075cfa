/**
 * Workflows are a runtime option like upstreams:
 * `createRuntime({ workflows: { dir } })` loads the folder's workflow files
 * as tools on `start()`, before recovery, records their runs (history tools),
 * and a task-capable client runs one to completion over real HTTP.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { createRuntime, silentLogger } from '../../src/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { connect } from '../support/extTasksClient.js';
import { tempDir } from '../support/processes.js';
import { taskOps } from '../support/taskOps.js';

const WORKFLOW = `description: Shouts a name
taskBehavior: always
args:
  name: { type: string }
steps:
  - id: shout
    tool: shout
    args: { text: "{{ input.name }}" }
`;

describe('createRuntime({ workflows })', () => {
  it('serves the folder as tools and runs one as a task', async () => {
    const cwd = await tempDir('taskvisor-wf-option-');
    const dir = join(cwd.path, 'workflows');
    await mkdir(dir);
    await writeFile(join(dir, 'greet.yaml'), WORKFLOW);
    const runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger, workflows: { dir, watch: false } });
    runtime.tool('shout', { inputSchema: z.object({ text: z.string() }) }, ({ text }) => text.toUpperCase());
    await runtime.start();
    const http = await listenHttp(runtime, { port: 0 });
    const client = await connect({ kind: 'http', url: http.url });
    try {
      const names = runtime.tools.list().map((tool) => tool.name);
      assert.ok(names.includes('workflow_greet'), names.join(', '));
      assert.ok(names.includes('core_workflow_execution_list'), 'runs are recorded: the history tools are served');
      const ops = taskOps(() => client);
      const created = await ops.createTask('workflow_greet', { name: 'ada' });
      const { task } = await ops.waitForStatus(created.taskId, 'completed', 30_000);
      assert.match(JSON.stringify(task.result), /ADA/);
    } finally {
      await client.close();
      await http.close();
      await runtime.close();
      await cwd.remove();
    }
  });

  it('refuses a folder with an invalid workflow on start, naming the file', async () => {
    const cwd = await tempDir('taskvisor-wf-option-bad-');
    await writeFile(join(cwd.path, 'broken.yaml'), 'steps: [');
    const runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger, workflows: { dir: cwd.path, watch: false } });
    try {
      await assert.rejects(runtime.start(), /broken\.yaml/);
    } finally {
      await runtime.close();
      await cwd.remove();
    }
  });
});
