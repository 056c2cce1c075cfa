/**
 * The package as users get it: `npm pack` (which builds dist/ through
 * `prepack`), its file list checked, the tarball installed into a fresh project
 * outside the repository, then plain `node` (no tsx anywhere the project can see):
 * an embedding script importing `taskvisor` and its subpaths, a TypeScript
 * consumer type-checked against the shipped .d.ts, and `npx taskvisor serve`
 * answering a 2026-07-28 client with the demo tools.
 *
 * Packing and installing: test/support/packedPackage.ts (the tarball is
 * unpacked as node_modules/taskvisor, its runtime dependencies linked from
 * this repository's node_modules). Set TASKVISOR_TEST_NPM_INSTALL=1 to run the
 * real `npm install --offline` instead.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { TasksClient } from '../../src/client/index.js';
import { installLinked, PACK_TIMEOUT_MS, packedTarball, type PackReport } from '../support/packedPackage.js';
import { freePort, REPO_ROOT, runNode, spawnCommand, tempDir } from '../support/processes.js';

const run = promisify(execFile);
const SERVING = /serving MCP over Streamable HTTP at (\S+)\n/;

/**
 * The first ```ts block after the `## heading` line of a document in the repository: the docs'
 * examples run as written, with only the port changed (`port` for 3000).
 */
async function docExample(document: string, heading: string, port: number): Promise<string> {
  const text = await readFile(join(REPO_ROOT, document), 'utf8');
  const start = text.indexOf(`\n## ${heading}\n`);
  assert.notEqual(start, -1, `${document} has a section ${heading}`);
  const block = /```ts\n([\s\S]*?)```/.exec(text.slice(start));
  assert.ok(block, `${document} § ${heading} has a ts example`);
  return block[1]!.replaceAll('3000', String(port));
}

let dir: Awaited<ReturnType<typeof tempDir>>;
let project = '';
/** What `npm pack --json` reported of the tarball the tests install. */
let packed: PackReport;

/**
 * The tarball's limits: the compiled library, its declarations, the CLI bundle and the docs fit in
 * about 1.5 MB packed, 5.8 MB unpacked. Source maps of the bundle (which carry every bundled
 * dependency's source) would pass both by far.
 */
const MAX_PACKED_BYTES = 2.5 * 1024 * 1024;
const MAX_UNPACKED_BYTES = 8 * 1024 * 1024;

