/**
 * Authentication and secrets through the command line, as an operator uses
 * them: `taskvisor token add` (0600 file, digest only, token shown once),
 * `serve` with an `auth` section (401 without a token, SIGHUP reload), bad
 * `auth` configs refused with file:line:col and nothing started — and the
 * server's stderr never shows a token, an Authorization header or user data
 * (tool arguments, results, bodies), whatever clients send.
 */
import assert from 'node:assert/strict';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { connect } from '../support/extTasksClient.js';
import { postJsonRpc } from '../support/httpRaw.js';
import { CLI, DEMO_TOOLS, runNode, spawnNode, tempDir } from '../support/processes.js';
import { taskOps } from '../support/taskOps.js';

const STARTUP_TIMEOUT_MS = 45_000;
const SERVING_HTTP = /serving MCP over Streamable HTTP at (\S+)\n/;
const SERVING_WS = /serving MCP over WebSocket at (\S+)\n/;
/** Stands for user data and secrets a client sends; must never reach the log. */
const MARKER = 'S3CRET-USERDATA-7f3a9c';

let dir: Awaited<ReturnType<typeof tempDir>>;
before(async () => (dir = await tempDir('taskvisor-cli-auth-')));
after(async () => dir?.remove());

async function addToken(file: string, principal: string): Promise<string> {
  const run = await runNode([CLI, 'token', 'add', '--file', file, '--principal', principal]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, new RegExp(`added a token for ${principal}`));
  assert.ok(!run.stderr.includes(run.stdout.trim()), 'the token goes to stdout only');
  return run.stdout.trim();
}

describe('taskvisor token add', () => {
  it('creates the token file with mode 0600 and prints a fresh token once; refuses bad usage precisely', async () => {
    const file = join(dir.path, 'add.yaml');
    const token = await addToken(file, 'alice');
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    const missing = await runNode([CLI, 'token', 'add', '--file', file]);
    assert.equal(missing.code, 2, 'a missing required option is a usage error');
    assert.match(missing.stderr, /^taskvisor: token add: --principal ID is required\n\nUsage: taskvisor token add/);
    await chmod(file, 0o644);
    const loose = await runNode([CLI, 'token', 'add', '--file', file, '--principal', 'bob']);
    assert.equal(loose.code, 1);
    assert.match(loose.stderr, /the token file has mode 0644; group and others must have no access/);
  });
});

