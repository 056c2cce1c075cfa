/**
 * `taskvisor tools` as a new user runs it: the real command against the demo
 * tools served over Streamable HTTP by an in-process runtime, and against
 * `taskvisor serve --stdio --demo` spawned by the command itself. Each tool
 * is listed with its arguments (type, required, allowed values, description);
 * --json prints tools/list; the command is in the help.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import demoTools from '../../examples/demo/tools.js';
import { CLI, freePort, runNode } from '../support/processes.js';

let runtime: TaskvisorRuntime;
let url = '';

before(async () => {
  runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger });
  runtime.use(...demoTools);
  runtime.tool(
    'release',
    { description: 'Publishes a version.', inputSchema: z.object({ channel: z.enum(['stable', 'beta']).describe('Where to publish') }) },
    async ({ channel }) => channel,
  );
  await runtime.start();
  url = (await listenHttp(runtime, { port: 0 })).url;
});
after(async () => {
  await runtime.close();
});

/** The demo's `sleep`, as the listing shows it (two arguments, aligned). */
const SLEEP = [
  'sleep — Sleeps for `ms` milliseconds, then answers `message`. Honours cancellation.',
  '  ms       integer  required  How long to sleep, in milliseconds',
  '  message  string   optional  What to answer when done',
].join('\n');

describe('taskvisor tools', { concurrency: 2 }, () => {
  it('over HTTP: every tool with its arguments: name, type, required, allowed values, description', async () => {
    const run = await runNode([CLI, 'tools', url]);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(run.stdout.includes(`${SLEEP}\n`), run.stdout);
    assert.match(run.stdout, /^hello_world — Asks for your name.*\n {2}\(no arguments\)\n/m);
    assert.match(run.stdout, /^fail — .*\n {2}code {5}integer {2}optional\n {2}message {2}string {3}required\n/m);
    assert.match(
      run.stdout,
      /^release — Publishes a version\.\n {2}channel {2}string {2}required {2}one of "stable", "beta"; Where to publish\n/m,
    );
  });

  it('over stdio (the server spawned with --stdio), and --json prints tools/list', async () => {
    const text = await runNode([CLI, 'tools', '--stdio', `${process.execPath} ${CLI} serve --stdio --demo --store memory --quiet`]);
    assert.equal(text.code, 0, text.stderr);
    assert.ok(text.stdout.includes(`${SLEEP}\n`), text.stdout);
    const json = await runNode([
      CLI,
      'tools',
      '--json',
      '--stdio',
      `${process.execPath} ${CLI} serve --stdio --demo --store memory --quiet`,
    ]);
    assert.equal(json.code, 0, json.stderr);
    const tools = JSON.parse(json.stdout) as Array<{ name: string; inputSchema: { required?: string[] } }>;
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ['echo', 'fail', 'hello_world', 'sleep', 'tool_error']);
    assert.deepEqual(tools.find((tool) => tool.name === 'tool_error')?.inputSchema.required, ['message']);
  });

  it('--help, the command list, a missing URL (exit 2) and an unreachable server (exit 3)', async () => {
    const closedPort = await freePort();
    const [help, usage, missing, unreachable] = await Promise.all([
      runNode([CLI, 'tools', '--help']),
      runNode([CLI, 'help']),
      runNode([CLI, 'tools']),
      runNode([CLI, 'tools', `http://127.0.0.1:${closedPort}/mcp`]),
    ]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: taskvisor tools URL/);
    assert.match(help.stdout, /--json/);
    assert.match(usage.stdout, /^ {2}tools {17}List a server's tools/m);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /give the server URL \(or --stdio CMD\)/);
    assert.equal(unreachable.code, 3);
    assert.match(
      unreachable.stderr,
      new RegExp(
        `^taskvisor: cannot connect to http://127\\.0\\.0\\.1:${closedPort}/mcp: connection refused at 127\\.0\\.0\\.1:${closedPort} \\(is the server running\\?\\)\n {2}detail: `,
      ),
    );
  });
});
