/**
 * The `taskvisor` command line as a user runs it: `node bin/taskvisor.js …`
 * in a fresh working directory. Serving (`--http`, `PORT`, `--demo`), and
 * every way a start can be refused: exit code 1 and one message naming the
 * file, `line:col`, the path and the field — and nothing started on the way
 * (no store opened, nothing listening).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect, envelope } from '../support/extTasksClient.js';
import { CLI, DEMO_TOOLS, freePort, rawRequest, resultOf, runNode, spawnNode, tempDir } from '../support/processes.js';

/** Generous: a start takes ~1.5 s, but much longer on a loaded machine. */
const STARTUP_TIMEOUT_MS = 45_000;
const SERVING = /serving MCP over Streamable HTTP at (\S+)\n/;
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

let dir: Awaited<ReturnType<typeof tempDir>>;
before(async () => {
  dir = await tempDir('taskvisor-cli-');
});
after(async () => {
  await dir?.remove();
});

/** Writes `text` as `<dir>/<name>` and returns its absolute path. */
async function file(name: string, text: string | Buffer): Promise<string> {
  const path = join(dir.path, name);
  await writeFile(path, text);
  return path;
}

/** The tool names a served URL lists to a 2026-07-28 client. */
async function listToolNames(url: string): Promise<string[]> {
  const client = await connect({ kind: 'http', url });
  try {
    const result = resultOf(await rawRequest(client, { method: 'tools/list', params: { _meta: envelope() } }));
    return (result.tools as Array<{ name: string }>).map((tool) => tool.name).sort();
  } finally {
    await client.close();
  }
}

