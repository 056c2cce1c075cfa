/**
 * A 2025-11-25 client — the v1 SDK `@modelcontextprotocol/sdk@1.32.2` — against
 * taskvisor over Streamable HTTP (in-process runtime, stateless legacy serving)
 * and over stdio (`taskvisor serve --stdio`, a pinned legacy instance).
 *
 * Legacy clients never get tasks (T-37): every demo tool answers a plain
 * result, also `sleep` longer than the 200 ms promotion threshold, and
 * `tasks/*` are not there (-32601).
 *
 * `hello_world` (elicits a name) works the same on both: the SDK's legacy
 * input-required shim turns our MRTR `input_required` into a server→client
 * `elicitation/create`, the client's handler answers, the tool completes.
 * Over HTTP that needs the client's session (`Mcp-Session-Id`):
 * per-request serving had no connection to send the request on.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ElicitRequestSchema, McpError, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import demo from '../../examples/demo/tools.js';
import { createRuntime, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, type HttpListener } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { connect } from '../support/extTasksClient.js';
import { CLI, createTask, DEMO_TOOLS, tempDir } from '../support/processes.js';

const DEMO_TOOL_NAMES = ['echo', 'fail', 'hello_world', 'sleep', 'tool_error'];
const NO_CAPABILITIES_TEXT =
  "Cannot request input 'name' (elicitation/create): the client on this 2025-era connection did not declare the required capability";

interface LegacyClient {
  client: Client;
  /** Every message the server sent to this client, in order. */
  received: Array<Record<string, unknown>>;
  /** Elicitation requests the client's handler was asked to answer. */
  elicitations: ElicitRequest['params'][];
  close(): Promise<void>;
}

/** A v1 client that declares form elicitation (or nothing) and answers every elicitation with `answer`. */
async function legacyClient(
  transport: Transport,
  {
    elicitation = true,
    answer = { action: 'accept', content: { name: 'Ada' } },
  }: { elicitation?: boolean; answer?: Record<string, unknown> } = {},
): Promise<LegacyClient> {
  const client = new Client(
    { name: 'legacy-v1-client', version: '1.32.2' },
    { capabilities: elicitation ? { elicitation: { form: {} } } : {} },
  );
  const elicitations: ElicitRequest['params'][] = [];
  if (elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicitations.push(request.params);
      return answer;
    });
  }
  // Protocol.connect sets onmessage before it starts the transport: record everything from the first message on.
  const received: Array<Record<string, unknown>> = [];
  const start = transport.start.bind(transport);
  transport.start = async () => {
    const inner = transport.onmessage;
    transport.onmessage = (message: Record<string, unknown>, extra: unknown) => {
      received.push(message);
      (inner as (m: unknown, e: unknown) => void)(message, extra);
    };
    return start();
  };
  await client.connect(transport);
  return { client, received, elicitations, close: () => client.close() };
}

/** Whatever came back must not be, or mention, a task. */
function assertNoTask(received: Array<Record<string, unknown>>): void {
  for (const message of received) {
    const result = message.result as Record<string, unknown> | undefined;
    assert.notEqual(result?.resultType, 'task', `a legacy client got a CreateTaskResult: ${JSON.stringify(message)}`);
    assert.equal(result?.taskId, undefined, `a legacy client saw a taskId: ${JSON.stringify(message)}`);
    assert.ok(
      typeof message.method !== 'string' || !message.method.startsWith('notifications/tasks'),
      `a legacy client got a task notification: ${JSON.stringify(message)}`,
    );
  }
}

