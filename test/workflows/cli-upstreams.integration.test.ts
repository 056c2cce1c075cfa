/**
 * `taskvisor workflows validate|run --config` see the config's upstreams: the
 * demo server runs as a real stdio upstream child, its tools (`x_demo_*`)
 * count as provided, a workflow calling them runs from the CLI, a truly
 * missing upstream tool is still reported, and an upstream that cannot start
 * is named instead of every one of its tools being called missing.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { CLI, REPO_ROOT, freePort, runNode, spawnNode, tempDir } from '../support/processes.js';

const UPSTREAM_CONFIG = path.join(REPO_ROOT, 'examples', 'aggregator', 'upstream.yaml');

async function setup(dir: string, upstream: Record<string, unknown>, steps: unknown[]): Promise<string> {
  await mkdir(path.join(dir, 'flows'));
  await writeFile(path.join(dir, 'flows', 'greet.yaml'), stringify({ args: { name: { type: 'string', default: 'Ada' } }, steps }));
  const config = path.join(dir, 'taskvisor.yaml');
  await writeFile(config, stringify({ store: { kind: 'memory' }, upstreams: [upstream], workflows: { dir: './flows', watch: false } }));
  return config;
}

// A loaded machine starts the upstream child slowly: generous limits, never a speed check.
const SLOW = { timeoutMs: 180_000 };
const WAIT = ['--upstream-timeout', '120000'];

const demo = {
  name: 'demo',
  type: 'stdio',
  command: process.execPath,
  args: [CLI, 'serve', '--config', UPSTREAM_CONFIG, '--stdio', '--quiet'],
};

describe('workflows CLI with upstreams', () => {
  it('validate counts upstream tools and still reports a missing one; run calls the upstream', async (t) => {
    const dir = await tempDir('taskvisor-wf-cli-up-');
    t.after(() => dir.remove());
    const config = await setup(dir.path, demo, [{ id: 'hello', tool: 'x_demo_echo', args: { text: 'hello {{ .input.name }}' } }]);
    const valid = await runNode([CLI, 'workflows', 'validate', '--config', config, ...WAIT], { cwd: dir.path, ...SLOW });
    assert.equal(valid.code, 0, valid.stderr);
    assert.match(valid.stderr, /1 workflow\(s\) valid/);

    const ran = await runNode([CLI, 'workflows', 'run', 'greet', '--config', config, '--arg', 'name=Bob', '--json', ...WAIT], {
      cwd: dir.path,
      ...SLOW,
    });
    assert.equal(ran.code, 0, ran.stderr);
    const result = JSON.parse(ran.stdout) as { structuredContent: { results: { hello: unknown } } };
    assert.match(JSON.stringify(result.structuredContent.results.hello), /hello Bob/);

    await writeFile(path.join(dir.path, 'flows', 'greet.yaml'), stringify({ steps: [{ id: 'a', tool: 'x_demo_no_such_tool' }] }));
    const missing = await runNode([CLI, 'workflows', 'validate', '--config', config, ...WAIT], { cwd: dir.path, ...SLOW });
    assert.equal(missing.code, 1, missing.stderr);
    assert.match(missing.stderr, /a step calls the tool x_demo_no_such_tool, which the config does not provide/);
  });

  it('an upstream that cannot start is named once; its tools are not reported missing one by one', async (t) => {
    const dir = await tempDir('taskvisor-wf-cli-down-');
    t.after(() => dir.remove());
    const broken = { name: 'broken', type: 'stdio', command: path.join(dir.path, 'no-such-binary') };
    const config = await setup(dir.path, broken, [{ id: 'a', tool: 'x_broken_anything' }]);
    const out = await runNode([CLI, 'workflows', 'validate', '--config', config, '--upstream-timeout', '5000'], { cwd: dir.path, ...SLOW });
    assert.equal(out.code, 1, out.stderr);
    assert.match(out.stderr, /upstream broken did not connect \(/);
    assert.doesNotMatch(out.stderr, /x_broken_anything, which the config does not provide/);
  });

  it('serve warns at start-up about a step naming a tool that does not exist; upstream tools once the upstream is ready', async (t) => {
    const dir = await tempDir('taskvisor-wf-warn-');
    t.after(() => dir.remove());
    const config = await setup(dir.path, demo, [
      { id: 'typo', tool: 'no_such_tool' },
      { id: 'ok', tool: 'x_demo_echo', args: { text: 'hi' } },
      { id: 'gone', tool: 'x_demo_no_such_tool' },
    ]);
    const port = await freePort();
    const child = spawnNode([CLI, 'serve', '--config', config, '--http', `127.0.0.1:${port}`], { cwd: dir.path });
    t.after(() => child.kill());
    await child.waitForOutput(/warning: workflow greet calls the tool no_such_tool, which does not exist/, {
      stream: 'stderr',
      timeoutMs: 120_000,
    });
    await child.waitForOutput(/warning: workflow greet calls the tool x_demo_no_such_tool, which does not exist/, {
      stream: 'stderr',
      timeoutMs: 120_000,
    });
    assert.doesNotMatch(child.stderr, /calls the tool x_demo_echo/);
  });
});
