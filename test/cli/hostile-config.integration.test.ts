/**
 * Malformed and hostile config files through the real CLI: wrong types,
 * unknown keys, a huge file, deep nesting (flow and block), a YAML alias
 * bomb, non-UTF-8 bytes, a directory, a device. Each is refused with exit
 * code 1 and a message naming the file (and line:col, path and field where
 * there is one) — and nothing started: no port bound, no store written.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CLI, freePort, runNode, tempDir } from '../support/processes.js';

let dir: Awaited<ReturnType<typeof tempDir>>;
before(async () => {
  dir = await tempDir('taskvisor-hostile-config-');
});
after(async () => {
  await dir?.remove();
});

/** Whether `port` can still be bound on 127.0.0.1 (i.e. the CLI left nothing listening). */
const portIsFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/**
 * Writes the config (`body` after a store and http section that would write
 * and bind if the start went ahead) into a fresh folder, runs `serve` there,
 * and checks the refusal: exit 1, one stderr message matching `expected`,
 * nothing on stdout, no store folder, the port still free.
 */
async function refuse(name: string, content: string | Buffer | ((cwd: string) => Promise<string>), expected: RegExp): Promise<string> {
  const cwd = join(dir.path, name.replace(/[^\w.-]/g, '_'));
  await mkdir(cwd);
  const port = await freePort();
  let configArg: string;
  if (typeof content === 'function') configArg = await content(cwd);
  else {
    configArg = join(cwd, name);
    await writeFile(configArg, content);
  }
  const { code, stdout, stderr } = await runNode([CLI, 'serve', '--config', configArg, '--http', `127.0.0.1:${port}`], { cwd });
  assert.equal(code, 1, `exit code: ${stderr}`);
  assert.match(stderr, expected);
  assert.doesNotMatch(stderr, /\n\s+at /, `a stack trace instead of a message: ${stderr}`);
  assert.doesNotMatch(stderr, /serving MCP/);
  assert.equal(stdout, '');
  assert.equal(existsSync(join(cwd, 'store')), false, 'partial start: the store folder was created');
  assert.equal(existsSync(join(cwd, '.taskvisor')), false, 'partial start: the default store was created');
  assert.ok(await portIsFree(port), 'partial start: the port was bound');
  return stderr;
}

