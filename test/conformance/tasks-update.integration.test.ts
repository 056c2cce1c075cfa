/**
 * Conformance: `tasks/update` params (§1.6, T-20, T-22). `inputResponses`
 * is required and is a map from input request key to a bare result; any
 * other JSON value is malformed params (-32602), and a refused update changes
 * nothing: the task keeps waiting for the same key. Raw JSON-RPC over real
 * HTTP (the ext-tasks client cannot send these shapes), then the ext-tasks
 * client's own tasks/update finishes the task. The same check over a stdio
 * child process, where the request never passes through HTTP code.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listenHttp } from '../../src/transports/index.js';
import { type TaskvisorRuntime } from '../../src/index.js';
import { startE2eRuntime } from '../e2e/fixtures/runtime.js';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { postJsonRpc } from '../support/httpRaw.js';
import { fileURLToPath } from 'node:url';
import { createTask, errorOf, getTask, pollTask, rawRequest, REPO_ROOT, resultOf } from '../support/processes.js';

type Json = Record<string, any>;

let runtime: TaskvisorRuntime;
let url = '';
let client: ConnectedClient;

before(async () => {
  runtime = await startE2eRuntime();
  url = (await listenHttp(runtime, { port: 0 })).url;
  client = await connect({ kind: 'http', url });
});
after(async () => {
  await client.close();
  await runtime.close();
});

async function waitingHelloTask(): Promise<string> {
  const created = await postJsonRpc(url, 'tools/call', { name: 'hello_world', arguments: {} });
  assert.equal(created.message?.result?.resultType, 'task', created.text);
  const taskId = String(created.message.result.taskId);
  await pollTask(client, taskId, (task) => task.status === 'input_required');
  return taskId;
}

describe('tasks/update: inputResponses must be an object map (§1.6)', () => {
  for (const [label, value] of [
    ['an array', [{ action: 'accept', content: { name: 'Luca' } }]],
    ['null', null],
    ['a string', 'Luca'],
    ['a number', 7],
  ] as const) {
    it(`inputResponses as ${label} is -32602 and the task still waits for the same key`, async () => {
      const taskId = await waitingHelloTask();
      const before = await postJsonRpc(url, 'tasks/get', { taskId });
      const reply = await postJsonRpc(url, 'tasks/update', { taskId, inputResponses: value });
      assert.equal(reply.message?.error?.code, -32602, `${label}: ${reply.text}`);
      assert.match(String(reply.message?.error?.message), /inputResponses/);
      const after = await postJsonRpc(url, 'tasks/get', { taskId });
      assert.equal(after.message?.result?.status, 'input_required');
      assert.deepEqual(after.message?.result?.inputRequests, before.message?.result?.inputRequests);
      await postJsonRpc(url, 'tasks/cancel', { taskId });
    });
  }

  it('an empty object is a valid (no-op) update, and the right answer then finishes the task', async () => {
    const taskId = await waitingHelloTask();
    const empty = await postJsonRpc(url, 'tasks/update', { taskId, inputResponses: {} });
    assert.deepEqual({ ...empty.message?.result, _meta: undefined }, { resultType: 'complete', _meta: undefined });
    assert.equal((await postJsonRpc(url, 'tasks/get', { taskId })).message?.result?.status, 'input_required');
    const ack = await postJsonRpc(url, 'tasks/update', {
      taskId,
      inputResponses: { name: { action: 'accept', content: { name: 'Luca' } } },
    });
    assert.equal(ack.message?.result?.resultType, 'complete');
    const done = (await pollTask(client, taskId, (task) => task.status === 'completed')).task as Json;
    assert.equal(done.result.content[0].text, 'Hello, Luca!');
    assert.equal(done.result.resultType, 'complete');
  });
});

describe('answers are checked against the requestedSchema of the input request they answer (elicitation, T-19)', () => {
  const waiting = async (taskId: string) => {
    const after = await postJsonRpc(url, 'tasks/get', { taskId });
    assert.equal(after.message?.result?.status, 'input_required', after.text);
    assert.ok((after.message?.result?.inputRequests as Json | undefined)?.name, after.text);
  };

  for (const [label, content, field] of [
    ['a number for a string field', { name: 123 }, 'name'],
    ['a required field missing', {}, 'name'],
    ['no content at all', undefined, 'name'],
  ] as const) {
    it(`accept with ${label} is -32602 naming the key and the field; the request stays open and the tool never sees it`, async () => {
      const taskId = await waitingHelloTask();
      const answer = { action: 'accept', ...(content === undefined ? {} : { content }) };
      const reply = await postJsonRpc(url, 'tasks/update', { taskId, inputResponses: { name: answer } });
      assert.equal(reply.message?.error?.code, -32602, reply.text);
      assert.match(String(reply.message?.error?.message), new RegExp(`inputResponses\\.name\\.content\\.${field}\\b`));
      await waiting(taskId);
      // The right answer then finishes it: the tool saw that one, never the refused one.
      const ack = await postJsonRpc(url, 'tasks/update', {
        taskId,
        inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } },
      });
      assert.equal(ack.message?.result?.resultType, 'complete', ack.text);
      const done = (await pollTask(client, taskId, (task) => task.status === 'completed')).task as Json;
      assert.equal(done.result.content[0].text, 'Hello, Ada!');
    });
  }

  for (const action of ['decline', 'cancel']) {
    it(`${action} carries no content to check: it reaches the tool`, async () => {
      const taskId = await waitingHelloTask();
      const ack = await postJsonRpc(url, 'tasks/update', { taskId, inputResponses: { name: { action } } });
      assert.equal(ack.message?.result?.resultType, 'complete', ack.text);
      const done = (await pollTask(client, taskId, (task) => task.status === 'completed')).task as Json;
      assert.equal(done.result.content[0].text, `No name given (${action}).`);
    });
  }

  it('MRTR: a tools/call retry whose answer fails the requestedSchema is -32602, with or without its requestState', async () => {
    const noTasks = { capabilities: { elicitation: { form: {} } } };
    const first = await postJsonRpc(url, 'tools/call', { name: 'hello_world', arguments: {} }, noTasks);
    assert.equal(first.message?.result?.resultType, 'input_required', first.text);
    const requestState = first.message?.result?.requestState;
    const bad = { name: { action: 'accept', content: { name: 123 } } };
    for (const retry of [{ requestState }, {}]) {
      const reply = await postJsonRpc(url, 'tools/call', { name: 'hello_world', arguments: {}, inputResponses: bad, ...retry }, noTasks);
      assert.equal(reply.message?.error?.code, -32602, reply.text);
      assert.match(String(reply.message?.error?.message), /inputResponses\.name\.content\.name\b/);
    }
    const good = { name: { action: 'accept', content: { name: 'Ada' } } };
    const done = await postJsonRpc(url, 'tools/call', { name: 'hello_world', arguments: {}, inputResponses: good, requestState }, noTasks);
    assert.equal((done.message?.result?.content as Json[] | undefined)?.[0]?.text, 'Hello, Ada!', done.text);
  });
});

describe('tasks/update over stdio: the same refusal (the check sits below every transport)', () => {
  const FIXTURE = fileURLToPath(new URL('../e2e/fixtures/stdio-server.ts', import.meta.url));
  let stdio: ConnectedClient;
  before(async () => {
    stdio = await connect({ kind: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE], cwd: REPO_ROOT });
  });
  after(() => stdio.close());

  it('inputResponses as an array is -32602; an object answer then finishes the task', async () => {
    const taskId = await createTask(stdio, 'hello_world');
    await pollTask(stdio, taskId, (task) => task.status === 'input_required');
    const refused = errorOf(await rawRequest(stdio, { method: 'tasks/update', params: { taskId, inputResponses: [], _meta: envelope() } }));
    assert.equal(refused.code, -32602);
    assert.equal(resultOf(await getTask(stdio, taskId)).status, 'input_required');
    const ack = resultOf(
      await rawRequest(stdio, {
        method: 'tasks/update',
        params: { taskId, inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } }, _meta: envelope() },
      }),
    );
    assert.equal(ack.resultType, 'complete');
    const { task } = await pollTask(stdio, taskId, (candidate) => candidate.status === 'completed');
    assert.equal((task as Json).result.content[0].text, 'Hello, Ada!');
  });

  it('without the extension declared, -32021 still wins over the malformed inputResponses (T-33)', async () => {
    const taskId = await createTask(stdio, 'hello_world');
    const outcome = await rawRequest(stdio, {
      method: 'tasks/update',
      params: { taskId, inputResponses: null, _meta: envelope({ elicitation: { form: {} } }) },
    });
    assert.equal(errorOf(outcome).code, -32021);
    await rawRequest(stdio, { method: 'tasks/cancel', params: { taskId, _meta: envelope() } });
  });
});