describe('serve with auth', () => {
  it('401 without a token, serves with one on HTTP and WebSocket, SIGHUP loads new tokens, and logs nothing secret or private', async () => {
    const tokens = join(dir.path, 'tokens.yaml');
    const alice = await addToken(tokens, 'alice');
    const config = join(dir.path, 'serve.yaml');
    await writeFile(
      config,
      `store:\n  kind: memory\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\nws: {}\nauth:\n  kind: token-file\n  file: tokens.yaml\n`,
    );
    const trace = join(dir.path, 'trace.jsonl');
    const child = spawnNode([CLI, 'serve', '--config', config, '--http', '127.0.0.1:0', '--ws', '127.0.0.1:0', '--trace', trace], {
      cwd: dir.path,
    });
    let bob = '';
    try {
      const [, url] = await child.waitForOutput(SERVING_HTTP, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      const [, wsUrl] = await child.waitForOutput(SERVING_WS, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      assert.match(child.stderr, /bearer authentication: token-file/);
      const unauthenticated = await postJsonRpc(url!, 'tasks/get', { taskId: 'f'.repeat(32) });
      assert.equal(unauthenticated.status, 401);

      // Alice works over both transports, with user data in arguments, results and errors.
      const http = await connect({ kind: 'http', url: url!, headers: { authorization: `Bearer ${alice}` } });
      const ws = await connect({ kind: 'ws', url: wsUrl!, headers: { authorization: `Bearer ${alice}` } });
      try {
        const ops = taskOps(() => http);
        const echoed = await ops.call('echo', { text: MARKER });
        assert.equal(echoed.kind, 'result');
        const failed = await ops.call('fail', { message: `boom ${MARKER}` });
        assert.equal(failed.kind, 'error');
        await taskOps(() => ws).call('tool_error', { message: MARKER });
        // Task actors (traced): arguments, results and answers carry the marker.
        const slept = await ops.createTask('sleep', { ms: 400, message: MARKER });
        await ops.waitForStatus(slept.taskId, 'completed');
        const hello = await ops.createTask('hello_world');
        await ops.waitForStatus(hello.taskId, 'input_required');
        await ops.update(hello.taskId, { name: { action: 'accept', content: { name: MARKER } } });
        await ops.waitForStatus(hello.taskId, 'completed');
      } finally {
        await http.close();
        await ws.close();
      }

      // Hostile traffic carrying secrets: unknown tokens, Basic credentials, broken bodies, broken frames.
      for (const authorization of [
        `Bearer ${MARKER}-token`,
        `Basic ${Buffer.from(`alice:${MARKER}`).toString('base64')}`,
        `Bearer ${alice}`,
      ]) {
        await fetch(url!, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":"${MARKER}"`,
        });
        await fetch(url!, {
          method: 'POST',
          headers: {
            authorization,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2026-07-28',
            'mcp-method': 'tools/call',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: MARKER, arguments: { MARKER } } }),
        });
      }
      const withToken = { headers: { authorization: `Bearer ${alice}` } };
      await postJsonRpc(url!, 'tools/call', { name: MARKER, arguments: { text: MARKER } }, withToken);
      await postJsonRpc(url!, 'tools/call', { name: 'echo', arguments: { text: { [MARKER]: MARKER } } }, withToken);
      await postJsonRpc(url!, 'tasks/update', { taskId: MARKER, inputResponses: { [MARKER]: MARKER } }, withToken);
      await postJsonRpc(
        url!,
        'tools/call',
        { name: 'echo', arguments: { text: MARKER } },
        { headers: { ...withToken.headers, 'mcp-name': `${MARKER}-mismatch` } },
      );
      const socket = new WebSocket(wsUrl!, { headers: { authorization: `Bearer ${alice}` } });
      await new Promise<void>((resolve, reject) => socket.once('open', () => resolve()).once('error', reject));
      const answered = new Promise<void>((resolve) => socket.once('message', () => resolve()));
      socket.send(`{"jsonrpc":"2.0","id":1,"method":"${MARKER}",`);
      await answered;
      socket.close();
      await fetch(url!.replace('/mcp', `/${MARKER}`), { headers: { authorization: `Bearer ${alice}` } });

      // Rotation: bob's token works after SIGHUP, without a restart.
      bob = await addToken(tokens, 'bob');
      assert.equal(
        (await postJsonRpc(url!, 'tasks/get', { taskId: 'f'.repeat(32) }, { headers: { authorization: `Bearer ${bob}` } })).status,
        401,
        'not before the reload',
      );
      child.process.kill('SIGHUP');
      await child.waitForOutput(/SIGHUP: token file reloaded/, { stream: 'stderr' });
      const admitted = await postJsonRpc(url!, 'tasks/get', { taskId: 'f'.repeat(32) }, { headers: { authorization: `Bearer ${bob}` } });
      assert.equal(admitted.message?.error?.code, -32602, admitted.text);
    } finally {
      await child.kill('SIGTERM');
    }
    const log = child.stderr;
    for (const secret of [alice, bob, MARKER, 'authorization', 'Authorization', 'Bearer ']) {
      assert.ok(!log.includes(secret), `stderr shows ${JSON.stringify(secret)}:\n${log}`);
    }
    assert.equal(child.stdout, '');
    // The redacted trace (asked for with --trace) has the tasks but neither tokens nor user data.
    const traced = await readFile(trace, 'utf8');
    assert.match(traced, /"sleep"/);
    assert.match(traced, /\[redacted\]/);
    for (const secret of [alice, bob, MARKER]) assert.ok(!traced.includes(secret), `the trace shows ${JSON.stringify(secret)}`);
    assert.equal((await stat(trace)).mode & 0o777, 0o600);
  });
});

describe('serve without auth on a public interface', () => {
  it('with auth: { kind: none } (required there) warns that every caller is the same anonymous principal', async () => {
    const config = join(dir.path, 'public.yaml');
    await writeFile(config, `store:\n  kind: memory\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\nauth:\n  kind: none\n`);
    const child = spawnNode([CLI, 'serve', '--config', config, '--http', '0.0.0.0:0'], { cwd: dir.path });
    try {
      await child.waitForOutput(SERVING_HTTP, { stream: 'stderr', timeoutMs: STARTUP_TIMEOUT_MS });
      assert.match(
        child.stderr,
        /warning: no auth configured and http:\/\/0\.0\.0\.0:\d+\/mcp is not a loopback address: every caller there is the same anonymous principal/,
      );
    } finally {
      await child.kill('SIGTERM');
    }
  });
});

