/**
 * Resources, resource templates, prompts and completions registered through
 * the runtime API (`runtime.use(...)` with `defineResource`, `definePrompt`…),
 * served to the clients in use: the v2 SDK client pinned to 2026-07-28 and the
 * v1 SDK client (2025-11-25), over real Streamable HTTP and a real stdio child
 * (examples/resources-and-prompts/stdio.ts).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocketClientTransport as V1WebSocketTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { WebSocket } from 'ws';
import { PromptListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, listenWebSocket, type HttpListener, type WebSocketListener } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import catalog from '../../examples/resources-and-prompts/catalog.js';
import { connect, type ConnectedClient, type Endpoint } from '../support/extTasksClient.js';
import { CLI, REPO_ROOT, TSX_IMPORT, waitFor } from '../support/processes.js';

const STDIO_EXAMPLE = join(REPO_ROOT, 'examples', 'resources-and-prompts', 'stdio.ts');
const CONFIG_EXAMPLE = join(REPO_ROOT, 'examples', 'resources-and-prompts', 'taskvisor.yaml');
const NO_CAPABILITIES = {};

/** What any client API (v1 or v2) exposes for these methods (their zod-inferred optional members may be `undefined`). */
interface SurfaceClient {
  listResources(): Promise<{ resources: Array<{ uri: string; name: string; mimeType?: string | undefined }> }>;
  listResourceTemplates(): Promise<{ resourceTemplates: Array<{ uriTemplate: string; name: string }> }>;
  readResource(params: {
    uri: string;
  }): Promise<{ contents: Array<{ uri: string; text?: string | undefined; mimeType?: string | undefined }> }>;
  listPrompts(): Promise<{
    prompts: Array<{ name: string; arguments?: Array<{ name: string; required?: boolean | undefined }> | undefined }>;
  }>;
  getPrompt(params: { name: string; arguments?: Record<string, string> }): Promise<{ messages: Array<{ role: string; content: unknown }> }>;
  complete(params: unknown): Promise<{ completion: { values: string[]; total?: number | undefined; hasMore?: boolean | undefined } }>;
}

