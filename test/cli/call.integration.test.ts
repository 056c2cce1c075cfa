/**
 * `taskvisor call` and `taskvisor tasks get|cancel|watch` as a
 * user runs them: real processes against a real taskvisor serving the demo
 * tools over Streamable HTTP, and one spawned over stdio. Live status lines
 * (not a TTY here: a line per change), input asked on stdin or given with
 * --input, Ctrl-C (SIGINT) cancelling the task, --json, and the exit codes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
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
  // A tool whose arguments a --arg value must be read by: a string that looks like a number, an enum, a boolean.
  runtime.tool(
    'release',
    {
      inputSchema: z.object({
        version: z.string(),
        channel: z.enum(['stable', 'beta']),
        dry: z.boolean().optional(),
        attempts: z.number().int().optional(),
      }),
    },
    async (args) => JSON.stringify(args),
  );
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
    const [, taskId] = /^task ([0-9a-f]{32})\n/.exec(run.stderr) ?? [];
    assert.ok(taskId, run.stderr);
    // The whole id on every status line: the id a user copies from there is one `tasks get` takes.
    assert.ok(run.stderr.includes(`[${taskId}] working: Sleeping for 500 ms\n`), run.stderr);
    assert.ok(run.stderr.includes(`[${taskId}] completed`), run.stderr);
    const got = await cli(['tasks', 'get', taskId, '--url', url]);
    assert.equal(got.code, 0, got.stderr);
    assert.match(got.stdout, /^task {6}[0-9a-f]{32}\nstatus {4}completed/);
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

  it('--arg values are read by the tool schema: a string stays text, numbers and booleans parse, an enum names its values', async () => {
    const [text, parsed, notNumber, outside] = await Promise.all([
      cli(['call', url, 'echo', '--arg', 'text=1.2']),
      cli(['call', url, 'release', '--arg', 'version=1.10', '--arg', 'channel=beta', '--arg', 'dry=true', '--arg', 'attempts=3']),
      cli(['call', url, 'sleep', '--arg', 'ms=soon']),
      cli(['call', url, 'release', '--arg', 'version=2', '--arg', 'channel=nightly']),
    ]);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stdout, '1.2\n');
    assert.equal(parsed.code, 0, parsed.stderr);
    assert.equal(parsed.stdout, '{"version":"1.10","channel":"beta","dry":true,"attempts":3}\n');
    assert.equal(notNumber.code, 2);
    assert.match(notNumber.stderr, /^taskvisor: --arg ms=soon: ms takes an integer\n/);
    assert.equal(outside.code, 2);
    assert.match(outside.stderr, /^taskvisor: --arg channel=nightly: channel must be one of "stable", "beta"\n/);
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
      assert.match(unknown.stderr, /\(-32602\); a server knows a task by its whole id, as `taskvisor call` prints it\n$/);
    } finally {
      await client.close();
    }
  });
});