/** Runs `attempt` until its process exits 0 or its output shows anything but a refused connection (the server starting). */
async function waitForAnswer(attempt: () => ReturnType<typeof runNode>): ReturnType<typeof runNode> {
  for (let tries = 0; ; tries++) {
    const outcome = await attempt();
    if (outcome.code === 0 || tries >= 60 || !/ECONNREFUSED/.test(outcome.stderr)) return outcome;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

before(
  async () => {
    dir = await tempDir('taskvisor-pack-');
    project = join(dir.path, 'project');
    await mkdir(project);
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', type: 'module', private: true }));
    const { tarball, report } = await packedTarball(dir.path);
    packed = report;
    if (process.env.TASKVISOR_TEST_NPM_INSTALL === '1') {
      await run('npm', ['install', tarball, 'zod', '--offline', '--no-audit', '--no-fund'], { cwd: project, timeout: 900_000 });
    } else {
      await installLinked(tarball, project, ['zod']);
    }
  },
  { timeout: PACK_TIMEOUT_MS + 60_000 },
);
after(async () => {
  await dir?.remove();
});

/** Every file a package.json `exports` entry or `bin` names, as a path inside the package. */
function namedFiles(manifest: { exports: Record<string, unknown>; bin: Record<string, string> }): string[] {
  const targets: string[] = [];
  const collect = (target: unknown): void => {
    if (typeof target === 'string') targets.push(target);
    else if (target && typeof target === 'object') for (const value of Object.values(target)) collect(value);
  };
  collect(manifest.exports);
  collect(manifest.bin);
  return targets.map((target) => posix.normalize(target));
}

describe('the packed file list (npm pack --json)', () => {
  it('holds every file the exports and the bin name, and the docs', async () => {
    const manifest = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as Parameters<typeof namedFiles>[0];
    const files = new Set(packed.files.map((file) => file.path));
    const named = namedFiles(manifest);
    assert.ok(named.includes('dist/src/index.d.ts') && named.includes('bin/taskvisor.js'), named.join(', '));
    for (const file of named) assert.ok(files.has(file), `${file} (named by package.json) is in the tarball`);
    for (const file of [
      'dist/cli/taskvisor.js',
      'dist/examples/demo/taskvisor.yaml',
      'README.md',
      'docs/getting-started.md',
      'docs/api.md',
    ]) {
      assert.ok(files.has(file), `${file} is in the tarball`);
    }
  });

  it('holds no source map without its sources, no TypeScript source and no test file', async () => {
    const root = join(project, 'node_modules', 'taskvisor');
    const files = new Set(packed.files.map((file) => file.path));
    for (const file of files) {
      assert.doesNotMatch(file, /(^|\/)(test|tests|__tests__)\/|\.(test|spec)\.[cm]?[jt]s$/, `${file} is a test file`);
      assert.ok(!/\.[cm]?ts$/.test(file) || /\.d\.[cm]?ts$/.test(file), `${file} is a TypeScript source`);
      if (!file.endsWith('.map')) continue;
      // A map is for a debugger: every source it names must be in the package next to it.
      const map = JSON.parse(await readFile(join(root, file), 'utf8')) as { sources: string[]; sourceRoot?: string };
      for (const source of map.sources) {
        const shipped = posix.join(posix.dirname(file), map.sourceRoot ?? '', source);
        assert.ok(files.has(shipped), `${file} names ${source}, which the tarball does not hold`);
      }
    }
  });

  it('stays within its size bounds and runs no script of its own when installed', async () => {
    assert.ok(packed.size <= MAX_PACKED_BYTES, `packed ${packed.size} B > ${MAX_PACKED_BYTES} B`);
    assert.ok(packed.unpackedSize <= MAX_UNPACKED_BYTES, `unpacked ${packed.unpackedSize} B > ${MAX_UNPACKED_BYTES} B`);
    // npm runs these when the package is installed (prepare too, from a tarball or git), and
    // npm 11.16+ warns about each one the consumer has not approved: the package ships built.
    const manifest = JSON.parse(await readFile(join(project, 'node_modules', 'taskvisor', 'package.json'), 'utf8')) as {
      scripts?: Record<string, string>;
    };
    for (const script of ['preinstall', 'install', 'postinstall', 'prepare']) {
      assert.equal(manifest.scripts?.[script], undefined, `the package has a ${script} script`);
    }
  });
});

describe('the packed package, installed into a fresh project', { concurrency: 2 }, () => {
  it('holds compiled JavaScript and declarations, no TypeScript sources, and no runtime dependency on tsx', async () => {
    const root = join(project, 'node_modules', 'taskvisor');
    const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    assert.equal(manifest.dependencies.tsx, undefined, 'tsx is not a runtime dependency');
    for (const file of [
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/cli/run.js',
      // The bundled CLI bin/taskvisor.js runs.
      'dist/cli/taskvisor.js',
      'dist/examples/demo/taskvisor.yaml',
    ]) {
      assert.ok(existsSync(join(root, file)), `${file} is in the package`);
    }
    assert.equal(existsSync(join(root, 'src')), false, 'no TypeScript sources in the package');
    assert.equal(existsSync(join(project, 'node_modules', 'tsx')), false, 'no tsx in the consumer project');
  });

  it('an embedding script runs with plain node: createRuntime, defineTool, subpaths, listenHttp, and taskvisor/client calling it', async () => {
    await writeFile(
      join(project, 'embed.mjs'),
      `import { z } from 'zod';
import { createRuntime, defineTool } from 'taskvisor';
import { listenHttp } from 'taskvisor/transports';
import { TasksClient } from 'taskvisor/client';
import { MemoryTaskStore } from 'taskvisor/stores';
import { parseWorkflow } from 'taskvisor/workflows';

parseWorkflow('steps:\\n  - { id: a, tool: add }\\n', 'check.yaml');
const runtime = createRuntime({ store: new MemoryTaskStore() });
runtime.use(
  defineTool('add', { inputSchema: z.object({ a: z.number(), b: z.number() }) }, async ({ a, b }, ctx) => {
    ctx.setStatus('adding');
    await new Promise((resolve) => setTimeout(resolve, 400)); // longer than promoteAfterMs: a task
    return String(a + b);
  }),
);
await runtime.start();
const listener = await listenHttp(runtime, { port: 0 });
const client = await TasksClient.connect({ url: listener.url });
const statuses = [];
let taskId;
const result = await client.callTool('add', { a: 2, b: 3 }, {
  onTask: (id) => (taskId = id),
  onStatus: ({ status, statusMessage }) => statuses.push(status + ':' + statusMessage),
});
await client.close();
await runtime.close();
process.stdout.write(JSON.stringify({ text: result.content[0].text, task: typeof taskId, statuses }) + '\\n');
`,
    );
    const ran = await runNode(['embed.mjs'], { cwd: project, timeoutMs: 120_000 });
    assert.equal(ran.code, 0, ran.stderr);
    const report = JSON.parse(ran.stdout) as { text: string; task: string; statuses: string[] };
    assert.equal(report.text, '5');
    assert.equal(report.task, 'string', 'the call became a task');
    assert.ok(report.statuses.includes('working:adding'), ran.stdout);
    assert.doesNotMatch(ran.stderr, /ERR_UNKNOWN_FILE_EXTENSION|tsx/);
  });

  it("the README's embed and client examples and getting-started's client example run as written with plain node", async () => {
    // Each in a folder of its own: both use the default store (./.taskvisor), and a store has one owner.
    const readme = join(project, 'readme');
    const started = join(project, 'getting-started');
    await mkdir(readme);
    await mkdir(started);
    // README "Embed it": a server of its own (it keeps listening), called by README "Call tools".
    const embedPort = await freePort();
    await writeFile(join(readme, 'embed.mjs'), await docExample('README.md', 'Embed it', embedPort));
    const embed = spawnCommand(process.execPath, ['embed.mjs'], { cwd: readme });
    // getting-started "Call it from code" calls the demo tools: the packaged demo server.
    const demoPort = await freePort();
    const demo = spawnCommand(
      process.execPath,
      [join(project, 'node_modules', '.bin', 'taskvisor'), 'serve', '--demo', '--http', `127.0.0.1:${demoPort}`],
      { cwd: started },
    );
    try {
      await demo.waitForOutput(SERVING, { stream: 'stderr', timeoutMs: 60_000 });
      await writeFile(
        join(readme, 'client.mjs'),
        `${await docExample('README.md', 'Call tools', embedPort)}process.stdout.write(JSON.stringify(result) + '\\n');\n`,
      );
      // The server is up once it answers: the example connects once.
      const client = await waitForAnswer(() => runNode(['client.mjs'], { cwd: readme, timeoutMs: 120_000 }));
      assert.equal(client.code, 0, `${client.stderr}\nthe embedding server: ${embed.stderr}`);
      assert.match(client.stdout, /^working: Adding slowly$/m, 'onStatus saw the task working');
      assert.match(client.stdout, /^completed$/m, 'onStatus saw the task complete, with no message to print');
      assert.doesNotMatch(client.stdout, /undefined/, 'the example prints nothing undefined');
      assert.deepEqual(JSON.parse(client.stdout.trim().split('\n').at(-1)!).content, [{ type: 'text', text: '3' }]);

      await writeFile(
        join(started, 'client.mjs'),
        `${await docExample('docs/getting-started.md', 'Call it from code', demoPort)}process.stdout.write(JSON.stringify(greeting) + '\\n');\n`,
      );
      const call = await runNode(['client.mjs'], { cwd: started, timeoutMs: 120_000 });
      assert.equal(call.code, 0, call.stderr);
      assert.match(call.stdout, /^working: Sleeping for 5000 ms$/m, call.stdout);
      assert.deepEqual(JSON.parse(call.stdout.trim().split('\n').at(-1)!).content, [{ type: 'text', text: 'Hello, Ada!' }]);
    } finally {
      await demo.kill('SIGTERM');
      await embed.kill('SIGTERM');
    }
  });

  it('a TypeScript consumer type-checks against the shipped declarations', async () => {
    await writeFile(
      join(project, 'consumer.ts'),
      `import { createRuntime, defineTool, ToolError, type ToolContext, type TaskvisorRuntime } from 'taskvisor';
import { MemoryTaskStore, type TaskStore } from 'taskvisor/stores';
const store: TaskStore = new MemoryTaskStore();
const runtime: TaskvisorRuntime = createRuntime({ store });
const tool = defineTool('t', {}, async (_args: Record<string, unknown>, ctx: ToolContext) => {
  ctx.setStatus('x');
  if (ctx.signal.aborted) throw new ToolError(-32000, 'stopped');
  return 'ok';
});
runtime.use(tool);
// @ts-expect-error: the declarations are precise enough to refuse this
createRuntime({ store: 'not a store' });
`,
    );
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'ES2022',
          skipLibCheck: true,
          types: [],
        },
        files: ['consumer.ts'],
      }),
    );
    const tsc = join(REPO_ROOT, 'node_modules', 'typescript-native', 'bin', 'tsc');
    const checked = await runNode([tsc, '-p', 'tsconfig.json'], { cwd: project, timeoutMs: 120_000 });
    assert.equal(checked.code, 0, `${checked.stdout}${checked.stderr}`);
  });

  it('npx taskvisor serve --demo serves the demo tools with plain node; --help works; a .ts tool module asks for tsx', async () => {
    const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', NODE_OPTIONS: '' };
    const help = await run('npx', ['--offline', '--no', 'taskvisor', 'serve', '--help'], { cwd: project, env, timeout: 60_000 });
    assert.match(help.stdout, /^Usage: taskvisor serve/);

    const child = spawnCommand('npx', ['--offline', '--no', 'taskvisor', 'serve', '--demo', '--http', '127.0.0.1:0'], {
      cwd: project,
      env,
      group: true,
    });
    try {
      const [, url] = await child.waitForOutput(SERVING, { stream: 'stderr', timeoutMs: 60_000 });
      const client = await TasksClient.connect({ url: url! });
      try {
        const tools = (await client.listTools()).map((tool) => tool.name).sort();
        assert.deepEqual(tools, ['echo', 'fail', 'hello_world', 'sleep', 'tool_error']);
        let taskId = '';
        const result = await client.callTool('sleep', { ms: 300, message: 'rested' }, { onTask: (id) => (taskId = id) });
        assert.equal((result.content as Array<{ text?: string }>)[0]?.text, 'rested');
        assert.notEqual(taskId, '', 'the call became a task');
      } finally {
        await client.close();
      }
    } finally {
      await child.kill('SIGTERM');
    }

    // A .js tool module needs no loader; a .ts one names what to install.
    await writeFile(
      join(project, 'tools.mjs'),
      `import { defineTool } from 'taskvisor';\nexport default [defineTool('hi', {}, () => 'hi')];\n`,
    );
    await writeFile(join(project, 'tools.ts'), `export default [];\n`);
    await writeFile(join(project, 'js.yaml'), 'store: { kind: memory }\ntools:\n  - ./tools.mjs\n');
    await writeFile(join(project, 'ts.yaml'), 'store: { kind: memory }\ntools:\n  - ./tools.ts\n');
    const js = spawnCommand('npx', ['--offline', '--no', 'taskvisor', 'serve', '--config', 'js.yaml', '--http', '127.0.0.1:0'], {
      cwd: project,
      env,
      group: true,
    });
    try {
      await js.waitForOutput(/1 tools \(hi\)/, { stream: 'stderr', timeoutMs: 60_000 });
    } finally {
      await js.kill('SIGTERM');
    }
    const ts = await runNode(
      [join(project, 'node_modules', '.bin', 'taskvisor'), 'serve', '--config', 'ts.yaml', '--http', '127.0.0.1:0'],
      {
        cwd: project,
        env,
      },
    );
    assert.equal(ts.code, 1, ts.stderr);
    assert.match(
      ts.stderr,
      /tools\.ts: TypeScript tool modules need the tsx loader: install it next to taskvisor \(npm install --save-dev tsx\)/,
    );
    assert.deepEqual((await readdir(join(project, 'node_modules'))).includes('tsx'), false);
  });
});
