/**
 * The workflow executor is visible to the runtime's inspection: with
 * `serve --trace`, the workflow actor's snapshots are in the trace, linked to
 * their task, with step results redacted like other task data.
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { it } from 'node:test';
import { stringify } from 'yaml';
import { serve } from '../../src/cli/serve.js';
import { connect } from '../support/extTasksClient.js';
import { tempDir, waitFor } from '../support/processes.js';
import { taskOps } from '../support/taskOps.js';

const TOOLS = fileURLToPath(new URL('./fixtures/tools.ts', import.meta.url));

it('serve --trace shows the workflow actor of a run, with its task id and redacted results', async (t) => {
  const dir = await tempDir('taskvisor-wf-trace-');
  t.after(() => dir.remove());
  await mkdir(path.join(dir.path, 'flows'));
  await writeFile(
    path.join(dir.path, 'flows', 'traced.yaml'),
    stringify({ taskBehavior: 'always', steps: [{ id: 'secret', tool: 'echo', args: { value: 'top-secret-value' } }] }),
  );
  const config = path.join(dir.path, 'taskvisor.yaml');
  await writeFile(config, stringify({ store: { kind: 'memory' }, tools: [TOOLS], workflows: { dir: './flows', watch: false } }));
  const trace = path.join(dir.path, 'trace.jsonl');
  const server = await serve({ config, http: '127.0.0.1:0', quiet: true, trace });
  t.after(() => server.stop());
  const client = await connect({ kind: 'http', url: server.url! });
  t.after(() => client.close());
  const ops = taskOps(() => client);
  const { taskId } = await ops.createTask('workflow_traced');
  await waitFor(async () => (await ops.task(taskId)).status === 'completed', { timeoutMs: 15_000, what: 'the run' });
  const lines = await waitFor(
    async () => {
      const found = (await readFile(trace, 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map(
          (line) =>
            JSON.parse(line) as { type: string; taskId?: string; snapshot?: { value?: unknown; context?: Record<string, unknown> } },
        )
        .filter((line) => line.type === '@xstate.snapshot' && line.snapshot?.context?.workflow === 'traced');
      return found.some((line) => line.snapshot?.value === 'succeeded') ? found : undefined;
    },
    { what: 'workflow snapshots in the trace' },
  );
  assert.ok(
    lines.every((line) => line.taskId === taskId),
    JSON.stringify(lines[0]),
  );
  assert.ok(lines.some((line) => line.snapshot?.value === 'running'));
  const text = await readFile(trace, 'utf8');
  assert.ok(
    !text.includes('top-secret-value'),
    text
      .split('\n')
      .filter((l) => l.includes('top-secret-value'))
      .join('\n')
      .slice(0, 3000),
  );
});