/** The checks both transports share. */
function sharedCases(get: () => LegacyClient): void {
  it('negotiates 2025-11-25 and sees no tasks capability (T-37)', () => {
    const { client, received } = get();
    const init = received.find((message) => (message.result as { protocolVersion?: string } | undefined)?.protocolVersion);
    assert.equal((init?.result as { protocolVersion: string }).protocolVersion, '2025-11-25');
    const capabilities = client.getServerCapabilities() as Record<string, unknown>;
    assert.ok(capabilities.tools, 'tools capability');
    assert.equal(capabilities.tasks, undefined, 'no legacy tasks.* capability (T-37)');
    assert.equal((capabilities.extensions as Record<string, unknown> | undefined)?.['io.modelcontextprotocol/tasks'], undefined);
  });

  it('lists every demo tool with its input schema', async () => {
    const { tools } = await get().client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), DEMO_TOOL_NAMES);
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    for (const tool of tools) assert.equal(tool.inputSchema.type, 'object', `${tool.name} inputSchema.type`);
    const sleep = byName.get('sleep')!.inputSchema;
    assert.deepEqual(sleep.required, ['ms']);
    assert.deepEqual(Object.keys(sleep.properties ?? {}).sort(), ['message', 'ms']);
    assert.equal((sleep.properties!.ms as { type: string }).type, 'integer');
    assert.deepEqual(byName.get('echo')!.inputSchema.required, ['text']);
    assert.equal((byName.get('echo')!.inputSchema.properties!.text as { type: string }).type, 'string');
    assert.deepEqual(byName.get('fail')!.inputSchema.required, ['message']);
    assert.deepEqual(byName.get('tool_error')!.inputSchema.required, ['message']);
    assert.deepEqual(byName.get('hello_world')!.inputSchema.properties, {});
  });

  it('sleep {ms: 600} — longer than the 200 ms promotion threshold — is a plain result, never a task', async () => {
    const started = Date.now();
    const result = await get().client.callTool({ name: 'sleep', arguments: { ms: 600 } });
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 580, `answered after ${elapsed} ms: the call did not wait for the tool`);
    assert.deepEqual(result, { content: [{ type: 'text', text: 'Slept for 600 ms' }] });
    assertNoTask(get().received);
  });

  it('echo answers its text', async () => {
    const result = await get().client.callTool({ name: 'echo', arguments: { text: 'hi there' } });
    assert.deepEqual(result, { content: [{ type: 'text', text: 'hi there' }] });
  });

  it('tool_error is a result with isError: true', async () => {
    const result = await get().client.callTool({ name: 'tool_error', arguments: { message: 'not good' } });
    assert.deepEqual(result, { content: [{ type: 'text', text: 'not good' }], isError: true });
  });

  it('fail is a JSON-RPC error with the given code, thrown by callTool', async () => {
    await assert.rejects(get().client.callTool({ name: 'fail', arguments: { code: -32050, message: 'boom' } }), (error: unknown) => {
      assert.ok(error instanceof McpError, `expected McpError, got ${String(error)}`);
      assert.equal(error.code, -32050);
      assert.match(error.message, /boom/);
      return true;
    });
    await assert.rejects(get().client.callTool({ name: 'fail', arguments: { message: 'default code' } }), { code: -32603 });
  });

  it('bad arguments are -32602', async () => {
    await assert.rejects(get().client.callTool({ name: 'sleep', arguments: { ms: 'soon' } }), { code: -32602 });
  });

  it('tasks/get and tasks/cancel are -32601: the extension never enables tasks under 2025-11-25 (T-37)', async () => {
    const { client, received } = get();
    for (const method of ['tasks/get', 'tasks/cancel']) {
      await assert.rejects(
        client.request({ method, params: { taskId: '0123456789abcdef0123456789abcdef' } }, z.any() as never),
        (error: unknown) => {
          assert.ok(error instanceof McpError, `${method}: expected McpError, got ${String(error)}`);
          assert.equal(error.code, -32601, `${method}: ${error.message}`);
          return true;
        },
      );
    }
    // The error came from the server, not from a client-side capability check.
    const errors = received.filter((message) => (message.error as { code?: number } | undefined)?.code === -32601);
    assert.ok(errors.length >= 2, `server answered -32601: ${JSON.stringify(received.slice(-3))}`);
  });

  it('never saw a task in anything the server sent', () => {
    assertNoTask(get().received);
  });
}

