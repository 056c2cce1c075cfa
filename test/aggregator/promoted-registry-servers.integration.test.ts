/**
 * Promotion of upstream calls against two more servers from the registry that
 * speak no Tasks: `@modelcontextprotocol/server-filesystem` and
 * `@modelcontextprotocol/server-memory` over stdio (docs/aggregator.md
 * "Promoted calls"). With `taskBehavior: always`, a caller that declared the
 * extension gets a task of taskvisor's own whose stored result is the
 * upstream's answer; a caller without the extension gets the plain result.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { callTool, getTask, resultOf, tempDir, waitFor } from '../support/processes.js';
import { startAggregator, type Aggregator } from './harness.js';

const resolve = createRequire(import.meta.url).resolve;
const FILESYSTEM = resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const MEMORY = resolve('@modelcontextprotocol/server-memory/dist/index.js');

describe('promoted upstream calls, server-filesystem and server-memory over stdio', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let aggregator: Aggregator;
  let tasksClient: ConnectedClient;
  let plainClient: ConnectedClient;

  before(async () => {
    dir = await tempDir('taskvisor-registry-servers-');
    await writeFile(join(dir.path, 'hello.txt'), 'hello from the filesystem server\n');
    aggregator = await startAggregator([
      { name: 'filesystem', type: 'stdio', command: process.execPath, args: [FILESYSTEM, dir.path], promotion: { taskBehavior: 'always' } },
      {
        name: 'memory',
        type: 'stdio',
        command: process.execPath,
        args: [MEMORY],
        env: { MEMORY_FILE_PATH: join(dir.path, 'memory.jsonl') },
        promotion: { taskBehavior: 'always' },
      },
    ]);
    tasksClient = await connect({ kind: 'http', url: aggregator.url });
    plainClient = await connect({ kind: 'http', url: aggregator.url }, {});
  });
  after(async () => {
    await tasksClient?.close();
    await plainClient?.close();
    await aggregator?.close();
    await dir?.remove();
  });

  /** Calls `name` as a task and waits for its stored, completed result. */
  async function asTask(name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const created = resultOf(await callTool(tasksClient, name, args));
    assert.equal(created.resultType, 'task', JSON.stringify(created));
    assert.doesNotMatch(String(created.taskId), /^(filesystem|memory)\./, 'a task of taskvisor, not an upstream one');
    return waitFor(
      async () => {
        const task = resultOf(await getTask(tasksClient, String(created.taskId)));
        assert.notEqual(task.status, 'failed', JSON.stringify(task));
        return task.status === 'completed' ? task : undefined;
      },
      { timeoutMs: 15_000, what: `the ${name} task` },
    );
  }

  it('server-filesystem: read_text_file becomes a task whose result is the file', async () => {
    const done = await asTask('x_filesystem_read_text_file', { path: join(dir.path, 'hello.txt') });
    assert.match(JSON.stringify(done.result), /hello from the filesystem server/);
  });

  it('server-filesystem: an upstream error ends the task with the error result, not a lost task', async () => {
    const created = resultOf(await callTool(tasksClient, 'x_filesystem_read_text_file', { path: '/etc/passwd' }));
    assert.equal(created.resultType, 'task');
    const ended = await waitFor(
      async () => {
        const task = resultOf(await getTask(tasksClient, String(created.taskId)));
        return task.status === 'completed' || task.status === 'failed' ? task : undefined;
      },
      { timeoutMs: 15_000, what: 'the refused read' },
    );
    // Outside the allowed directory: the server answers a tool error (isError), which the task keeps as its result.
    assert.match(JSON.stringify(ended), /denied|outside|not allowed|isError/i);
  });

  it('server-memory: create_entities then read_graph, each a task, the second sees the first', async () => {
    await asTask('x_memory_create_entities', {
      entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }],
    });
    const graph = await asTask('x_memory_read_graph', {});
    assert.match(JSON.stringify(graph.result), /wrote the first program/);
  });

  it('a caller without the tasks extension gets the plain result of the same tool', async () => {
    // The SDK client's own callTool: its request declares no tasks extension.
    const plain = await plainClient.client.callTool({
      name: 'x_filesystem_read_text_file',
      arguments: { path: join(dir.path, 'hello.txt') },
    });
    assert.equal((plain as { resultType?: unknown }).resultType ?? 'complete', 'complete');
    assert.match(JSON.stringify(plain), /hello from the filesystem server/);
  });
});
