/**
 * Conformance: T-19 at the level of capability members. A task never carries
 * an `inputRequests` entry whose kind the creating `tools/call` did not
 * declare (D-10), and the kinds are those of the SDK's MRTR check:
 * url-mode elicitation needs `elicitation.url`; form-mode needs
 * `elicitation.form` (a bare `elicitation: {}` counts as form, the 2025
 * meaning); sampling with `tools`/`toolChoice` needs `sampling.tools`.
 * Real HTTP, raw JSON-RPC so each call declares exactly the capabilities
 * under test; the task ends `failed` with -32021 naming what is missing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRuntime, defineTool, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { postJsonRpc } from '../support/httpRaw.js';
import { isTerminalTask, pollTask } from '../support/processes.js';

type Json = Record<string, any>;
const TASKS = { 'io.modelcontextprotocol/tasks': {} };

const URL_REQUEST = {
  method: 'elicitation/create',
  params: { mode: 'url', message: 'Sign in, please', url: 'https://example.com/sign-in' },
} as const;
const FORM_REQUEST = {
  method: 'elicitation/create',
  params: {
    mode: 'form',
    message: 'Your name?',
    requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  },
} as const;
const SAMPLING_WITH_TOOLS = {
  method: 'sampling/createMessage',
  params: {
    messages: [{ role: 'user', content: { type: 'text', text: 'What is the weather?' } }],
    maxTokens: 100,
    tools: [{ name: 'weather', inputSchema: { type: 'object', properties: {} } }],
  },
} as const;

let runtime: TaskvisorRuntime;
let url = '';
let client: ConnectedClient;

before(async () => {
  runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger, pollIntervalMs: 50, reapIntervalMs: 0 });
  const asking = (name: string, request: Json) =>
    defineTool(name, { description: `Asks for ${request.method} in a task`, taskBehavior: 'always' }, async (_args, ctx) => {
      await ctx.requestInput('ask', request as never);
      return 'answered';
    });
  runtime.use(asking('ask_url', URL_REQUEST), asking('ask_form', FORM_REQUEST), asking('ask_sampling_tools', SAMPLING_WITH_TOOLS));
  await runtime.start();
  url = (await listenHttp(runtime, { port: 0 })).url;
  client = await connect({ kind: 'http', url });
});
after(async () => {
  await client.close();
  await runtime.close();
});

/** Creates a task of `tool` declaring `capabilities` (plus tasks) and waits until it asks or ends. */
async function run(tool: string, capabilities: Json): Promise<Json> {
  const created = await postJsonRpc(url, 'tools/call', {
    name: tool,
    arguments: {},
    _meta: envelope({ ...capabilities, extensions: TASKS }),
  });
  assert.equal(created.message?.result?.resultType, 'task', created.text);
  const taskId = String(created.message.result.taskId);
  const { task } = await pollTask(client, taskId, (candidate) => candidate.status === 'input_required' || isTerminalTask(candidate));
  if (task.status === 'input_required') await postJsonRpc(url, 'tasks/cancel', { taskId });
  return task;
}

function assertRefused(task: Json, requiredCapabilities: Json): void {
  assert.equal(task.status, 'failed', `expected failed, got ${task.status} with ${JSON.stringify(task.inputRequests)}`);
  assert.equal(task.error.code, -32021);
  assert.deepEqual(task.error.data, { requiredCapabilities });
}

describe('T-19: input kinds need the declared capability members (D-10)', () => {
  it('url-mode elicitation from a client that declared only elicitation.form: refused', async () => {
    assertRefused(await run('ask_url', { elicitation: { form: {} } }), { elicitation: { url: {} } });
  });

  it('url-mode elicitation with elicitation.url declared: asked', async () => {
    const task = await run('ask_url', { elicitation: { url: {} } });
    assert.equal(task.status, 'input_required');
    assert.deepEqual(task.inputRequests.ask, URL_REQUEST);
  });

  it('form elicitation from a client that declared only elicitation.url: refused', async () => {
    assertRefused(await run('ask_form', { elicitation: { url: {} } }), { elicitation: { form: {} } });
  });

  it('form elicitation with a bare elicitation: {} (the 2025 meaning: form) is asked', async () => {
    const task = await run('ask_form', { elicitation: {} });
    assert.equal(task.status, 'input_required');
    assert.deepEqual(task.inputRequests.ask, FORM_REQUEST);
  });

  it('sampling with tools from a client without sampling.tools: refused; with it: asked', async () => {
    assertRefused(await run('ask_sampling_tools', { sampling: {} }), { sampling: { tools: {} } });
    const task = await run('ask_sampling_tools', { sampling: { tools: {} } });
    assert.equal(task.status, 'input_required');
    assert.deepEqual(task.inputRequests.ask, SAMPLING_WITH_TOOLS);
  });
});