describe('2025-11-25 client (v1 SDK 1.32.2)', { concurrency: true }, () => {
  describe('over Streamable HTTP (a 2025-11-25 session)', { concurrency: false }, () => {
    let runtime: TaskvisorRuntime;
    let http: HttpListener;
    let legacy: LegacyClient;

    before(async () => {
      runtime = createRuntime({ store: new MemoryTaskStore(), logger: silent() });
      runtime.use(...demo);
      await runtime.start();
      http = await listenHttp(runtime, { port: 0 });
      legacy = await legacyClient(new StreamableHTTPClientTransport(new URL(http.url)));
    });
    after(async () => {
      await legacy?.close();
      await runtime?.close();
    });

    sharedCases(() => legacy);

    it('the session is named in Mcp-Session-Id', () => {
      assert.match(String((legacy.client.transport as StreamableHTTPClientTransport).sessionId), /^[0-9a-f-]{36}$/);
    });

    it('hello_world: the server→client elicitation/create goes on the session, the client answers, the tool completes', async () => {
      const result = await legacy.client.callTool({ name: 'hello_world', arguments: {} });
      assert.deepEqual(result, { content: [{ type: 'text', text: 'Hello, Ada!' }] });
      assert.equal(legacy.elicitations.length, 1);
      assert.equal(legacy.elicitations[0]!.message, 'Please enter your name.');
      assert.ok(legacy.received.some((message) => message.method === 'elicitation/create'));
    });

    it('no legacy call left a task in the store', async () => {
      assert.deepEqual(await runtime.store.list(), []);
      assert.equal(runtime.liveTasks, 0);
    });

    it('tasks/get with the id of a real task (created by a 2026 client) is still -32601 for the legacy client', async () => {
      const modern = await connect({ kind: 'http', url: http.url });
      try {
        const taskId = await createTask(modern, 'sleep', { ms: 400 });
        await assert.rejects(legacy.client.request({ method: 'tasks/get', params: { taskId } }, z.any() as never), {
          code: -32601,
        });
      } finally {
        await modern.close();
      }
    });
  });

  describe('over stdio (taskvisor serve --stdio)', { concurrency: false }, () => {
    let dir: Awaited<ReturnType<typeof tempDir>>;
    let config: string;
    let legacy: LegacyClient;
    let declining: LegacyClient;
    let plain: LegacyClient;
    const stderr: string[] = [];

    const spawnServer = () => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'serve', '--stdio', '--config', config],
        cwd: dir.path,
        stderr: 'pipe',
      });
      transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
      return transport;
    };

    before(async () => {
      dir = await tempDir('taskvisor-legacy-');
      config = join(dir.path, 'taskvisor.yaml');
      await writeFile(config, `store:\n  kind: memory\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\n`);
      // Three servers, one per client configuration, started side by side.
      [legacy, declining, plain] = await Promise.all([
        legacyClient(spawnServer()),
        legacyClient(spawnServer(), { answer: { action: 'decline' } }),
        legacyClient(spawnServer(), { elicitation: false }),
      ]);
    });
    after(async () => {
      await Promise.all([legacy?.close(), declining?.close(), plain?.close()]);
      await dir?.remove();
    });

    sharedCases(() => legacy);

    it('hello_world: the SDK shim turns input_required into a server→client elicitation/create the client answers', async () => {
      const result = await legacy.client.callTool({ name: 'hello_world', arguments: {} });
      assert.deepEqual(result, { content: [{ type: 'text', text: 'Hello, Ada!' }] }, `stderr: ${stderr.join('')}`);
      assert.equal(legacy.elicitations.length, 1);
      const [request] = legacy.elicitations;
      assert.equal(request!.message, 'Please enter your name.');
      assert.deepEqual((request as { requestedSchema: unknown }).requestedSchema, {
        type: 'object',
        properties: { name: { type: 'string' } },
        required: ['name'],
      });
      assert.ok(legacy.received.some((message) => message.method === 'elicitation/create'));
    });

    it('hello_world with a declined elicitation ends in the tool’s own isError result', async () => {
      const result = await declining.client.callTool({ name: 'hello_world', arguments: {} });
      assert.deepEqual(result, { content: [{ type: 'text', text: 'No name given (decline).' }], isError: true });
      assert.equal(declining.elicitations.length, 1);
    });

    it('hello_world from a client without the elicitation capability is an isError result, never a request it cannot answer', async () => {
      const result = await plain.client.callTool({ name: 'hello_world', arguments: {} });
      assert.deepEqual(result, { content: [{ type: 'text', text: NO_CAPABILITIES_TEXT }], isError: true });
      assert.equal(
        plain.received.some((message) => message.method === 'elicitation/create'),
        false,
      );
    });
  });
});

function silent() {
  return { info() {}, warn() {}, error() {} } as never;
}