/** The same checks for every client, era and transport. */
function surfaceChecks(label: string, client: () => SurfaceClient) {
  it(`${label}: resources/list has the fixed resource and what the template lists`, async () => {
    const { resources } = await client().listResources();
    assert.deepEqual(
      resources.map((r) => r.uri),
      ['notes://readme', 'notes://note/groceries', 'notes://note/ideas', 'notes://note/todo'],
    );
    assert.equal(resources[0]!.name, 'readme');
    assert.equal(resources[0]!.mimeType, 'text/plain');
  });

  it(`${label}: resources/templates/list has the template (no completer or lister on the wire)`, async () => {
    const { resourceTemplates } = await client().listResourceTemplates();
    assert.deepEqual(resourceTemplates, [
      { uriTemplate: 'notes://note/{name}', name: 'note', description: 'One note by name', mimeType: 'text/plain' },
    ]);
  });

  it(`${label}: resources/read reads a fixed resource (string answer) and a template match`, async () => {
    const fixed = await client().readResource({ uri: 'notes://readme' });
    assert.deepEqual(fixed.contents, [{ uri: 'notes://readme', mimeType: 'text/plain', text: 'Notes live at notes://note/{name}.' }]);
    const note = await client().readResource({ uri: 'notes://note/ideas' });
    assert.deepEqual(note.contents, [{ uri: 'notes://note/ideas', mimeType: 'text/plain', text: 'an actor per long-running call' }]);
  });

  it(`${label}: resources/read of an unknown URI is -32602 naming the URI`, async () => {
    await assert.rejects(client().readResource({ uri: 'elsewhere://nothing' }), (error: { code?: number; message?: string }) => {
      assert.equal(error.code, -32602);
      assert.match(String(error.message), /Resource not found: elsewhere:\/\/nothing/);
      return true;
    });
  });

  it(`${label}: prompts/list and prompts/get, a missing required argument is -32602`, async () => {
    const { prompts } = await client().listPrompts();
    assert.deepEqual(prompts, [
      {
        name: 'summarize_note',
        description: 'Ask the model to summarize one note',
        arguments: [
          { name: 'name', description: 'The note', required: true },
          { name: 'style', description: 'How (default: one line)' },
        ],
      },
    ]);
    const got = await client().getPrompt({ name: 'summarize_note', arguments: { name: 'todo' } });
    assert.equal(got.messages.length, 2);
    assert.deepEqual(got.messages[0], { role: 'user', content: { type: 'text', text: 'Summarize this note (one line):' } });
    assert.deepEqual((got.messages[1]!.content as { resource: unknown }).resource, {
      uri: 'notes://note/todo',
      mimeType: 'text/plain',
      text: 'write the docs',
    });
    await assert.rejects(client().getPrompt({ name: 'summarize_note', arguments: {} }), (error: { code?: number; message?: string }) => {
      assert.equal(error.code, -32602);
      assert.match(String(error.message), /missing required argument name/);
      return true;
    });
    await assert.rejects(client().getPrompt({ name: 'nope' }), /Unknown prompt: nope/);
  });

  it(`${label}: completion/complete for a prompt argument and a template variable`, async () => {
    const prompt = await client().complete({ ref: { type: 'ref/prompt', name: 'summarize_note' }, argument: { name: 'name', value: 'g' } });
    assert.deepEqual(prompt.completion, { values: ['groceries'], total: 1, hasMore: false });
    const template = await client().complete({
      ref: { type: 'ref/resource', uri: 'notes://note/{name}' },
      argument: { name: 'name', value: '' },
    });
    assert.deepEqual(template.completion.values, ['groceries', 'ideas', 'todo']);
    const none = await client().complete({ ref: { type: 'ref/prompt', name: 'summarize_note' }, argument: { name: 'style', value: 'x' } });
    assert.deepEqual(none.completion.values, []);
  });
}

describe('resources, prompts and completions over Streamable HTTP', () => {
  let runtime: TaskvisorRuntime;
  let listener: HttpListener;
  let modern: ConnectedClient;
  let legacy: V1Client;

  before(async () => {
    runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger });
    runtime.use(...catalog);
    await runtime.start();
    listener = await listenHttp(runtime, { port: 0 });
    const endpoint: Endpoint = { kind: 'http', url: listener.url };
    modern = await connect(endpoint, NO_CAPABILITIES);
    legacy = new V1Client({ name: 'v1', version: '1.0.0' });
    await legacy.connect(new V1HttpTransport(new URL(listener.url)));
  });

  after(async () => {
    await modern?.close();
    await legacy?.close();
    await runtime?.close();
  });

  it('advertises resources, prompts, completions and logging (2026-07-28 server/discover and 2025-11-25 initialize)', () => {
    const modernCapabilities = modern.client.getServerCapabilities() as Record<string, unknown>;
    const legacyCapabilities = legacy.getServerCapabilities() as Record<string, unknown>;
    for (const capabilities of [modernCapabilities, legacyCapabilities]) {
      assert.deepEqual(capabilities.resources, { listChanged: true, subscribe: true }); // a 2025-11-25 HTTP client has a session
      assert.deepEqual(capabilities.prompts, { listChanged: true });
      assert.deepEqual(capabilities.completions, {});
      assert.deepEqual(capabilities.logging, {});
    }
  });

  surfaceChecks('v2 client, 2026-07-28', () => modern.client);
  surfaceChecks('v1 client, 2025-11-25', () => legacy);

  it('a runtime with only tools advertises no resources, prompts or completions, and answers their methods -32601', async () => {
    const bare = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger });
    await bare.start();
    const bareListener = await listenHttp(bare, { port: 0 });
    const client = new V1Client({ name: 'v1', version: '1.0.0' });
    try {
      await client.connect(new V1HttpTransport(new URL(bareListener.url)));
      const capabilities = client.getServerCapabilities() as Record<string, unknown>;
      assert.equal(capabilities.resources, undefined);
      assert.equal(capabilities.prompts, undefined);
      assert.equal(capabilities.completions, undefined);
      await assert.rejects(
        client.request({ method: 'resources/list', params: {} }, {} as never),
        (error: { code?: number }) => error.code === -32601,
      );
    } finally {
      await client.close();
      await bare.close();
    }
  });
});

