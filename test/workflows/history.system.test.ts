/**
 * Run history through the public interface: a real server
 * from a real config (sqlite store, token-file auth with two principals) over
 * HTTP with the ext-tasks client, muster's `core_workflow_execution_list` /
 * `core_workflow_execution_get`, the `taskvisor workflows runs` command
 * reading the same file, retention, and kill -9 during a synchronous run.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { serve } from '../../src/cli/serve.js';
import { SqliteTaskStore } from '../../src/store/SqliteTaskStore.js';
import { EXECUTION_ID_META_KEY } from '../../src/workflows/index.js';
import { connect, type ConnectedClient } from '../support/extTasksClient.js';
import { writeTokenFile } from '../support/authFixtures.js';
import { CLI, freePort, runNode, spawnNode, tempDir, waitFor, type Child } from '../support/processes.js';
import { NO_TASKS_CAPABILITIES, taskOps, type Json } from '../support/taskOps.js';
import { freshSchema, TEST_PG_URL } from '../support/postgres.js';

const TOOLS = fileURLToPath(new URL('./fixtures/tools.ts', import.meta.url));
const ALICE = randomBytes(24).toString('hex');
const BOB = randomBytes(24).toString('hex');

/** muster-format workflow files (written for these tests, in muster's documented format). */
const WORKFLOWS: Record<string, unknown> = {
  'greet.yaml': {
    kind: 'Workflow',
    metadata: { name: 'greet' },
    spec: {
      taskBehavior: 'never',
      args: { who: { type: 'string', required: true } },
      steps: [
        { id: 'hello', tool: 'echo', args: { value: 'hello {{ .input.who }}' } },
        { id: 'sum', tool: 'add', args: { a: 1, b: 2 } },
      ],
    },
  },
  'broken.yaml': {
    taskBehavior: 'never',
    steps: [
      { id: 'first', tool: 'record', args: { label: 'first' } },
      { id: 'bad', tool: 'fail', args: { message: 'disk full' } },
    ],
  },
  'tasked.yaml': { taskBehavior: 'always', steps: [{ id: 'only', tool: 'record', args: { label: 'tasked' } }] },
  'big.yaml': {
    taskBehavior: 'never',
    args: { text: { type: 'string' } },
    steps: [
      { id: 'make', tool: 'echo', args: { value: '{{ .input.text }}' } },
      { id: 'size', tool: 'echo', args: { value: '{{ len .results.make.value }}' } },
    ],
  },
  'promoted.yaml': { steps: [{ id: 'wait', tool: 'gate', args: { label: 'promoted' } }] },
  'confirm.yaml': {
    taskBehavior: 'never',
    steps: [
      {
        id: 'ok',
        input: { message: 'Go?', requestedSchema: { type: 'object', properties: { yes: { type: 'boolean' } } } },
      },
      { id: 'after', tool: 'echo', args: { value: '{{ .results.ok.content.yes }}' } },
    ],
  },
};

async function setUp(extra: Json = {}, store: Json = { kind: 'sqlite', file: './tasks.sqlite' }) {
  const dir = await tempDir('taskvisor-wf-history-');
  await mkdir(path.join(dir.path, 'workflows'));
  for (const [file, definition] of Object.entries(WORKFLOWS))
    await writeFile(path.join(dir.path, 'workflows', file), stringify(definition));
  await writeTokenFile(path.join(dir.path, 'tokens.yaml'), [
    { principal: 'alice', token: ALICE },
    { principal: 'bob', token: BOB },
  ]);
  const config = path.join(dir.path, 'taskvisor.yaml');
  await writeFile(
    config,
    stringify({
      store,
      tasks: { pollIntervalMs: 20, reapIntervalMs: 0 },
      tools: [TOOLS],
      auth: { kind: 'token-file', file: './tokens.yaml' },
      workflows: { dir: './workflows', watch: false, ...extra },
    }),
  );
  return { dir, config };
}

const as = async (url: string, token: string): Promise<ConnectedClient> =>
  connect({ kind: 'http', url, headers: { authorization: `Bearer ${token}` } });

/** A tool call that must answer a result; its structuredContent. */
async function structured(client: ConnectedClient, tool: string, args: Json = {}): Promise<{ result: Json; content: Json }> {
  const outcome = await taskOps(() => client).call(tool, args, NO_TASKS_CAPABILITIES);
  assert.equal(outcome.kind, 'result', JSON.stringify(outcome));
  const result = (outcome as { result: Json }).result;
  return { result, content: (result.structuredContent ?? {}) as Json };
}

