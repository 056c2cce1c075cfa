/**
 * docs/getting-started.md "Call it by hand", as written:
 * the `_meta` envelope of its `META=` line and the JSON bodies of its
 * `hello_world` call and `tasks/update` are read from the document and sent
 * to the demo tools over real HTTP. With the envelope as written the call
 * must make a task (a missing `elicitation.form` would answer -32021), and
 * that task is created `input_required` with its request already there: the
 * input was pending when it was created (one poll saved; the seed status
 * may be any status, spec §1.3).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import demo from '../../examples/demo/tools.js';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp, type HttpListener } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { postJsonRpc } from '../support/httpRaw.js';
import { REPO_ROOT } from '../support/processes.js';

type Json = Record<string, unknown>;

/** The JSON body of the `mcp <method> …` line of the document that calls `method` (with `$META` substituted). */
function bodyOf(doc: string, meta: string, method: string, name?: string): Json {
  const line = doc.split('\n').find((l) => l.startsWith(`mcp ${method} `) && (name === undefined || l.includes(`"name":"${name}"`)));
  assert.ok(line, `getting-started.md has an \`mcp ${method}\` line${name ? ` for ${name}` : ''}`);
  const quoted = line.slice(line.indexOf("'{"));
  // '…,'"$META"'}}' → the shell's concatenation of the single-quoted parts with $META in between.
  const json = quoted
    .split(`'"$META"'`)
    .map((part) => part.replace(/^'|'$/g, ''))
    .join(meta);
  return JSON.parse(json) as Json;
}

describe('docs/getting-started.md: hello_world by hand', () => {
  let runtime: TaskvisorRuntime;
  let listener: HttpListener;
  let doc: string;
  let meta: string;

  before(async () => {
    doc = await readFile(join(REPO_ROOT, 'docs', 'getting-started.md'), 'utf8');
    const metaLine = doc.split('\n').find((line) => line.startsWith("META='"));
    assert.ok(metaLine, 'getting-started.md defines META');
    meta = metaLine.slice("META='".length, -1);
    runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger });
    runtime.use(...demo);
    await runtime.start();
    listener = await listenHttp(runtime, { port: 0 });
  });

  after(async () => {
    await runtime?.close();
  });

  it('the documented envelope declares what hello_world needs, and the task is created input_required', async () => {
    const call = bodyOf(doc, meta, 'tools/call', 'hello_world');
    const created = await postJsonRpc(listener.url, 'tools/call', call.params as Json);
    assert.equal(created.status, 200, created.text);
    const task = created.message?.result as Json;
    assert.equal(task.resultType, 'task', created.text);
    assert.equal(task.status, 'input_required', 'the elicitation was pending when the task was created');
    assert.equal(task.inputRequests, undefined, 'a CreateTaskResult carries no inputRequests (T-05)');

    const taskId = task.taskId as string;
    const got = await postJsonRpc(listener.url, 'tasks/get', { taskId, _meta: (call.params as Json)._meta });
    const detailed = got.message?.result as Json;
    assert.equal(detailed.status, 'input_required');
    assert.deepEqual(Object.keys(detailed.inputRequests as Json), ['name']);

    const update = bodyOf(doc, meta, 'tasks/update');
    const params = { ...(update.params as Json), taskId };
    const acknowledged = await postJsonRpc(listener.url, 'tasks/update', params);
    assert.equal(acknowledged.message?.result?.resultType, 'complete', acknowledged.text);
    let finished: Json | undefined;
    for (let i = 0; i < 200 && finished?.status !== 'completed'; i++) {
      const answer = (await postJsonRpc(listener.url, 'tasks/get', { taskId, _meta: (call.params as Json)._meta })).message?.result as Json;
      finished = answer;
      if (answer.status !== 'completed') await new Promise((resolve) => setTimeout(resolve, 25));
    }
    assert.deepEqual((finished!.result as Json).content, [{ type: 'text', text: 'Hello, Luca!' }]);
  });
});