describe('stdio with auth configured', () => {
  it('stays the one local principal: no token needed on stdio while HTTP asks for one', async () => {
    const tokens = join(dir.path, 'stdio-tokens.yaml');
    await addToken(tokens, 'alice');
    const config = join(dir.path, 'stdio.yaml');
    await writeFile(
      config,
      `store:\n  kind: memory\ntools:\n  - ${JSON.stringify(DEMO_TOOLS)}\nauth:\n  kind: token-file\n  file: stdio-tokens.yaml\n`,
    );
    const client = await connect({
      kind: 'stdio',
      command: process.execPath,
      args: [CLI, 'serve', '--config', config, '--stdio'],
      cwd: dir.path,
    });
    try {
      const ops = taskOps(() => client);
      const echoed = await ops.call('echo', { text: 'hi' });
      assert.equal(echoed.kind, 'result', JSON.stringify(echoed));
    } finally {
      await client.close();
    }
  });
});

describe('bad auth configs: precise errors, nothing started', () => {
  const base = `store:\n  kind: memory\nhttp:\n  port: 0\n`;
  const cases: Array<[string, string, (file: string) => Promise<void>, RegExp]> = [
    [
      'token file readable by others',
      `auth:\n  kind: token-file\n  file: loose.yaml\n`,
      async () => {
        await writeFile(join(dir.path, 'loose.yaml'), 'tokens: []\n', { mode: 0o644 });
        await chmod(join(dir.path, 'loose.yaml'), 0o644);
      },
      /^taskvisor: .*bad-0\.yaml:7:9: auth\.file: .*loose\.yaml: the token file has mode 0644; group and others must have no access \(run: chmod 600 .*\), or set allowInsecurePermissions\n$/,
    ],
    [
      'missing token file',
      `auth:\n  kind: token-file\n  file: nowhere.yaml\n`,
      async () => {},
      /^taskvisor: .*bad-1\.yaml:7:9: auth\.file: .*nowhere\.yaml: cannot read the token file: ENOENT\n$/,
    ],
    [
      'jwt without keys',
      `auth:\n  kind: jwt\n  issuer: https://idp.example.com/\n  audience: https://mcp.example.com/mcp\n`,
      async () => {},
      /bad-2\.yaml:\d+:\d+: auth\.jwksUrl: give exactly one of jwksUrl and keyFile\n$/,
    ],
    [
      'jwt over http off loopback',
      `auth:\n  kind: jwt\n  jwksUrl: http://idp.example.com/jwks\n  issuer: https://idp.example.com/\n  audience: x\n`,
      async () => {},
      /bad-3\.yaml:7:12: auth\.jwksUrl: jwksUrl "http:\/\/idp\.example\.com\/jwks" must use https/,
    ],
    ['unknown kind', `auth:\n  kind: basic\n`, async () => {}, /bad-4\.yaml:6:9: auth\.kind: /],
    [
      'unknown field',
      `auth:\n  kind: token-file\n  file: t.yaml\n  password: x\n`,
      async () => {},
      /bad-5\.yaml:8:3: auth\.password: unknown field/,
    ],
    [
      'audience missing',
      `auth:\n  kind: jwt\n  jwksUrl: https://idp.example.com/jwks\n  issuer: https://idp.example.com/\n`,
      async () => {},
      /bad-6\.yaml:\d+:\d+: auth\.audience: /,
    ],
  ];
  for (const [index, [what, text, prepare, expected]] of cases.entries()) {
    it(`${what}: exit 1 with the position and the field, nothing served`, async () => {
      await prepare(dir.path);
      const config = join(dir.path, `bad-${index}.yaml`);
      await writeFile(config, `${base}${text}`);
      const run = await runNode([CLI, 'serve', '--config', config], { cwd: dir.path });
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, expected);
      assert.doesNotMatch(run.stderr, /serving MCP/);
    });
  }
});