const PRELUDE = 'store:\n  kind: lowdb\n  dir: ./store\n';
const esc = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('hostile config files (CLI, no partial start)', { concurrency: 2 }, () => {
  it('wrong types in limits: every field named with line:col and the expected type', async () => {
    const stderr = await refuse(
      'types.yaml',
      `${PRELUDE}limits:\n  maxJsonDepth: "deep"\n  maxLiveTasksPerPrincipal: -1\n  requestTimeoutMs: 1.5\n  maxTaskTtlMs: 0\n  maxRequestBodyBytes: [1]\n`,
      /types\.yaml:5:17: limits\.maxJsonDepth: Invalid input: expected number, received string/,
    );
    assert.match(stderr, /types\.yaml:6:29: limits\.maxLiveTasksPerPrincipal: Too small: expected number to be >0/);
    assert.match(stderr, /types\.yaml:7:21: limits\.requestTimeoutMs: Invalid input: expected int, received number/);
    assert.match(stderr, /types\.yaml:8:17: limits\.maxTaskTtlMs: Too small/);
    assert.match(stderr, /types\.yaml:9:24: limits\.maxRequestBodyBytes: Invalid input: expected number, received array/);
  });

  it('out-of-range limits: a request timeout past what a timer can wait', async () => {
    await refuse(
      'range.yaml',
      `${PRELUDE}limits:\n  requestTimeoutMs: 3000000000\n`,
      /range\.yaml:5:21: limits\.requestTimeoutMs: Too big: expected number to be <=2147483647/,
    );
  });

  it('unknown keys: a misspelt section and a misspelt limit, each with the allowed names', async () => {
    const stderr = await refuse(
      'unknown.yaml',
      `${PRELUDE}limit:\n  maxBody: 1\nlimits:\n  maxBodyBytes: 10\n`,
      /unknown\.yaml:4:1: limit: unknown field \(allowed here: server, http, ws, store, tasks, tools, [^)]*\blimits\b[^)]*\)/,
    );
    assert.match(
      stderr,
      /unknown\.yaml:7:3: limits\.maxBodyBytes: unknown field \(allowed here: maxRequestBodyBytes, maxJsonDepth, maxJsonKeys, maxJsonNodes, maxMetaNodes, maxLiveTasksPerPrincipal, maxPendingInputRequestsPerTask, maxListenStreamsPerPrincipal, maxTaskIdsPerListen, maxListenUriBytes, maxListenUriBytesPerListen, maxListenUriBytesPerPrincipal, requestTimeoutMs, maxTaskTtlMs, maxOutboundBufferBytes, maxOutboundBytesPerPrincipal, outboundGraceMs, maxPipelinedRequests, maxHttpSessions, maxHttpSessionsPerPrincipal, httpSessionIdleMs, maxInboundBodyBytesPerPrincipal, maxInboundBodyBytes, requestBodyTimeoutMs, maxInflightRequestsPerConnection\)/,
    );
  });

  it('a huge file is refused by its size before it is read', async () => {
    await refuse(
      'huge.yaml',
      `${PRELUDE}# ${'x'.repeat(1024 * 1024 + 10)}\n`,
      /huge\.yaml: the config file is \d+ bytes; the limit is 1048576/,
    );
  });

  it('deep flow nesting is refused before parsing, at the bracket past the limit', async () => {
    await refuse(
      'deep.yaml',
      `${PRELUDE}tasks:\n  poll: ${'['.repeat(5000)}${']'.repeat(5000)}\n`,
      /deep\.yaml:5:41: the config nests deeper than 32 levels/,
    );
    await refuse(
      'deep.json',
      `{"tasks": ${'{"a": '.repeat(3000)}1${'}'.repeat(3000)}}`,
      /deep\.json:1:\d+: the config nests deeper than 32 levels/,
    );
  });

  it('deep block nesting (indentation) is an error at its position, not a crash', async () => {
    let text = '';
    for (let i = 0; i < 1400; i++) text += `${' '.repeat(i)}k${i}:\n`;
    await refuse('block.yaml', `${text.slice(0, -1)} 1\n`, /block\.yaml:\d+:\d+: invalid YAML: the config nests too deeply to parse/);
  });

  it('a YAML alias bomb ("billion laughs") is refused without expanding it', async () => {
    let bomb = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n';
    for (let i = 1; i < 10; i++)
      bomb += `a${i}: &a${i} [${Array(10)
        .fill(`*a${i - 1}`)
        .join(', ')}]\n`;
    await refuse(
      'bomb.yaml',
      `${PRELUDE}${bomb}server:\n  name: *a9\n`,
      /bomb\.yaml: invalid YAML: YAML aliases expand too much \(more than 100 alias uses\)/,
    );
  });

  it('bytes that are not UTF-8 are an error at their line and column, not replaced silently', async () => {
    const latin1 = Buffer.concat([Buffer.from(`${PRELUDE}server:\n  name: caf`), Buffer.from([0xe9]), Buffer.from('\n')]);
    await refuse('latin1.yaml', latin1, /latin1\.yaml:5:12: the config file is not valid UTF-8 \(byte 0xe9 at offset \d+\)/);
  });

  it('a directory, a device and a missing file are refused by what they are', async () => {
    await refuse(
      'dir.yaml',
      async (cwd) => {
        await mkdir(join(cwd, 'conf.yaml'));
        return join(cwd, 'conf.yaml');
      },
      /conf\.yaml: the config path is a directory; expected a YAML or JSON file/,
    );
    // /dev/zero never ends: reading it would fill memory.
    await refuse('device', async () => '/dev/zero', new RegExp(`${esc('/dev/zero')}: the config path is not a regular file`));
    await refuse('missing', async (cwd) => join(cwd, 'nope.yaml'), /nope\.yaml: cannot read the config file: ENOENT/);
  });

  it('broken syntax: duplicate keys, a trailing comma in JSON, a top level that is not a mapping', async () => {
    await refuse(
      'dup.yaml',
      `${PRELUDE}limits:\n  maxJsonDepth: 8\n  maxJsonDepth: 9\n`,
      /dup\.yaml:6:3: invalid YAML: Map keys must be unique/,
    );
    await refuse('comma.json', '{"limits": {"maxJsonDepth": 8},}', /comma\.json:1:\d+: invalid JSON/);
    await refuse('list.yaml', '- a\n- b\n', /list\.yaml:1:1: \(top level\): Invalid input: expected object, received array/);
  });
});
