/**
 * docs/getting-started.md "Call it from the terminal", run as written, in
 * the order a new user follows it: the demo is running (`npm start`, here
 * `serve --demo` in a folder of its own, on a free port) and every
 * `npx taskvisor …` line of that section's code blocks is run against it from
 * that folder, with `npx taskvisor` as this checkout's command, the port
 * substituted and the example task id `3f0c` replaced by a real one. Lines
 * with placeholders (`URL`, `…`) are left out. The stdio example must work
 * while the demo holds its store.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { splitCommand } from '../../src/cli/remote.js';
import { CLI, REPO_ROOT, spawnNode, tempDir, type Child } from '../support/processes.js';

let dir: Awaited<ReturnType<typeof tempDir>>;
let demo: Child;
let base = '';
let lines: string[] = [];

before(async () => {
  const doc = await readFile(join(REPO_ROOT, 'docs', 'getting-started.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Call it from the terminal'), doc.indexOf('## Call it from code'));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  lines = blocks
    .flatMap((block) => block.split('\n'))
    .filter((line) => line.startsWith('npx taskvisor '))
    .map((line) => line.replace(/\s+#.*$/, ''));
  dir = await tempDir();
  demo = spawnNode([CLI, 'serve', '--demo'], { cwd: dir.path, env: { ...process.env, PORT: '0', HOST: '' } });
  const [, url] = await demo.waitForOutput(/serving MCP over Streamable HTTP at (http:\/\/127\.0\.0\.1:\d+)\/mcp/, {
    stream: 'stderr',
    timeoutMs: 30_000,
  });
  base = url!;
});
after(async () => {
  await demo?.kill('SIGTERM');
  await dir?.remove();
});

/** Runs one documented line from the demo's folder; `taskId` stands in for the example id 3f0c. */
async function run(line: string, stdin = '', taskId = '') {
  const command = line
    .replaceAll('npx taskvisor', `${process.execPath} ${CLI}`)
    .replaceAll('http://127.0.0.1:3000', base)
    .replaceAll('3f0c', taskId);
  const [, ...args] = splitCommand(command);
  const child = spawnNode(args, { cwd: dir.path });
  child.process.stdin!.end(stdin);
  const { code } = await child.exited;
  return { code, stdout: child.stdout, stderr: child.stderr };
}

/** The documented line that starts with `start` (after `npx taskvisor `). */
function documented(start: string): string {
  const line = lines.find((candidate) => candidate.startsWith(`npx taskvisor ${start}`));
  assert.ok(line, `getting-started.md has a line \`npx taskvisor ${start}…\``);
  return line;
}

describe('docs/getting-started.md: the terminal commands, as written, beside the running demo', () => {
  it('tools, call (a task, input asked, a tool error, a spawned stdio server), then tasks list and show', async () => {
    const runnable = lines.filter((line) => !/\bURL\b|…/.test(line));
    assert.ok(runnable.length >= 7, runnable.join('\n'));

    const tools = await run(documented('tools '));
    assert.equal(tools.code, 0, tools.stderr);
    assert.match(tools.stdout, /^tool_error — .*\n {2}message {2}string {3}required\n/m);

    const sleep = await run(documented('call http://127.0.0.1:3000/mcp sleep'));
    assert.equal(sleep.code, 0, sleep.stderr);
    assert.equal(sleep.stdout, 'rested\n');
    const [, taskId] = /^task ([0-9a-f]{32})\n/.exec(sleep.stderr) ?? [];
    assert.ok(taskId, sleep.stderr);
    assert.ok(sleep.stderr.includes(`[${taskId}] working: Sleeping for 5000 ms\n`), sleep.stderr);

    const hello = await run(documented('call http://127.0.0.1:3000/mcp hello_world'), 'Ada\n');
    assert.equal(hello.code, 0, hello.stderr);
    assert.equal(hello.stdout, 'Hello, Ada!\n');

    const toolError = await run(documented('call http://127.0.0.1:3000/mcp tool_error'));
    assert.equal(toolError.code, 1, toolError.stderr);
    assert.equal(toolError.stdout, 'oops\n');

    const stdio = await run(documented('call --stdio'));
    assert.equal(stdio.code, 0, stdio.stderr);
    assert.equal(stdio.stdout, 'hi\n');

    const listed = await run(documented('tasks list'));
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(listed.stdout.includes(`${taskId}\tcompleted\tsleep`), listed.stdout);

    const shown = await run(documented('tasks show'), '', taskId.slice(0, 12));
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`^task {6}${taskId}\ntool {6}sleep\n`));
  });
});