describe('workflow run history (muster core_workflow_execution_list/get)', () => {
  it('records synchronous and task runs with their steps, isError as failed, scoped to the caller', async (t) => {
    const { dir, config } = await setUp();
    t.after(() => dir.remove());
    const server = await serve({ config, http: '127.0.0.1:0', quiet: true });
    t.after(() => server.stop());
    const alice = await as(server.url!, ALICE);
    const bob = await as(server.url!, BOB);
    t.after(() => alice.close());
    t.after(() => bob.close());

    const greet = await structured(alice, 'workflow_greet', { who: 'ann' });
    const greetId = String((greet.result._meta as Json)[EXECUTION_ID_META_KEY]);
    assert.match(greetId, /^[0-9a-f]{32}$/);
    const broken = await structured(alice, 'workflow_broken');
    assert.equal(broken.result.isError, true);
    const brokenId = String((broken.result._meta as Json)[EXECUTION_ID_META_KEY]);
    const ops = taskOps(() => alice);
    const task = await ops.createTask('workflow_tasked');
    await waitFor(async () => ((await ops.task(task.taskId)).status === 'completed' ? true : undefined), { what: 'the task run' });

    // Every run, newest first; the isError run is failed (muster records it completed).
    const listed = (await structured(alice, 'core_workflow_execution_list')).content;
    assert.equal(listed.total, 3);
    const runs = listed.executions as Json[];
    assert.deepEqual(
      runs.map((run) => [run.execution_id, run.workflow_name, run.status, run.task, run.step_count]),
      [
        [task.taskId, 'tasked', 'completed', true, 1],
        [brokenId, 'broken', 'failed', false, 2],
        [greetId, 'greet', 'completed', false, 2],
      ],
    );
    assert.match(String(runs[1]!.error), /Workflow broken failed at step bad: Tool fail returned an error: disk full/);
    const failedOnly = (await structured(alice, 'core_workflow_execution_list', { status: 'failed' })).content;
    assert.deepEqual(
      (failedOnly.executions as Json[]).map((run) => run.execution_id),
      [brokenId],
    );
    const paged = (await structured(alice, 'core_workflow_execution_list', { limit: 1, offset: 1 })).content;
    assert.deepEqual([paged.total, paged.has_more, (paged.executions as Json[])[0]!.execution_id], [3, true, brokenId]);

    // One run with its live step records and input.
    const detail = (await structured(alice, 'core_workflow_execution_get', { execution_id: greetId })).content;
    assert.equal(detail.status, 'completed');
    assert.deepEqual(detail.input, { who: 'ann' });
    assert.deepEqual((detail.result as Json).structuredContent, greet.content);
    const steps = detail.steps as Json[];
    assert.deepEqual(
      steps.map((step) => [step.step_id, step.tool, step.status]),
      [
        ['hello', 'echo', 'completed'],
        ['sum', 'add', 'completed'],
      ],
    );
    assert.deepEqual(steps[0]!.input, { value: 'hello ann' });
    assert.deepEqual(steps[1]!.result, { sum: 3 });
    assert.ok(typeof steps[0]!.duration_ms === 'number' && steps[0]!.started_at && steps[0]!.completed_at);
    const oneStep = (await structured(alice, 'core_workflow_execution_get', { execution_id: brokenId, step_id: 'bad' })).content;
    assert.deepEqual(
      (oneStep.steps as Json[]).map((step) => [step.step_id, step.status, step.error]),
      [['bad', 'failed', 'Tool fail returned an error: disk full']],
    );
    assert.equal(oneStep.result, undefined);
    const noSteps = (await structured(alice, 'core_workflow_execution_get', { execution_id: task.taskId, include_steps: false })).content;
    assert.equal(noSteps.steps, undefined);
    assert.equal(noSteps.workflow_name, 'tasked');

    // Another principal: nothing listed, and alice's run answers exactly like an unknown id.
    assert.deepEqual((await structured(bob, 'core_workflow_execution_list')).content.executions, []);
    const foreign = await structured(bob, 'core_workflow_execution_get', { execution_id: greetId });
    const unknown = await structured(bob, 'core_workflow_execution_get', { execution_id: 'f'.repeat(32) });
    assert.equal(foreign.result.isError, true);
    assert.deepEqual(
      (foreign.result.content as Json[])[0]!.text,
      String((unknown.result.content as Json[])[0]!.text).replace('f'.repeat(32), greetId),
    );
    // A synchronous run is not a task: tasks/get does not know its id (T-14).
    const asTask = await ops.get(greetId);
    assert.equal(asTask.kind, 'error');
    assert.equal((asTask as { error: { code: number } }).error.code, -32602);

    // The admin view reads the same store (every principal's runs).
    const cli = await runNode([CLI, 'workflows', 'runs', '--config', config], { cwd: dir.path });
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, new RegExp(`${brokenId}\tbroken\tfailed\t`));
    assert.match(cli.stdout, new RegExp(`${greetId}\tgreet\tcompleted\t`));
    const shown = await runNode([CLI, 'workflows', 'runs', greetId, '--config', config], { cwd: dir.path });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /status\s+completed/);
    assert.match(shown.stdout, /hello\tcompleted\techo/);
    const missing = await runNode([CLI, 'workflows', 'runs', 'nope', '--config', config], { cwd: dir.path });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no workflow run nope/);
    // tasks list shows tasks only: a synchronous run's record is not one.
    const tasks = await runNode([CLI, 'tasks', 'list', '--config', config, '--limit', '1'], { cwd: dir.path });
    assert.equal(tasks.code, 0, tasks.stderr);
    assert.match(tasks.stdout, new RegExp(`^${task.taskId}\tcompleted\tworkflow_tasked`, 'm'));
    assert.doesNotMatch(tasks.stdout, new RegExp(`${greetId}|${brokenId}`));
  });

  it('an auto call promoted to a task is one run (its task); values over 256 KiB are markers; an MRTR round is not a run, its retry is', async (t) => {
    const { dir, config } = await setUp({}, { kind: 'memory' });
    t.after(() => dir.remove());
    const server = await serve({ config, http: '127.0.0.1:0', quiet: true });
    t.after(() => server.stop());
    const alice = await as(server.url!, ALICE);
    t.after(() => alice.close());
    const ops = taskOps(() => alice);
    // Started synchronously (recorded as such), then promoted: the task record takes over as the run's history.
    const task = await ops.createTask('workflow_promoted');
    await structured(alice, 'open_gate', { label: 'promoted' });
    await waitFor(async () => ((await ops.task(task.taskId)).status === 'completed' ? true : undefined), { what: 'the promoted run' });
    const promoted = (await structured(alice, 'core_workflow_execution_list', { workflow_name: 'promoted' })).content;
    assert.deepEqual(
      (promoted.executions as Json[]).map((run) => [run.execution_id, run.task, run.status]),
      [[task.taskId, true, 'completed']],
    );

    // muster's payload guard: a value over 256 KiB is a marker in the record; the run itself saw it whole.
    const big = await structured(alice, 'workflow_big', { text: 'x'.repeat(300_000) });
    assert.deepEqual((big.content.results as Json).size, { value: 300_000 });
    const bigRun = (
      await structured(alice, 'core_workflow_execution_get', {
        execution_id: String((big.result._meta as Json)[EXECUTION_ID_META_KEY]),
      })
    ).content;
    const [make, size] = bigRun.steps as Json[];
    assert.equal(make!.truncated, true);
    assert.deepEqual(make!.result, { truncated: true, bytes: 300_012, limit: 262_144 });
    assert.deepEqual(size!.result, { value: 300_000 });
    assert.equal((bigRun.result as Json).truncated, true);

    const first = await ops.call('workflow_confirm', {}, NO_TASKS_CAPABILITIES);
    assert.equal(first.kind, 'result');
    const asked = (first as { result: Json }).result;
    assert.equal(asked.resultType, 'input_required');
    const retry = await ops.send(
      'tools/call',
      {
        name: 'workflow_confirm',
        arguments: {},
        inputResponses: { ok: { action: 'accept', content: { yes: true } } },
        requestState: asked.requestState,
      },
      NO_TASKS_CAPABILITIES,
    );
    assert.equal(retry.kind, 'result', JSON.stringify(retry));
    const retryId = String(((retry as { result: Json }).result._meta as Json)[EXECUTION_ID_META_KEY]);
    const confirmed = (await structured(alice, 'core_workflow_execution_list', { workflow_name: 'confirm' })).content;
    assert.deepEqual(
      (confirmed.executions as Json[]).map((run) => [run.execution_id, run.status, run.step_count]),
      [[retryId, 'completed', 2]],
    );
  });

  it('keeps at most historyMaxRuns finished runs (PostgreSQL store) and hides runs past historyRetentionMs', async (t) => {
    const pg = await freshSchema('tv_history');
    t.after(() => pg.drop());
    const { dir, config } = await setUp({ historyMaxRuns: 2 }, { kind: 'postgres', url: TEST_PG_URL, schema: pg.schema });
    t.after(() => dir.remove());
    const server = await serve({ config, http: '127.0.0.1:0', quiet: true });
    t.after(() => server.stop());
    const alice = await as(server.url!, ALICE);
    t.after(() => alice.close());
    const ids: string[] = [];
    for (const who of ['a', 'b', 'c']) {
      ids.push(String(((await structured(alice, 'workflow_greet', { who })).result._meta as Json)[EXECUTION_ID_META_KEY]));
    }
    // The oldest run went (pruned as the third one ended).
    const kept = await waitFor(
      async () => {
        const listed = (await structured(alice, 'core_workflow_execution_list')).content;
        return listed.total === 2 ? listed : undefined;
      },
      { what: 'the history pruned to 2' },
    );
    assert.deepEqual(
      (kept.executions as Json[]).map((run) => run.execution_id),
      [ids[2], ids[1]],
    );
    await server.stop();

    // Retention: a short one makes the finished runs disappear once it has passed.
    const short = await setUp({ historyRetentionMs: 300 });
    t.after(() => short.dir.remove());
    const second = await serve({ config: short.config, http: '127.0.0.1:0', quiet: true });
    t.after(() => second.stop());
    const bob = await as(second.url!, BOB);
    t.after(() => bob.close());
    const run = String(((await structured(bob, 'workflow_greet', { who: 'z' })).result._meta as Json)[EXECUTION_ID_META_KEY]);
    assert.equal((await structured(bob, 'core_workflow_execution_get', { execution_id: run })).content.status, 'completed');
    await waitFor(async () => ((await structured(bob, 'core_workflow_execution_list')).content.total === 0 ? true : undefined), {
      what: 'the run to pass its retention',
    });
    assert.equal((await structured(bob, 'core_workflow_execution_get', { execution_id: run })).result.isError, true);
    // And the sweep deletes it from the store (the task reaper is off here: reapIntervalMs 0).
    const file = new SqliteTaskStore({ file: path.join(short.dir.path, 'tasks.sqlite'), lock: false });
    await file.open();
    try {
      await waitFor(async () => ((await file.get(run)) === undefined ? true : undefined), { what: 'the sweep to delete the run' });
    } finally {
      await file.close();
    }
  });

  it('kill -9 during a synchronous run: after the restart the run is recorded failed, with the steps it had', async (t) => {
    const { dir, config } = await setUp();
    t.after(() => dir.remove());
    const marker = path.join(dir.path, 'in-flight');
    await writeFile(
      path.join(dir.path, 'workflows', 'hang.yaml'),
      stringify({
        taskBehavior: 'never',
        args: { marker: { type: 'string' }, release: { type: 'string' } },
        steps: [
          { id: 'before', tool: 'record', args: { label: 'before' } },
          { id: 'wait', tool: 'wait_for_file', args: { marker: '{{ .input.marker }}', release: '{{ .input.release }}' } },
        ],
      }),
    );
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/mcp`;
    const start = async (): Promise<Child> => {
      const child = spawnNode([CLI, 'serve', '--config', config, '--http', `127.0.0.1:${port}`], { cwd: dir.path });
      t.after(() => child.kill());
      await child.waitForOutput(/serving MCP over Streamable HTTP/);
      return child;
    };
    const first = await start();
    let alice = await as(url, ALICE);
    // The call never answers: the server dies under it.
    void taskOps(() => alice)
      .call('workflow_hang', { marker, release: path.join(dir.path, 'never') }, NO_TASKS_CAPABILITIES)
      .catch(() => {});
    await waitFor(async () => (await readFile(marker, 'utf8').catch(() => '')) || undefined, { timeoutMs: 20_000, what: 'the step' });
    // While it runs, the run is in the history already (written live).
    const watcher = await as(url, ALICE);
    const during = (await structured(watcher, 'core_workflow_execution_list', { workflow_name: 'hang' })).content;
    assert.deepEqual(
      (during.executions as Json[]).map((run) => [run.status, run.step_count]),
      [['inprogress', 2]],
    );
    // Killed with the call still open (closing the client first would cancel the run).
    await first.kill('SIGKILL');
    await alice.close().catch(() => {});
    await watcher.close().catch(() => {});

    await start();
    alice = await as(url, ALICE);
    t.after(() => alice.close());
    const listed = (await structured(alice, 'core_workflow_execution_list', { workflow_name: 'hang' })).content;
    const run = (listed.executions as Json[])[0]!;
    assert.equal(run.status, 'failed');
    assert.match(String(run.error), /The server stopped during this synchronous run/);
    const detail = (await structured(alice, 'core_workflow_execution_get', { execution_id: String(run.execution_id) })).content;
    assert.deepEqual(
      (detail.steps as Json[]).map((step) => [step.step_id, step.status]),
      [
        ['before', 'completed'],
        ['wait', 'running'],
      ],
    );
  });
});
