/**
 * Front-door configuration checks, each through real processes, sockets and
 * files:
 * - store folders are created 0700 and wider existing ones are reported;
 *   `--trace` refuses a symlink and a FIFO and leaves their targets alone.
 * - JWT: HS256 "signed" with the PEM public key is 401 (not 503), a token
 *   issued in the future is 401, `maxTokenAgeMs` refuses old tokens.
 * - binds: a non-loopback bind without auth does not start unless the config
 *   says `auth: { kind: none }`; then browsers' Origins are refused there.
 * - client messages: a corrupt record answers a stable message with a reference id; the
 *   path and the file's bytes go to the log only.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportSPKI, SignJWT } from 'jose';
import { WebSocket } from 'ws';
import { jwtVerifier } from '../../src/auth/jwt.js';
import { createRuntime, type TaskvisorRuntime } from '../../src/index.js';
import { listenHttp } from '../../src/transports/index.js';
import { startIssuer, type Issuer } from '../support/authFixtures.js';
import { postJsonRpc } from '../support/httpRaw.js';
import { CLI, DEMO_TOOLS, runNode, spawnNode, tempDir, waitFor } from '../support/processes.js';

const STARTUP_TIMEOUT_MS = 45_000;
const SERVING_HTTP = /serving MCP over Streamable HTTP at (\S+)\n/;
const SERVING_WS = /serving MCP over WebSocket at (\S+)\n/;
const AUDIENCE = 'http://127.0.0.1/mcp';
const MARKER = 'CORRUPT-BYTES-4b1d';

let dir: Awaited<ReturnType<typeof tempDir>>;
before(async () => (dir = await tempDir('taskvisor-front-door-')));
after(async () => dir?.remove());

const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

describe('store folders and the trace file', () => {
  it('creates lowdb folders 0700 (root, tasks, shards), reports a wider existing one, and creates the sqlite folder 0700', async () => {
    const config = join(dir.path, 'lowdb.yaml');
    await writeFile(
      config,
      `store:\n  kind: lowdb\n  dir: ./fresh-store\ntasks:\n  promoteAfterMs: 0\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\n`,
    );
    const child = spawnNode([CLI, 'serve', '--config', config, '--http', '127.0.0.1:0'], { cwd: dir.path });
    try {
      const [, url] = await child.waitForOutput(SERVING_HTTP, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      const created = await postJsonRpc(url!, 'tools/call', { name: 'sleep', arguments: { ms: 0 } });
      assert.equal((created.message?.result as { resultType?: string } | undefined)?.resultType, 'task', created.text);
      const root = join(dir.path, 'fresh-store');
      assert.equal(await modeOf(root), 0o700);
      assert.equal(await modeOf(join(root, 'tasks')), 0o700);
      // A create is durable in the batch journal; its shard folder appears when a checkpoint writes the task file.
      assert.equal(await modeOf(join(root, 'journal')), 0o700);
      const shards = await waitFor(
        async () => {
          const names = await readdir(join(root, 'tasks'));
          return names.length > 0 && names;
        },
        { timeoutMs: 10_000, what: 'a checkpoint to write the task file' },
      );
      for (const shard of shards) assert.equal(await modeOf(join(root, 'tasks', shard)), 0o700, shard);
      assert.doesNotMatch(child.stderr, /warning: folder/);
    } finally {
      await child.kill('SIGTERM');
    }

    const wide = join(dir.path, 'wide-store');
    await mkdir(join(wide, 'tasks'), { recursive: true });
    await chmod(wide, 0o755);
    await chmod(join(wide, 'tasks'), 0o755);
    const wideConfig = join(dir.path, 'wide.yaml');
    await writeFile(wideConfig, `store:\n  kind: lowdb\n  dir: ./wide-store\n`);
    const wideChild = spawnNode([CLI, 'serve', '--config', wideConfig, '--http', '127.0.0.1:0'], { cwd: dir.path });
    try {
      await wideChild.waitForOutput(SERVING_HTTP, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      assert.match(wideChild.stderr, /warning: folder \S*wide-store has mode 0755: other local users can list the task files/);
      assert.match(wideChild.stderr, /warning: folder \S*wide-store\/tasks has mode 0755/);
    } finally {
      await wideChild.kill('SIGTERM');
    }

    const sqliteConfig = join(dir.path, 'sqlite.yaml');
    await writeFile(sqliteConfig, `store:\n  kind: sqlite\n  file: ./sqlite-dir/nested/tasks.sqlite\n`);
    const sqliteChild = spawnNode([CLI, 'serve', '--config', sqliteConfig, '--http', '127.0.0.1:0'], { cwd: dir.path });
    try {
      await sqliteChild.waitForOutput(SERVING_HTTP, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      assert.equal(await modeOf(join(dir.path, 'sqlite-dir')), 0o700);
      assert.equal(await modeOf(join(dir.path, 'sqlite-dir', 'nested')), 0o700);
    } finally {
      await sqliteChild.kill('SIGTERM');
    }
  });

  it('--trace refuses a symlink and a FIFO, and leaves what they point at untouched', async () => {
    const victim = join(dir.path, 'victim.txt');
    await writeFile(victim, 'precious\n');
    const link = join(dir.path, 'trace-link.jsonl');
    await symlink(victim, link);
    const linked = await runNode([CLI, 'serve', '--demo', '--stdio', '--trace', link], { cwd: dir.path });
    assert.equal(linked.code, 1, linked.stderr);
    assert.match(linked.stderr, /--trace \S*trace-link\.jsonl: refused: it is a symbolic link/);
    assert.equal(await readFile(victim, 'utf8'), 'precious\n');

    const fifo = join(dir.path, 'trace.fifo');
    execFileSync('mkfifo', [fifo]);
    const piped = await runNode([CLI, 'serve', '--demo', '--stdio', '--trace', fifo], { cwd: dir.path });
    assert.equal(piped.code, 1, piped.stderr);
    assert.match(piped.stderr, /--trace \S*trace\.fifo: refused: it exists and is not a regular file/);
  });
});

describe('JWT details', () => {
  let runtime: TaskvisorRuntime;
  let issuer: Issuer;
  let pem: string;
  const errors: string[] = [];

  before(async () => {
    runtime = createRuntime({
      store: { kind: 'memory' },
      logger: { info: () => {}, error: (message, error) => errors.push(`${message}: ${String(error)}`) },
    });
    await runtime.start();
    issuer = await startIssuer(AUDIENCE);
    pem = join(dir.path, 'issuer.pem');
    await writeFile(pem, await exportSPKI(issuer.publicKey));
  });
  after(async () => {
    await runtime?.close();
    await issuer?.close();
  });

  const statusWith = async (url: string, token: string) =>
    (await postJsonRpc(url, 'tools/list', {}, { headers: { authorization: `Bearer ${token}` } })).status;

  it('HS256 signed with the public key is 401 with no error logged; a token from the future is 401', async () => {
    const verifier = await jwtVerifier({ keyFile: pem, issuer: issuer.issuer, audience: AUDIENCE });
    const listener = await listenHttp(runtime, { port: 0, auth: { verifier } });
    try {
      assert.equal(await statusWith(listener.url, await issuer.sign({ sub: 'alice' })), 200);
      const secret = new TextEncoder().encode(await readFile(pem, 'utf8'));
      const confused = await new SignJWT({ sub: 'mallory' })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuedAt()
        .setIssuer(issuer.issuer)
        .setAudience(AUDIENCE)
        .setExpirationTime('5m')
        .sign(secret);
      errors.length = 0;
      assert.equal(await statusWith(listener.url, confused), 401);
      assert.deepEqual(errors, [], 'a forged token is the client’s fault, not an error of the server');
      const now = Math.floor(Date.now() / 1000);
      const future = await issuer.sign({ sub: 'alice', iat: now + 3600, exp: now + 7200 });
      assert.equal(await statusWith(listener.url, future), 401);
      // Within the clock tolerance (30 s) it passes.
      assert.equal(await statusWith(listener.url, await issuer.sign({ sub: 'alice', iat: now + 10, exp: now + 600 })), 200);
    } finally {
      await listener.close();
    }
  });

  it('maxTokenAgeMs refuses a token issued too long ago', async () => {
    const verifier = await jwtVerifier({ keyFile: pem, issuer: issuer.issuer, audience: AUDIENCE, maxTokenAgeMs: 60_000 });
    const listener = await listenHttp(runtime, { port: 0, auth: { verifier } });
    try {
      const now = Math.floor(Date.now() / 1000);
      assert.equal(await statusWith(listener.url, await issuer.sign({ sub: 'alice' })), 200);
      assert.equal(await statusWith(listener.url, await issuer.sign({ sub: 'alice', iat: now - 600, exp: now + 600 })), 401);
      const verified = await verifier.verify(await issuer.sign({ sub: 'alice', iat: now - 30, exp: now + 600 }));
      assert.ok(verified.expiresAt !== undefined && Math.abs(verified.expiresAt - (now + 30) * 1000) < 2_000, String(verified.expiresAt));
    } finally {
      await listener.close();
    }
  });
});

describe('non-loopback binds', () => {
  it('refuses to start without auth; with auth: { kind: none } it starts and refuses browser Origins on HTTP and WebSocket', async () => {
    const open = join(dir.path, 'open.yaml');
    await writeFile(open, `store:\n  kind: memory\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\n`);
    const refused = await runNode([CLI, 'serve', '--config', open, '--http', '0.0.0.0:0'], { cwd: dir.path });
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /refusing to serve http on 0\.0\.0\.0 without authentication: .*auth: \{ kind: none \}/);
    assert.doesNotMatch(refused.stderr, /serving MCP/);
    const refusedWs = await runNode([CLI, 'serve', '--config', open, '--ws', '0.0.0.0:0'], { cwd: dir.path });
    assert.equal(refusedWs.code, 1, refusedWs.stderr);
    assert.match(refusedWs.stderr, /refusing to serve ws on 0\.0\.0\.0 without authentication/);

    const explicit = join(dir.path, 'explicit.yaml');
    await writeFile(explicit, `store:\n  kind: memory\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\nauth:\n  kind: none\n`);
    const child = spawnNode([CLI, 'serve', '--config', explicit, '--http', '0.0.0.0:0', '--ws', '0.0.0.0:0'], { cwd: dir.path });
    try {
      const [, url] = await child.waitForOutput(SERVING_HTTP, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      const [, wsUrl] = await child.waitForOutput(SERVING_WS, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      assert.match(child.stderr, /warning: no auth configured/);
      const httpUrl = url!.replace('0.0.0.0', '127.0.0.1');
      const wsLocal = wsUrl!.replace('0.0.0.0', '127.0.0.1');
      assert.equal((await postJsonRpc(httpUrl, 'tools/list', {})).status, 200);
      assert.equal((await postJsonRpc(httpUrl, 'tools/list', {}, { headers: { origin: 'http://evil.example' } })).status, 403);
      const upgrade = (headers: Record<string, string>) =>
        new Promise<number>((resolve) => {
          const socket = new WebSocket(wsLocal, ['mcp'], { headers });
          socket.once('open', () => {
            socket.close();
            resolve(101);
          });
          socket.once('unexpected-response', (_request, response) => {
            resolve(response.statusCode ?? 0);
            socket.terminate();
          });
          socket.once('error', () => resolve(0));
        });
      assert.equal(await upgrade({}), 101);
      assert.equal(await upgrade({ origin: 'http://evil.example' }), 403);
    } finally {
      await child.kill('SIGTERM');
    }
  });
});

describe('what clients are told', () => {
  it('a corrupt record answers a stable message with a reference id; the path and the bytes go to the log only', async () => {
    const config = join(dir.path, 'corrupt.yaml');
    await writeFile(
      config,
      `store:\n  kind: lowdb\n  dir: ./corrupt-store\ntasks:\n  promoteAfterMs: 0\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\n`,
    );
    const child = spawnNode([CLI, 'serve', '--config', config, '--http', '127.0.0.1:0'], { cwd: dir.path });
    try {
      const [, url] = await child.waitForOutput(SERVING_HTTP, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      const created = await postJsonRpc(url!, 'tools/call', { name: 'sleep', arguments: { ms: 0 } });
      const taskId = (created.message?.result as { taskId: string }).taskId;
      const tasksDir = join(dir.path, 'corrupt-store', 'tasks');
      // The finished record reaches its task file at a checkpoint (writes go to the batch journal first): wait for it, then corrupt it.
      const file = await waitFor(
        async () => {
          for (const shard of await readdir(tasksDir)) {
            const path = join(tasksDir, shard, `${taskId}.json`);
            if ((await readdir(join(tasksDir, shard))).includes(`${taskId}.json`) && (await readFile(path, 'utf8')).includes('"completed"'))
              return path;
          }
          return undefined;
        },
        { timeoutMs: 10_000, what: 'the finished record in its task file' },
      );
      await writeFile(file, `{"taskId": "${MARKER}`);
      const answer = await postJsonRpc(url!, 'tasks/get', { taskId });
      const error = answer.message?.error as { code: number; message: string; data?: { ref?: string } } | undefined;
      assert.ok(error, answer.text);
      assert.equal(error.code, -32603);
      // A damaged record is quarantined: a stable text; the log names it by task id.
      assert.match(error.message, /cannot read this task.s stored record; it was set aside for the operator$/);
      assert.ok(!answer.text.includes(MARKER) && !answer.text.includes(dir.path) && !answer.text.includes('corrupt-store'), answer.text);
      await child.waitForOutput(new RegExp(taskId), { stream: 'stderr', timeoutMs: 10_000 });
    } finally {
      await child.kill('SIGTERM');
    }
  });
});