describe('resources, prompts and completions over stdio (examples/resources-and-prompts/stdio.ts)', () => {
  let modern: ConnectedClient;
  let legacy: V1Client;

  before(async () => {
    modern = await connect({ kind: 'stdio', command: process.execPath, args: ['--import', TSX_IMPORT, STDIO_EXAMPLE] }, NO_CAPABILITIES);
    legacy = new V1Client({ name: 'v1', version: '1.0.0' });
    await legacy.connect(
      new V1StdioTransport({ command: process.execPath, args: ['--import', TSX_IMPORT, STDIO_EXAMPLE], stderr: 'pipe' }),
    );
  });

  after(async () => {
    await modern?.close();
    await legacy?.close();
  });

  surfaceChecks('v2 client, 2026-07-28', () => modern.client);
  surfaceChecks('v1 client, 2025-11-25', () => legacy);
});

describe('resources, prompts and completions over WebSocket', () => {
  let runtime: TaskvisorRuntime;
  let listener: WebSocketListener;
  let modern: ConnectedClient;
  let legacy: V1Client;
  const globals = globalThis as { WebSocket?: unknown };
  const hadWebSocket = 'WebSocket' in globals;

  before(async () => {
    runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger });
    runtime.use(...catalog);
    await runtime.start();
    listener = await listenWebSocket(runtime, { port: 0 });
    modern = await connect({ kind: 'ws', url: listener.url }, NO_CAPABILITIES);
    // Node 20 has no global WebSocket; the v1 transport uses the browser API, which `ws` provides.
    globals.WebSocket ??= WebSocket;
    legacy = new V1Client({ name: 'v1', version: '1.0.0' });
    await legacy.connect(new V1WebSocketTransport(new URL(listener.url)));
  });

  after(async () => {
    await modern?.close();
    await legacy?.close();
    if (!hadWebSocket) delete globals.WebSocket;
    await runtime?.close();
  });

  surfaceChecks('v2 client, 2026-07-28', () => modern.client);
  surfaceChecks('v1 client, 2025-11-25', () => legacy);

  it('v1 client: registering and removing a prompt after start is one prompts/list_changed each', async () => {
    let heard = 0;
    legacy.setNotificationHandler(PromptListChangedNotificationSchema, async () => void heard++);
    runtime.prompt('ws_late', {}, () => 'late');
    await waitFor(() => heard === 1, { what: 'prompts/list_changed after a registration' });
    assert.ok((await legacy.listPrompts()).prompts.some((prompt) => prompt.name === 'ws_late'));
    assert.equal(runtime.prompts.remove('ws_late'), true);
    await waitFor(() => heard === 2, { what: 'prompts/list_changed after a removal' });
    assert.ok(!(await legacy.listPrompts()).prompts.some((prompt) => prompt.name === 'ws_late'));
  });
});

describe('resources and prompts from a config module (examples/resources-and-prompts/taskvisor.yaml, `resources:`)', () => {
  let legacy: V1Client;

  before(async () => {
    legacy = new V1Client({ name: 'v1', version: '1.0.0' });
    await legacy.connect(
      new V1StdioTransport({ command: process.execPath, args: [CLI, 'serve', '--config', CONFIG_EXAMPLE, '--stdio'], stderr: 'pipe' }),
    );
  });

  after(async () => {
    await legacy?.close();
  });

  surfaceChecks('v1 client over stdio', () => legacy);

  it("the module's tool is registered too (a module may mix definition kinds)", async () => {
    const { tools } = await legacy.listTools();
    assert.deepEqual(
      tools.map((tool) => tool.name),
      ['count_notes'],
    );
  });
});
