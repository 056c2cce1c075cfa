/**
 * What `taskvisor call` says when it cannot connect, as a user meets it:
 * what happened first (connection refused at host:port, HTTP 404 at the
 * path, not an MCP endpoint, the stdio server's own stderr when it stopped),
 * then the client library's message as the detail. The stdio case is the
 * one getting started walks into: a second demo server spawned next to a
 * running one finds the store locked; `--store memory` runs beside it.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createRuntime, silentLogger, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import demoTools from '../../examples/demo/tools.js';
import { CLI, freePort, runNode, spawnNode, tempDir, type Child } from '../support/processes.js';

const STARTUP_TIMEOUT_MS = 30_000;
let runtime: TaskvisorRuntime;
let url = '';
let notMcp: http.Server;
let notMcpUrl = '';
let dir: Awaited<ReturnType<typeof tempDir>>;
let holder: Child;

before(async () => {
  runtime = createRuntime({ store: new MemoryTaskStore(), logger: silentLogger });
  runtime.use(...demoTools);
  await runtime.start();
  url = (await listenHttp(runtime, { port: 0 })).url;
  notMcp = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Welcome</h1>'));
  await new Promise<void>((resolve) => notMcp.listen(0, '127.0.0.1', resolve));
  notMcpUrl = `http://127.0.0.1:${(notMcp.address() as { port: number }).port}/`;
  // The demo as `npm start` runs it, in a folder of its own: it holds that folder's ./.taskvisor.
  dir = await tempDir();
  holder = spawnNode([CLI, 'serve', '--demo', '--http', '127.0.0.1:0', '--ui'], { cwd: dir.path });
  await holder.waitForOutput(/serving MCP over Streamable HTTP/, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
});
after(async () => {
  await holder?.kill('SIGTERM');
  await runtime.close();
  notMcp?.close();
  await dir?.remove();
});

describe('taskvisor call: connection errors say what happened, then the detail', { concurrency: 2 }, () => {
  it('connection refused at host:port', async () => {
    const port = await freePort();
    const run = await runNode([CLI, 'call', `http://127.0.0.1:${port}/mcp`, 'echo', '--arg', 'text=hi']);
    assert.equal(run.code, 3);
    assert.match(
      run.stderr,
      new RegExp(
        `^taskvisor: cannot connect to http://127\\.0\\.0\\.1:${port}/mcp: connection refused at 127\\.0\\.0\\.1:${port} \\(is the server running\\?\\)\n {2}detail: .+\n$`,
      ),
    );
  });

  it('HTTP 404 at a path where nothing is served', async () => {
    const run = await runNode([CLI, 'call', new URL('/nowhere', url).href, 'echo']);
    assert.equal(run.code, 3);
    assert.match(run.stderr, /: HTTP 404 at \/nowhere: nothing is served at this path \(taskvisor serves MCP at \/mcp\)\n {2}detail: /);
  });

  it('not an MCP endpoint: a web page', async () => {
    const run = await runNode([CLI, 'call', notMcpUrl, 'echo']);
    assert.equal(run.code, 3);
    assert.match(run.stderr, /: not an MCP endpoint: \/ answered HTTP 200 \(text\/html\), not JSON-RPC\n {2}detail: /);
  });

  it('a stdio server that stops at start: its stderr is shown (here: the store is locked by the running demo)', async () => {
    const run = await runNode([CLI, 'call', '--stdio', `${process.execPath} ${CLI} serve --stdio --demo`, 'echo', '--arg', 'text=hi'], {
      cwd: dir.path,
    });
    assert.equal(run.code, 3, run.stderr);
    assert.match(
      run.stderr,
      /^taskvisor: cannot connect: the stdio server `.+ serve --stdio --demo` exited before answering; its stderr:\n/,
    );
    assert.match(
      run.stderr,
      /\n {2}\| taskvisor: store lowdb .+\.taskvisor is in use by process \d+ \(another taskvisor serve\?\): one server per store; stop that one, or give this one a store of its own \(--store memory, or --store DIR\)\n {2}detail: /,
    );
  });

  it('--store memory runs beside it; --verbose shows the spawned server stderr as it comes', async () => {
    const run = await runNode(
      [CLI, 'call', '--verbose', '--stdio', `${process.execPath} ${CLI} serve --stdio --demo --store memory`, 'echo', '--arg', 'text=hi'],
      { cwd: dir.path },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, 'hi\n');
    assert.match(run.stderr, /taskvisor: 5 tools \(.*\); store: memory\n/);
    assert.match(run.stderr, /taskvisor: serving MCP over stdio\n/);
  });

  it('no such command', async () => {
    const run = await runNode([CLI, 'call', '--stdio', 'taskvisor-no-such-command x', 'echo']);
    assert.equal(run.code, 3);
    assert.match(run.stderr, /^taskvisor: cannot connect: no such command "taskvisor-no-such-command"/);
  });
});

describe('serve --ui', () => {
  it('prints the dashboard address on its start-up lines, and the dashboard is there', async () => {
    const [, dashboard] = await holder.waitForOutput(
      /serving the tasks dashboard at (http:\/\/127\.0\.0\.1:\d+\/ui\/) \(loopback clients\)\n/,
      {
        stream: 'stderr',
      },
    );
    const response = await fetch(dashboard!);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
  });
});
