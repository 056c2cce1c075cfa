/**
 * `taskvisor call` and `taskvisor tasks get|cancel|watch` as a
 * user runs them: real processes against a real taskvisor serving the demo
 * tools over Streamable HTTP, and one spawned over stdio. Live status lines
 * (not a TTY here: a line per change), input asked on stdin or given with
 * --input, Ctrl-C (SIGINT) cancelling the task, --json, and the exit codes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TasksClient } from '../../src/client/index.js';
import { createRuntime, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import demoTools from '../../examples/demo/tools.js';
import { CLI, REPO_ROOT, runNode, spawnNode, TSX_IMPORT } from '../support/processes.js';

let runtime: TaskvisorRuntime;
let url = '';

before(async () => {
  runtime = createRuntime({ store: new MemoryTaskStore() });
  runtime.use(...demoTools);
  await runtime.start();
  url = (await listenHttp(runtime, { port: 0 })).url;
});
after(async () => {
  await runtime.close();
});

/** Runs the CLI with `stdin` written (and closed). */
async function cli(args: string[], stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnNode([CLI, ...args]);
  child.process.stdin!.end(stdin);
  const { code } = await child.exited;
  return { code, stdout: child.stdout, stderr: child.stderr };
}

describe('taskvisor call', { concurrency: 2 }, () => {
  it('a task: its status on stderr as it changes, the result on stdout, exit 0', async () => {
    const run = await cli(['call', url, 'sleep', '--arg', 'ms=500', '--arg', 'message=rested']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, 'rested\n');
    assert.match(run.stderr, /^task [0-9a-f]{32}\n/);
    assert.match(run.stderr, /\[[0-9a-f]{8}\] working: Sleeping for 500 ms\n/);
    assert.match(run.stderr, /\[[0-9a-f]{8}\] completed/);
  });

  it('input requests: asked field by field on stdin, or answered by --input; --no-input declines', async () => {
    const asked = await cli(['call', url, 'hello_world'], 'Ada\n');
    assert.equal(asked.code, 0, asked.stderr);
    assert.equal(asked.stdout, 'Hello, Ada!\n');
    assert.match(asked.stderr, /\? Please enter your name\./);
    assert.match(asked.stderr, / {2}name \(string, required\): /);
    const given = await cli(['call', url, 'hello_world', '--input', 'name={"name":"Bo"}']);
    assert.equal(given.stdout, 'Hello, Bo!\n', given.stderr);
    const declined = await cli(['call', url, 'hello_world', '--no-input']);
    assert.equal(declined.code, 1, 'the demo answers a decline with isError');
    assert.equal(declined.stdout, 'No name given (decline).\n');
  });

  it('Ctrl-C cancels the task on the server: exit 130; tasks get then shows it cancelled', async () => {
    const child = spawnNode([CLI, 'call', url, 'sleep', '--arg', 'ms=600000']);
    const [, taskId] = await child.waitForOutput(/^task ([0-9a-f]{32})\n/m, { stream: 'stderr' });
    await child.waitForOutput(/working: Sleeping/, { stream: 'stderr' });
    child.process.kill('SIGINT');
    const { code } = await child.exited;
    assert.equal(code, 130, child.stderr);
    assert.match(child.stderr, /\^C cancelling… \(again to quit at once\)\n/);
    assert.match(child.stderr, /taskvisor: cancelled\n$/);
    const shown = await cli(['tasks', 'get', taskId!, '--url', url, '--json']);
    assert.equal(shown.code, 0, shown.stderr);
    assert.equal((JSON.parse(shown.stdout) as { status: string }).status, 'cancelled');
  });

  it('outcomes and exit codes: failed 4, isError 1 (--json prints the result), unreachable 3, usage 2', async () => {
    const [failed, toolError, unreachable, usage] = await Promise.all([
      cli(['call', url, 'fail', '--arg', 'message=boom', '--arg', 'code=-32000', '--arg', 'ms=200']),
      cli(['call', url, 'tool_error', '--args', '{"message":"bad","ms":200}', '--json', '--quiet']),
      cli(['call', 'http://127.0.0.1:1/mcp', 'echo']),
      cli(['call', url]),
    ]);
    assert.equal(failed.code, 4, failed.stderr);
    assert.match(failed.stderr, /taskvisor: boom \(-32000\)\n$/);
    assert.equal(toolError.code, 1, toolError.stderr);
    assert.equal(toolError.stderr, '');
    const result = JSON.parse(toolError.stdout) as { isError: boolean; content: Array<{ text: string }> };
    assert.deepEqual([result.isError, result.content[0]!.text], [true, 'bad']);
    assert.equal(unreachable.code, 3);
    assert.match(unreachable.stderr, /^taskvisor: cannot connect to http:\/\/127\.0\.0\.1:1\/mcp/);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /give the server URL and the TOOL name/);
  });

  it('--stdio CMD spawns the server and calls it', async () => {
    const command = `${process.execPath} --import ${TSX_IMPORT} ${CLI} serve --stdio --quiet --config ${REPO_ROOT}test/client/fixtures/stdio.yaml`;
    const run = await cli(['call', '--stdio', command, 'echo', '--arg', 'text=over stdio']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, 'over stdio\n');
  });
});

describe('taskvisor tasks get|cancel|watch', { concurrency: 2 }, () => {
  it('watch follows a task started elsewhere to its result; cancel ends one; get of an unknown task exits 4', async () => {
    const client = await TasksClient.connect({ url });
    try {
      let first = '';
      const done = client.callTool('sleep', { ms: 1500, message: 'from elsewhere' }, { onTask: (id) => (first = id) });
      while (!first) await new Promise((resolve) => setTimeout(resolve, 10));
      const watched = await cli(['tasks', 'watch', first, '--url', url]);
      assert.equal(watched.code, 0, watched.stderr);
      assert.equal(watched.stdout, 'from elsewhere\n');
      await done;

      let second = '';
      const long = client.callTool('sleep', { ms: 600_000 }, { onTask: (id) => (second = id) }).catch((error: unknown) => error);
      while (!second) await new Promise((resolve) => setTimeout(resolve, 10));
      const cancelled = await cli(['tasks', 'cancel', second, '--url', url]);
      assert.equal(cancelled.code, 0, cancelled.stderr);
      assert.match(cancelled.stdout, /^task {6}[0-9a-f]{32}\nstatus {4}cancelled/);
      assert.match(String(await long), /cancel/i);

      const unknown = await runNode([CLI, 'tasks', 'get', '0'.repeat(32), '--url', url]);
      assert.equal(unknown.code, 4);
      assert.match(unknown.stderr, /\(-32602\)/);
    } finally {
      await client.close();
    }
  });
});