describe('serving', { concurrency: 2 }, () => {
  it('serve --http 127.0.0.1:0 --config FILE serves the configured tools; SIGTERM stops it with exit 0', async () => {
    const config = await file('serve.yaml', `store:\n  kind: memory\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\n`);
    const child = spawnNode([CLI, 'serve', '--http', '127.0.0.1:0', '--config', config], { cwd: dir.path });
    try {
      const [, url] = await child.waitForOutput(SERVING, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      assert.match(url!, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      assert.notEqual(new URL(url!).port, '0');
      assert.match(child.stderr, /5 tools \(hello_world, sleep, echo, fail, tool_error\); store: memory/);
      assert.deepEqual(await listToolNames(url!), ['echo', 'fail', 'hello_world', 'sleep', 'tool_error']);
      assert.equal(child.stdout, '', 'nothing but protocol on stdout (and HTTP has none)');
    } catch (error) {
      await child.kill('SIGKILL');
      throw error;
    }
    const { code, signal } = await child.kill('SIGTERM');
    assert.equal(signal, null, `killed by ${signal}: ${child.stderr}`);
    assert.equal(code, 0, child.stderr);
    assert.match(child.stderr, /SIGTERM: stopping/);
  });

  it('PORT=<n> serve --demo listens on that port (PORT wins over the demo config’s 3000)', async () => {
    const port = await freePort();
    const cwd = join(dir.path, 'demo-cwd');
    await mkdir(cwd);
    const child = spawnNode([CLI, 'serve', '--demo'], { cwd, env: { ...process.env, PORT: String(port), HOST: '' } });
    try {
      const [, url] = await child.waitForOutput(SERVING, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      assert.equal(url, `http://127.0.0.1:${port}/mcp`);
      assert.deepEqual(await listToolNames(url), ['echo', 'fail', 'hello_world', 'sleep', 'tool_error']);
      // The demo's default store is lowdb in the working directory.
      assert.ok(existsSync(join(cwd, '.taskvisor')), 'lowdb store created in the working directory');
    } catch (error) {
      await child.kill('SIGKILL');
      throw error;
    }
    const { code } = await child.kill('SIGTERM');
    assert.equal(code, 0, child.stderr);
  });
});

describe('refused starts: exit 1, a message naming file, line:col, path and field', { concurrency: 2 }, () => {
  /** Runs `serve --config <config> --http 127.0.0.1:0` in the temp dir and checks exit 1 and the one stderr message. */
  async function refused(config: string, pattern: RegExp, extraArgs: string[] = []) {
    const run = await runNode([CLI, 'serve', '--config', config, '--http', '127.0.0.1:0', ...extraArgs], {
      cwd: dir.path,
      timeoutMs: STARTUP_TIMEOUT_MS,
    });
    assert.equal(run.signal, null, `the process did not exit by itself (it served?): ${run.stderr}`);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, pattern);
    assert.doesNotMatch(run.stderr, /serving MCP/, 'nothing was served');
    assert.doesNotMatch(run.stderr, /\n\s+at /, 'a message, not a stack trace');
    assert.equal(run.stdout, '');
    return run;
  }

  it('wrong type (tasks.ttlMs "abc"), unknown key (http.bogus), bad store kind: each reported with its position', async () => {
    // One file with three mistakes: every one is reported (one line each), each with its own line:col.
    const config = await file(
      'schema-errors.yaml',
      'server:\n  name: demo\ntasks:\n  ttlMs: "abc"\nhttp:\n  port: 0\n  bogus: 1\nstore:\n  kind: nosuch\n',
    );
    const run = await refused(config, new RegExp(`^taskvisor: ${escape(config)}:`));
    const lines = run.stderr
      .replace(/^taskvisor: /, '')
      .trimEnd()
      .split('\n');
    assert.deepEqual(
      lines.sort(),
      [
        `${config}:4:10: tasks.ttlMs: Invalid input: expected number, received string`,
        `${config}:7:3: http.bogus: unknown field (allowed here: host, port, path, allowedHosts, allowedOrigins, maxBodyBytes)`,
        `${config}:9:9: store.kind: Invalid discriminator value. Expected 'memory' | 'lowdb' | 'sqlite' | 'postgres'`,
      ].sort(),
    );
  });

  it('invalid YAML', async () => {
    const config = await file('invalid.yaml', 'server:\n  name: a: b\n');
    await refused(config, new RegExp(`${escape(config)}:2:9: invalid YAML: Nested mappings are not allowed`));
  });

  it('a module without tool exports', async () => {
    await file('no-tools.mjs', 'export const answer = 42;\n');
    const config = await file('no-exports.yaml', 'store:\n  kind: memory\ntools:\n  - module: ./no-tools.mjs\n');
    await refused(
      config,
      new RegExp(`${escape(config)}:4:13: tools\\[0\\]\\.module: \\./no-tools\\.mjs has no export "default" or "tools"`),
    );
  });

  it('a file over 1 MiB', async () => {
    const big = Buffer.alloc(1024 * 1024 + 1, '#');
    const config = await file('big.yaml', big);
    await refused(config, new RegExp(`${escape(config)}: the config file is 1048577 bytes; the limit is 1048576`));
  });

  it('a missing config file', async () => {
    const config = join(dir.path, 'nope.yaml');
    await refused(config, new RegExp(`${escape(config)}: cannot read the config file: ENOENT`));
  });

  it('a tools module that does not exist — and no partial start: nothing is opened, nothing listens', async () => {
    const port = await freePort();
    const storeDir = join(dir.path, 'partial-store');
    const config = await file(
      'partial.yaml',
      `store:\n  kind: lowdb\n  dir: ./partial-store\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\n  - ./missing-tools.ts\n`,
    );
    const child = spawnNode([CLI, 'serve', '--config', config, '--http', `127.0.0.1:${port}`], { cwd: dir.path });
    child.process.stdin!.end();
    // While it runs, nothing may accept connections on the port.
    let connected = false;
    const probe = (async () => {
      while (child.process.exitCode === null && child.process.signalCode === null) {
        connected ||= await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'GET' }).then(
          () => true,
          () => false,
        );
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    const { code } = await child.exited;
    await probe;
    assert.equal(code, 1, child.stderr);
    assert.match(
      child.stderr,
      new RegExp(
        `^taskvisor: ${escape(config)}:6:5: tools\\[1\\]: cannot load \\./missing-tools\\.ts \\(${escape(join(dir.path, 'missing-tools.ts'))}\\): Cannot find module`,
      ),
    );
    assert.doesNotMatch(child.stderr, /\n\s+at /, 'a message, not a stack trace');
    assert.equal(connected, false, 'something listened on the port');
    assert.equal(existsSync(storeDir), false, 'the store was opened before the config was known good');
    assert.doesNotMatch(child.stderr, /serving MCP|tools \(/);
  });
});

describe('arguments', { concurrency: 2 }, () => {
  it('--http nonsense: exit 1 with a clear message, before anything starts', async () => {
    const cwd = join(dir.path, 'http-nonsense');
    await mkdir(cwd);
    const run = await runNode([CLI, 'serve', '--http', 'nonsense'], { cwd });
    assert.equal(run.code, 1, run.stderr);
    assert.equal(run.stderr, 'taskvisor: --http nonsense: expected host:port (e.g. 127.0.0.1:3000), :port or port\n');
    // No config, so the default store would be ./.taskvisor: a refused start must not have opened it.
    assert.equal(existsSync(join(cwd, '.taskvisor')), false, 'partial start: the default store was created');
  });

  it('a PORT that is not a port: exit 1 naming PORT', async () => {
    const cwd = join(dir.path, 'bad-port');
    await mkdir(cwd);
    const run = await runNode([CLI, 'serve'], { cwd, env: { ...process.env, PORT: 'eighty' } });
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /^taskvisor: PORT=eighty: expected a port number/);
    assert.equal(existsSync(join(cwd, '.taskvisor')), false);
  });

  it('an unknown option: exit 2 (a bad command line) naming it', async () => {
    const run = await runNode([CLI, 'serve', '--bogus'], { cwd: dir.path });
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /^taskvisor: Unknown option '--bogus'/);
  });

  it('unknown command: exit 2 with the usage', async () => {
    const run = await runNode([CLI, 'frobnicate'], { cwd: dir.path });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^taskvisor: unknown command "frobnicate"\n/);
    assert.match(run.stderr, /Usage: taskvisor <command> \[options\]/);
    assert.match(run.stderr, /serve {2,}Serve tools/);
    assert.equal(run.stdout, '');
  });
});
