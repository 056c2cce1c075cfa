/**
 * Strings a client makes a tool keep are bounded where they enter the task,
 * and the operator's task list stays small whatever the tasks hold: one
 * principal's tasks with megabyte messages must not stop the dashboard from
 * listing tasks. Over real HTTP on 127.0.0.1, with the attack of
 * scripts/attack/storedStrings.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { subscribe } from '../../src/core/diagnostics.js';
import { TASK_MACHINE_VERSION } from '../../machines/task/index.js';
import { ToolError, type Logger } from '../../src/index.js';
import { OperatorApi } from '../../src/operations/OperatorApi.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import type { TaskListQuery } from '../../src/store/TaskStore.js';
import { MAX_ERROR_MESSAGE_CHARS, MAX_STATUS_MESSAGE_CHARS } from '../../src/tasks/storedText.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';
import { storedStringsAttack } from '../../scripts/attack/storedStrings.js';
import { post, request, type Json } from '../support/rawWire.js';
import { serveWithOperations, getJson, type Served } from './support.js';

const HUGE = 1_000_000;
const TASKS = 6;

describe('stored strings and the operator task list', () => {
  let served: Served;
  before(async () => {
    served = await serveWithOperations({
      operations: { ui: true },
      register: (runtime) => {
        runtime.tool(
          'fail',
          { taskBehavior: 'always', inputSchema: z.object({ message: z.string(), ms: z.number().optional() }) },
          async ({ message }, ctx) => {
            ctx.setStatus(message);
            throw new ToolError(-32603, message);
          },
        );
        runtime.tool('ask', { taskBehavior: 'always', inputSchema: z.object({ message: z.string() }) }, async ({ message }, ctx) => {
          await ctx.elicit('huge', { message, requestedSchema: { type: 'object', properties: {} } });
          return 'answered';
        });
      },
    });
  });
  after(() => served?.close());

  it('one principal’s tasks with megabyte messages: the list answers 200, small; each task keeps its strings bounded', async () => {
    const report = await storedStringsAttack({ url: served.url, tasks: TASKS, messageBytes: HUGE, deadlineMs: 60_000 });
    assert.equal(report.created, TASKS, `refused: ${report.refused.join(', ')}`);
    assert.equal(report.listStatus, 200);
    // Summaries only: the six megabyte messages (twelve with their status copies) are not in it.
    assert.ok(report.listBytes < 16 * 1024, `the list is ${report.listBytes} bytes`);

    const { body: listed } = await getJson<{ tasks: Json[] }>(served.base, '/ops/api/tasks?limit=50');
    assert.equal(listed.tasks.length, TASKS);
    for (const entry of listed.tasks) {
      assert.deepEqual(Object.keys(entry).sort(), [
        'createdAt',
        'expiresAt',
        'lastUpdatedAt',
        'owner',
        'status',
        'statusMessage',
        'taskId',
        'tool',
      ]);
      assert.ok(String(entry.statusMessage).length <= 200);
    }

    // The full record on demand: the error and status message, each cut with a visible marker.
    const taskId = String(listed.tasks[0]!.taskId);
    const { status, body: detail } = await getJson<{ task: Json }>(served.base, `/ops/api/tasks/${taskId}`);
    assert.equal(status, 200);
    const errorMessage = String(detail.task.errorMessage);
    const statusMessage = String(detail.task.statusMessage);
    assert.ok(errorMessage.length <= MAX_ERROR_MESSAGE_CHARS, `errorMessage is ${errorMessage.length} characters`);
    assert.match(errorMessage, /^x+… \[truncated: \d+ of 1000000 characters left out\]$/);
    assert.ok(statusMessage.length <= MAX_ERROR_MESSAGE_CHARS);

    // What the owner reads over MCP is the same bounded error.
    const got = await post(served.url, request('tasks/get', { taskId }));
    const task = got.message?.result as Json;
    assert.equal(task.status, 'failed');
    assert.ok(JSON.stringify(task).length < 2 * MAX_ERROR_MESSAGE_CHARS + 4096, 'tasks/get carries the bounded error only');
  });

  it('a status message is cut to its bound with a marker', async () => {
    const reply = await post(served.url, request('tools/call', { name: 'fail', arguments: { message: 'y'.repeat(50_000) } }));
    const taskId = String((reply.message?.result as Json).taskId);
    const record = await waitForStatus(served, taskId, 'failed');
    assert.ok(record.statusMessage!.length <= MAX_ERROR_MESSAGE_CHARS);
    assert.ok(MAX_STATUS_MESSAGE_CHARS <= MAX_ERROR_MESSAGE_CHARS);
    assert.match(record.error!.message, /characters left out\]$/);
  });

  it('an input request too large to keep is refused: the task fails saying so, nothing huge is stored', async () => {
    const reply = await post(served.url, request('tools/call', { name: 'ask', arguments: { message: 'q'.repeat(1_000_000) } }));
    const taskId = String((reply.message?.result as Json).taskId);
    const record = await waitForStatus(served, taskId, 'failed');
    assert.match(record.error!.message, /Input request "huge" is \d+ bytes of JSON; at most 262144 are allowed/);
    assert.equal(record.inputRequests, undefined);
  });

  it('a record stored before the bounds applied is shown within them', async () => {
    const at = Date.now();
    const huge = 'z'.repeat(2_000_000);
    await served.runtime.store.create({
      taskId: 'stored-before-bounds',
      owner: 'mallory',
      tool: 'fail',
      status: 'failed',
      statusMessage: huge,
      error: { code: -32603, message: huge },
      createdAt: at,
      lastUpdatedAt: at,
      ttlMs: null,
      version: 1,
      machineVersion: TASK_MACHINE_VERSION,
    });
    const listed = await fetch(new URL('/ops/api/tasks?owner=mallory', served.base));
    assert.ok((await listed.text()).length < 2048);
    const detail = await fetch(new URL('/ops/api/tasks/stored-before-bounds', served.base));
    const text = await detail.text();
    assert.equal(detail.status, 200);
    assert.ok(text.length < 4 * MAX_ERROR_MESSAGE_CHARS, `the detail is ${text.length} characters`);
  });

  it('pages by count and by bytes, naming the next offset', async () => {
    const { body: first } = await getJson<{ tasks: Json[]; nextOffset?: number }>(served.base, '/ops/api/tasks?limit=2');
    assert.equal(first.tasks.length, 2);
    assert.equal(first.nextOffset, 2);
    const { body: second } = await getJson<{ tasks: Json[] }>(served.base, '/ops/api/tasks?limit=2&offset=2');
    assert.notDeepEqual(
      second.tasks.map((task) => task.taskId),
      first.tasks.map((task) => task.taskId),
    );
    // A page of 2000 bytes holds fewer than the asked 50 entries (each is a few hundred bytes).
    const { health, activity, metrics } = served.operations;
    const small = new OperatorApi({ runtime: served.runtime, health, activity: activity!, metrics: metrics!, maxPageBytes: 2000 });
    const response = await small.fetch(new Request(new URL('/ops/api/tasks?limit=50', served.base)));
    const page = (await response.json()) as { tasks: Json[]; nextOffset?: number };
    assert.ok(page.tasks.length > 0 && page.tasks.length < TASKS, `${page.tasks.length} entries`);
    assert.equal(page.nextOffset, page.tasks.length);
    assert.ok(JSON.stringify(page).length <= 2000 + 64);
  });
});

describe('a failing operator API request', () => {
  it('answers 500 with a reference id and logs the detail under it; the client never sees it', async () => {
    const logged: string[] = [];
    const logger: Logger = { info: () => {}, error: (message, error) => logged.push(`${message}: ${String(error)}`) };
    class UnreadableStore extends MemoryTaskStore {
      override list(query?: TaskListQuery): Promise<TaskRecord[]> {
        if (query?.limit === 7) return Promise.reject(new Error('EIO: cannot read /var/lib/taskvisor/secret.json'));
        return super.list(query);
      }
    }
    const served = await serveWithOperations({ runtime: { store: new UnreadableStore(), logger }, operations: { ui: true } });
    try {
      const response = await fetch(new URL('/ops/api/tasks?limit=7', served.base));
      const text = await response.text();
      assert.equal(response.status, 500);
      const { ref } = JSON.parse(text) as { ref: string };
      assert.match(ref, /^[0-9a-f]{8}$/);
      assert.ok(!text.includes('/var/lib'), 'no path in the answer');
      assert.ok(
        logged.some((line) => line.includes(`ref ${ref}`) && line.includes('EIO')),
        `logged: ${logged.join(' | ')}`,
      );
    } finally {
      await served.close();
    }
  });
});

/** The stored record once it has `status` (waits for the store's write of it, not for time). */
async function waitForStatus(served: Served, taskId: string, status: string): Promise<TaskRecord> {
  const written = new Promise<void>((resolve) => {
    const stop = subscribe('taskvisor:store.operation', (message) => {
      if (message.taskId === taskId && message.summary?.status === status && message.error === undefined) {
        stop();
        resolve();
      }
    });
  });
  const now = await served.runtime.store.get(taskId);
  if (now?.status !== status) await written;
  return (await served.runtime.store.get(taskId))!;
}
