/**
 * `ctx.log` and `ctx.progress` from a tool: log messages as
 * `notifications/message` filtered by the client's level (`logging/setLevel`
 * on 2025-11-25, the request's `io.modelcontextprotocol/logLevel` on
 * 2026-07-28, where no level means no messages), progress as
 * `notifications/progress` for the request's own `progressToken`, and, once
 * the call is a task, as its `statusMessage` (T-32). Real HTTP and a real
 * stdio child; the v2 and the v1 SDK clients.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, type HttpListener } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import catalog from '../../examples/resources-and-prompts/catalog.js';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { createTask, pollTask, rawRequest, REPO_ROOT, resultOf, TSX_IMPORT } from '../support/processes.js';

const STDIO_EXAMPLE = join(REPO_ROOT, 'examples', 'resources-and-prompts', 'stdio.ts');
type Json = Record<string, unknown>;

const notificationsOf = (received: unknown[], method: string) =>
  received.filter((message) => (message as Json).method === method).map((message) => (message as { params: Json }).params);

/** The `steps` tool's statusMessages the test has read, each releasing the tool's next step. */
const readSteps = new Map<string, () => void>();
const seenSteps = new Map<string, Promise<void>>();
function stepSeen(message: string): Promise<void> {
  if (!seenSteps.has(message)) seenSteps.set(message, new Promise((resolve) => readSteps.set(message, resolve)));
  return seenSteps.get(message)!;
}
function markStepSeen(message: string): void {
  void stepSeen(message);
  readSteps.get(message)!();
}

describe('ctx.log and ctx.progress over Streamable HTTP', () => {
  let runtime: TaskvisorRuntime;
  let listener: HttpListener;
  let modern: ConnectedClient;

  before(async () => {
    runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger });
    runtime.use(...catalog);
    // Each step waits until the test has read the one before in the task's statusMessage.
    runtime.tool('steps', { inputSchema: z.object({}), taskBehavior: 'always' }, async (_args, ctx) => {
      ctx.progress(1, 2, 'first half');
      ctx.log('info', 'a task has nobody to log to');
      await stepSeen('1/2: first half');
      ctx.progress(2, 2);
      await stepSeen('2/2');
      return 'done';
    });
    await runtime.start();
    listener = await listenHttp(runtime, { port: 0 });
    modern = await connect({ kind: 'http', url: listener.url });
  });

  after(async () => {
    await modern?.close();
    await runtime?.close();
  });

  it("2026-07-28: progress goes to the request's progressToken; log messages only at or above the request's logLevel", async () => {
    const before = modern.received.length;
    const outcome = await rawRequest(modern, {
      method: 'tools/call',
      params: {
        name: 'count_notes',
        arguments: {},
        _meta: { ...envelope({}), progressToken: 'p-1', 'io.modelcontextprotocol/logLevel': 'info' },
      },
    });
    assert.deepEqual(resultOf(outcome).content, [{ type: 'text', text: '3 notes' }]);
    const seen = modern.received.slice(before);
    assert.deepEqual(
      notificationsOf(seen, 'notifications/progress').map(({ progressToken, progress, total, message }) => ({
        progressToken,
        progress,
        total,
        message,
      })),
      [
        { progressToken: 'p-1', progress: 1, total: 3, message: 'counted groceries' },
        { progressToken: 'p-1', progress: 2, total: 3, message: 'counted ideas' },
        { progressToken: 'p-1', progress: 3, total: 3, message: 'counted todo' },
      ],
    );
    // `debug` is below `info`: filtered out.
    assert.deepEqual(
      notificationsOf(seen, 'notifications/message').map(({ level, data, logger }) => ({ level, data, logger })),
      [{ level: 'info', data: 'counted 3 notes', logger: 'notes' }],
    );
  });

  it('2026-07-28: without a logLevel no log message is sent, without a progressToken no progress', async () => {
    const before = modern.received.length;
    resultOf(await rawRequest(modern, { method: 'tools/call', params: { name: 'count_notes', arguments: {}, _meta: envelope({}) } }));
    const seen = modern.received.slice(before);
    assert.deepEqual(notificationsOf(seen, 'notifications/message'), []);
    assert.deepEqual(notificationsOf(seen, 'notifications/progress'), []);
  });

  it('T-32: a task reports progress as its statusMessage and sends no progress or log notification', async () => {
    const before = modern.received.length;
    const taskId = await createTask(modern, 'steps');
    const messages: string[] = [];
    await pollTask(
      modern,
      taskId,
      (task) => {
        if (task.status === 'working' && typeof task.statusMessage === 'string' && messages.at(-1) !== task.statusMessage) {
          messages.push(task.statusMessage);
          markStepSeen(task.statusMessage);
        }
        return task.status === 'completed';
      },
      { timeoutMs: 10_000 },
    );
    assert.deepEqual(messages, ['1/2: first half', '2/2']);
    const seen = modern.received.slice(before);
    assert.deepEqual(notificationsOf(seen, 'notifications/progress'), []);
    assert.deepEqual(notificationsOf(seen, 'notifications/message'), []);
  });

  it('2025-11-25 (v1 client): onprogress gets every step; log messages arrive (no level set: all of them)', async () => {
    const client = new V1Client({ name: 'v1', version: '1.0.0' });
    const logs: Json[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (notification) => void logs.push(notification.params));
    await client.connect(new V1HttpTransport(new URL(listener.url)));
    try {
      const steps: Json[] = [];
      const result = await client.callTool({ name: 'count_notes', arguments: {} }, undefined, { onprogress: (p) => void steps.push(p) });
      assert.deepEqual(result.content, [{ type: 'text', text: '3 notes' }]);
      assert.deepEqual(
        steps.map((step) => step.progress),
        [1, 2, 3],
      );
      assert.deepEqual(
        logs.map((log) => log.level),
        ['debug', 'info'],
      );
    } finally {
      await client.close();
    }
  });
});

describe('ctx.log over stdio (2025-11-25, logging/setLevel on the connection)', () => {
  let client: V1Client;
  const logs: Json[] = [];

  before(async () => {
    client = new V1Client({ name: 'v1', version: '1.0.0' });
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (notification) => void logs.push(notification.params));
    await client.connect(
      new V1StdioTransport({ command: process.execPath, args: ['--import', TSX_IMPORT, STDIO_EXAMPLE], stderr: 'pipe' }),
    );
  });

  after(async () => {
    await client?.close();
  });

  it("logging/setLevel filters later calls' messages; progress reaches onprogress", async () => {
    await client.callTool({ name: 'count_notes', arguments: {} });
    assert.deepEqual(
      logs.splice(0).map((log) => log.level),
      ['debug', 'info'],
    );
    await client.setLoggingLevel('warning');
    await client.callTool({ name: 'count_notes', arguments: {} });
    assert.deepEqual(logs.splice(0), [], 'debug and info are below warning');
    await client.setLoggingLevel('info');
    const steps: number[] = [];
    // stepMs: the v1 client runs notification handlers a microtask later but its response handler at once, and
    // drops its progress handler with the response: progress read in the same stdout chunk as the response is
    // lost ("unknown token"). Under load all three were, so the steps are spaced to arrive in their own chunks.
    await client.callTool({ name: 'count_notes', arguments: { stepMs: 50 } }, undefined, {
      onprogress: (p) => void steps.push(p.progress),
    });
    assert.deepEqual(
      logs.splice(0).map((log) => [log.level, log.data, log.logger]),
      [['info', 'counted 3 notes', 'notes']],
    );
    assert.deepEqual(steps, [1, 2, 3]);
  });
});
