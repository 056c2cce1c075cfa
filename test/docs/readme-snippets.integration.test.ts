/**
 * README's "Embed it" server and its "Call tools" client, run as written:
 * the package imports pointed at this checkout's sources, the port a free
 * one, the store in a temp folder. The client prints each status change of
 * the `slow_add` task and the result, and nothing it prints is `undefined`
 * (a finished task has no statusMessage).
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { freePort, REPO_ROOT, spawnNode, tempDir, TSX_IMPORT, waitFor, type Child } from '../support/processes.js';

let dir: Awaited<ReturnType<typeof tempDir>>;
let server: Child;
let readme = '';
let port = 0;

/** The first ```ts block after `heading`, with the package imports and port made runnable here. */
function snippet(heading: string): string {
  const start = readme.indexOf(heading);
  assert.ok(start >= 0, `README has ${heading}`);
  const [, code] = /```ts\n([\s\S]*?)```/.exec(readme.slice(start)) ?? [];
  assert.ok(code, `a ts block under ${heading}`);
  const source = (path: string) => pathToFileURL(join(REPO_ROOT, path)).href;
  return code
    .replaceAll("from 'taskvisor/transports'", `from '${source('src/transports/index.ts')}'`)
    .replaceAll("from 'taskvisor/client'", `from '${source('src/client/index.ts')}'`)
    .replaceAll("from 'taskvisor'", `from '${source('src/index.ts')}'`)
    .replaceAll("from 'zod'", `from '${import.meta.resolve('zod')}'`)
    .replaceAll('.listen(3000)', `.listen(${port}, '127.0.0.1')`)
    .replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`);
}

before(async () => {
  readme = await readFile(join(REPO_ROOT, 'README.md'), 'utf8');
  dir = await tempDir();
  port = await freePort();
  await writeFile(join(dir.path, 'server.mts'), snippet('## Embed it'));
  await writeFile(join(dir.path, 'client.mts'), snippet('## Call tools'));
  server = spawnNode(['--import', TSX_IMPORT, join(dir.path, 'server.mts')], { cwd: dir.path });
  await waitFor(
    async () => {
      if (server.process.exitCode !== null) throw new Error(`the embed server exited: ${server.stderr}`);
      return (await fetch(`http://127.0.0.1:${port}/nothing`).catch(() => undefined))?.status === 404;
    },
    { timeoutMs: 30_000, what: 'the embed server to listen' },
  );
});
after(async () => {
  await server?.kill('SIGTERM');
  await dir?.remove();
});

describe('README: Embed it, then Call tools', () => {
  it('prints each status of the task and the result, never undefined', async () => {
    const client = spawnNode(['--import', TSX_IMPORT, join(dir.path, 'client.mts')], { cwd: dir.path });
    client.process.stdin!.end();
    const { code } = await client.exited;
    assert.equal(code, 0, client.stderr);
    assert.doesNotMatch(client.stdout, /undefined/);
    assert.equal(client.stdout, "working: Adding slowly\ncompleted\n[ { type: 'text', text: '3' } ]\n");
  });
});
