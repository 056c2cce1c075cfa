/**
 * docs/scaling.md's setup as written: its yaml (pointed at the test database)
 * with `serve --http 0.0.0.0:<port>` starts, because the page's config carries
 * the `auth` a non-loopback bind needs, and then asks callers for a token.
 * The same yaml without `auth` is refused with the message the page quotes.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freshSchema, TEST_PG_URL } from '../support/postgres.js';
import { CLI, freePort, REPO_ROOT, runNode, spawnNode, tempDir } from '../support/processes.js';

const TOKEN = 'scaling-doc-example-token-0123456789';

let dir: Awaited<ReturnType<typeof tempDir>>;
let schema: Awaited<ReturnType<typeof freshSchema>>;
let page: string;
let example: string;
before(async () => {
  dir = await tempDir('taskvisor-scaling-doc-');
  schema = await freshSchema('tv_scaling_doc');
  page = await readFile(join(REPO_ROOT, 'docs', 'scaling.md'), 'utf8');
  const block = /## Setting it up\n\n```yaml\n([\s\S]*?)```/.exec(page);
  assert.ok(block, 'docs/scaling.md has the setup yaml');
  // Only the database is changed: the test's server and a fresh schema.
  example = block[1]!.replace(/url: \S+/, `url: ${TEST_PG_URL}`).replace(/schema: \S+/, `schema: ${schema.schema}`);
  await writeFile(join(dir.path, 'tokens.yaml'), `tokens:\n  - principal: alice\n    token: ${TOKEN}\n`, { mode: 0o600 });
});
after(async () => {
  await schema?.drop();
  await dir?.remove();
});

describe('docs/scaling.md: serve --http 0.0.0.0 with the page’s config', () => {
  it('starts, and asks callers for a bearer token', async () => {
    assert.match(example, /^auth:.*\n {2}kind: token-file/m, 'the page’s config has an auth section');
    await writeFile(join(dir.path, 'taskvisor.yaml'), example);
    const port = await freePort();
    const child = spawnNode([CLI, 'serve', '--config', 'taskvisor.yaml', '--http', `0.0.0.0:${port}`], { cwd: dir.path });
    try {
      await child.waitForOutput(/serving MCP over Streamable HTTP/, { stream: 'stderr' });
      const anonymous = await fetch(`http://127.0.0.1:${port}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      assert.equal(anonymous.status, 401);
      await anonymous.body?.cancel();
    } finally {
      await child.kill('SIGTERM');
    }
  });

  it('without auth it refuses to start, as the page says', async () => {
    const withoutAuth = example.replace(/^auth:.*\n(?: {2}.*\n)*/m, '');
    assert.doesNotMatch(withoutAuth, /auth:/);
    await writeFile(join(dir.path, 'no-auth.yaml'), withoutAuth);
    const port = await freePort();
    const { code, stderr } = await runNode([CLI, 'serve', '--config', 'no-auth.yaml', '--http', `0.0.0.0:${port}`], { cwd: dir.path });
    assert.equal(code, 1, stderr);
    const quoted = /`(refusing to serve http on 0\.0\.0\.0 without\s+authentication) …`/.exec(page);
    assert.ok(quoted, 'docs/scaling.md quotes the refusal');
    assert.ok(stderr.includes(quoted[1]!.replace(/\s+/g, ' ')), `the CLI says: ${stderr}`);
  });
});
