/**
 * Recovery is not dark. The port is bound before recovery, and while the
 * runtime recovers its unfinished tasks a 2026-07-28 `tasks/get` is answered
 * from the store (waiting for the whole recovery would take 26.6 s for 50k
 * tasks on sqlite), while `tasks/update` and
 * `tasks/cancel` of a task not yet taken over answer a retryable -32603
 * naming the state (acknowledging them would drop the answers). Real HTTP,
 * a real sqlite file; recovery is held at its store listing by a gate so
 * the test does not depend on how long recovery takes.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import { z } from 'zod';
import { createRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { SqliteTaskStore } from '../../src/store/index.js';
import { heldRecovery } from '../support/heldRecovery.js';
import { makeRecord } from '../store/fixtures.js';
import { postJsonRpc } from '../support/httpRaw.js';
import { tempDir, waitFor } from '../support/processes.js';

it(
  'while recovering: tasks/get answers from the store, update and cancel a retryable -32603; after it, all as usual',
  { timeout: 120_000 },
  async (t) => {
    const dir = await tempDir('taskvisor-recovering-');
    t.after(() => dir.remove());
    const file = join(dir.path, 'tasks.sqlite');
    const finished = makeRecord({
      owner: 'anonymous',
      tool: 'work',
      status: 'completed',
      result: { content: [{ type: 'text', text: 'done' }] },
    });
    delete finished.snapshot;
    const unfinished = makeRecord({ owner: 'anonymous', tool: 'work', statusMessage: 'half way' });
    const seed = new SqliteTaskStore({ file });
    await seed.open();
    await seed.create(finished);
    await seed.create(unfinished);
    await seed.close();

    const gated = heldRecovery(new SqliteTaskStore({ file }));
    const runtime = createRuntime({ store: gated.store, logger: { info: () => {}, error: () => {} }, reapIntervalMs: 0 });
    runtime.tool('work', { taskBehavior: 'always', inputSchema: z.object({}) }, () => 'never runs');
    await runtime.open();
    const http = await listenHttp(runtime, {
      port: 0,
      authenticate: (request) => ({ id: request.headers.get('x-principal') ?? 'anonymous' }),
    });
    t.after(async () => {
      gated.open();
      await http.close();
      await runtime.close();
    });
    const started = runtime.start();
    await gated.reached;
    assert.equal(runtime.phase, 'recovering');

    // Recovery is held: before, every request waited for it.
    const done = await postJsonRpc(http.url, 'tasks/get', { taskId: finished.taskId });
    assert.equal((done.message?.result as { status?: string })?.status, 'completed', done.text);
    const working = await postJsonRpc(http.url, 'tasks/get', { taskId: unfinished.taskId });
    assert.equal((working.message?.result as { status?: string })?.status, 'working', working.text);
    assert.equal((working.message?.result as { statusMessage?: string })?.statusMessage, 'half way');
    // Another principal's id stays unknown while recovering too (I-7).
    const foreign = await postJsonRpc(http.url, 'tasks/get', { taskId: unfinished.taskId }, { headers: { 'x-principal': 'mallory' } });
    assert.equal(foreign.message?.error?.code, -32602, foreign.text);

    for (const [method, params] of [
      ['tasks/update', { taskId: unfinished.taskId, inputResponses: { k: { action: 'accept', content: {} } } }],
      ['tasks/cancel', { taskId: unfinished.taskId }],
    ] as const) {
      const refused = await postJsonRpc(http.url, method, params);
      assert.equal(refused.message?.error?.code, -32603, `${method}: ${refused.text}`);
      assert.match(refused.message.error.message, /recovering its tasks; retry/);
      assert.deepEqual(refused.message.error.data, { retryable: true, state: 'recovering' });
    }
    // A finished task's cancel is an acknowledgement as always (T-23, T-28): nothing to lose.
    const finishedCancel = await postJsonRpc(http.url, 'tasks/cancel', { taskId: finished.taskId });
    assert.equal(finishedCancel.message?.error, undefined, finishedCancel.text);
    assert.equal(runtime.phase, 'recovering', 'recovery was still held');

    gated.open();
    await started;
    // Recovered (its tool does not replay: it ended failed); the refused cancel can be retried now.
    await waitFor(
      async () =>
        ((await postJsonRpc(http.url, 'tasks/get', { taskId: unfinished.taskId })).message?.result as { status?: string })?.status ===
        'failed',
      { timeoutMs: 20_000, what: 'the recovered task to end' },
    );
    const retried = await postJsonRpc(http.url, 'tasks/cancel', { taskId: unfinished.taskId });
    assert.equal(retried.message?.error, undefined, retried.text);
  },
);
