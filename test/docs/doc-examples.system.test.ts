/**
 * Every code block of README.md and docs/*.md, extracted from the markdown
 * and run against the package as a user gets it: `npm pack` (shared with
 * test/package, test/support/packedPackage.ts), installed into a fresh ESM
 * project, imported as `taskvisor` and `taskvisor/…`.
 *
 * What happens to a block, by its fence's language:
 * - ts / js: written as a file of the page's folder and type-checked against
 *   the shipped declarations (one compiler run for all pages), then run with
 *   node (tsx as the loader, as the docs tell TypeScript users): it must end
 *   with exit 0. The documented ports (3000, 3001, 3002, 4242, 9464) become
 *   free ports, the same for every block of a page.
 * - yaml: a config is loaded as `serve` loads it (schema, unknown keys,
 *   header values); a workflow (a top-level `steps:`) is parsed as
 *   `workflows validate` parses it.
 * - sh (and plain or `text` blocks): each `taskvisor …` / `npx taskvisor …`
 *   line must name a command of the installed CLI and only options its
 *   `--help` lists. Shell blocks with no taskvisor command must be skipped
 *   explicitly.
 * - json, mermaid, plain text: shown, not run (listed).
 *
 * A directive changes that: an HTML comment on the line before the fence,
 * `<!-- docs-test: KIND ARGUMENT -->`:
 * - `skip REASON`: not run at all; the test lists it with its reason.
 * - `fragment [REASON]` (ts): only type-checked, with the names the page
 *   defines elsewhere (`runtime`, `entry`, `z`, `req`, …) declared for it.
 * - `file NAME`: written as NAME (instead of block-LINE.ts) in the page's
 *   folder before anything of the page runs, so a config block can name it
 *   (`tools: [./tools.ts]`) and a tokens file can be found. ts files are still
 *   checked and run (imported).
 * - `serve` (ts): the block is a server: it is started, must listen on its
 *   port (serving HTTP: answer tools/list at /mcp), and keeps running
 *   while the page's later blocks (a client of it) run. (yaml): `taskvisor serve --config` must start with the config
 *   (with `--store memory` unless it names a store).
 * - `run` (sh): the block's taskvisor command lines are also run, in order,
 *   in the page's folder with `PORT` set to the page's 3000: each must exit
 *   0, or for `serve`, start serving (then it is stopped). Other commands of
 *   the block (`dot`, `curl`) are not run.
 * - `demo` (ts, sh): as without it (sh: as `run`), with the packaged demo
 *   server (`taskvisor serve --demo`) serving on the page's port 3000 first.
 * Blocks that belong together are on one page, in page order: one folder,
 * one set of ports, servers kept until the page ends.
 */
import assert from 'node:assert/strict';
import { readFile, mkdir, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TasksClient } from '../../src/client/index.js';
import { docPages, pageBlocks, type DocBlock } from '../support/docBlocks.js';
import { installLinked, PACK_TIMEOUT_MS, packedTarball } from '../support/packedPackage.js';
import { freePort, runNode, spawnNode, tempDir, waitFor, type Child } from '../support/processes.js';
import { planBlock, type BlockPlan } from './examples/blockPlan.js';
import { checkCommands, type CommandLine } from './examples/shellCommands.js';
import { typecheckBlocks, typescriptSource } from './examples/typescriptBlocks.js';

/** What the docs' examples import besides taskvisor, linked into the project as a user installs them. */
const EXAMPLE_DEPENDENCIES = [
  'zod',
  'tsx',
  'express',
  'fastify',
  'koa',
  '@koa/bodyparser',
  'hono',
  '@hono/node-server',
  '@types/node',
  '@types/express',
  '@types/koa',
];
const DOC_PORTS = [3000, 3001, 3002, 4242, 9464];
const SERVING = /serving MCP over Streamable HTTP at (\S+)\n/;
/** One block's run, killed past this: the slowest documented call sleeps 5 s, a loaded machine takes 20 s to start tsx. */
const RUN_TIMEOUT_MS = 120_000;

interface Page {
  page: string;
  folder: string;
  ports: Map<number, number>;
  blocks: { block: DocBlock; plan: BlockPlan }[];
}

let dir: Awaited<ReturnType<typeof tempDir>>;
let project = '';
let cli = '';
const pages: Page[] = [];
const env = { ...process.env, NODE_OPTIONS: '', LOG_LEVEL: 'warn' };

const where = (block: DocBlock) => `${block.page}:${block.line}`;

/** The block's code with the documented ports replaced by the page's own. */
function withPorts(code: string, ports: Map<number, number>): string {
  let replaced = code;
  for (const [documented, actual] of ports) replaced = replaced.replace(new RegExp(`\\b${documented}\\b`, 'g'), String(actual));
  return replaced;
}

before(
  async () => {
    dir = await tempDir('taskvisor-docs-');
    project = join(dir.path, 'project');
    await mkdir(project);
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'docs-examples', version: '1.0.0', type: 'module', private: true }),
    );
    const { tarball } = await packedTarball(dir.path);
    await installLinked(tarball, project, EXAMPLE_DEPENDENCIES);
    cli = join(project, 'node_modules', '.bin', 'taskvisor');
    for (const page of docPages()) {
      const folder = join(project, 'pages', page.replace(/\.md$/, '').replaceAll('/', '_'));
      await mkdir(folder, { recursive: true });
      const ports = new Map<number, number>();
      for (const port of DOC_PORTS) ports.set(port, await freePort());
      const blocks = pageBlocks(page).map((block) => ({ block, plan: planBlock(block) }));
      for (const { block, plan } of blocks) {
        if (plan.action === 'code') {
          const source = typescriptSource({ ...block, code: plan.run === 'none' ? block.code : withPorts(block.code, ports) });
          await writeFile(join(folder, plan.file), source);
        } else if (plan.action === 'config' || plan.action === 'workflow' || plan.action === 'write') {
          // 0600: a tokens file is refused otherwise, as the docs say.
          await writeFile(join(folder, plan.file), `${block.code}\n`, { mode: 0o600 });
        }
      }
      pages.push({ page, folder, ports, blocks });
    }
  },
  { timeout: PACK_TIMEOUT_MS + 60_000 },
);
after(async () => {
  await dir?.remove();
});

describe('the docs’ code blocks, against the packed package', { concurrency: 3 }, () => {
  it('every block has a language the test runs, or a directive saying what to do with it', () => {
    const invalid = pages.flatMap(({ blocks }) =>
      blocks.flatMap(({ block, plan }) => (plan.action === 'invalid' ? [`${where(block)}: ${plan.reason}`] : [])),
    );
    assert.deepEqual(invalid, []);
  });

  it('every TypeScript block type-checks against the shipped declarations', { timeout: 240_000 }, async () => {
    const files = new Map<string, DocBlock>();
    for (const { folder, blocks } of pages) {
      for (const { block, plan } of blocks)
        if (plan.action === 'code' && plan.file.endsWith('.ts')) files.set(join(folder, plan.file), block);
    }
    assert.ok(files.size > 10, `${files.size} TypeScript blocks`);
    assert.deepEqual(await typecheckBlocks(project, files), []);
  });

  it('every config block loads, and every workflow block parses', { timeout: 120_000 }, async () => {
    const checks: { file: string; kind: string; at: string }[] = [];
    for (const { folder, blocks } of pages) {
      for (const { block, plan } of blocks) {
        if (plan.action === 'config' || plan.action === 'workflow')
          checks.push({ file: join(folder, plan.file), kind: plan.action, at: where(block) });
      }
    }
    assert.ok(checks.length > 5, `${checks.length} yaml blocks`);
    // One process for all of them: the loader `serve` uses (not a public entry), and parseWorkflow.
    await writeFile(
      join(project, 'check-yaml.mjs'),
      `import { readFile } from 'node:fs/promises';
import { parseWorkflow } from 'taskvisor/workflows';
const { loadConfig } = await import(new URL('./node_modules/taskvisor/dist/src/config/loadConfig.js', import.meta.url));
const results = [];
for (const { file, kind } of JSON.parse(process.argv[2])) {
  try {
    if (kind === 'workflow') parseWorkflow(await readFile(file, 'utf8'), file);
    else await loadConfig(file);
    results.push(null);
  } catch (error) {
    results.push(error.message);
  }
}
process.stdout.write(JSON.stringify(results));
`,
    );
    const ran = await runNode(['check-yaml.mjs', JSON.stringify(checks)], { cwd: project, env, timeoutMs: 60_000 });
    assert.equal(ran.code, 0, ran.stderr);
    const results = JSON.parse(ran.stdout) as (string | null)[];
    const failed = checks.flatMap((check, i) => (results[i] === null ? [] : [`${check.at}: ${results[i]}`]));
    assert.deepEqual(failed, []);
  });

  it('every taskvisor command line names a command and options the CLI has', { timeout: 120_000 }, async () => {
    const commands = pages.flatMap(({ blocks }) => blocks.flatMap(({ plan }) => (plan.action === 'commands' ? plan.commands : [])));
    assert.ok(commands.length > 10, `${commands.length} command lines`);
    assert.deepEqual(await checkCommands(cli, project, commands), []);
  });

  it('lists the blocks it does not run, each with its reason', (t) => {
    const notRun: string[] = [];
    for (const { blocks } of pages) {
      for (const { block, plan } of blocks) {
        if (plan.action === 'not run') notRun.push(`${where(block)} (${block.lang || 'plain'}): ${plan.reason}`);
        if (plan.action === 'code' && plan.run === 'none')
          notRun.push(`${where(block)} (${block.lang}): type-checked only: ${plan.reason}`);
        if (plan.action === 'commands' && !plan.run)
          notRun.push(`${where(block)} (${block.lang || 'plain'}): command lines checked against --help, not run`);
      }
    }
    const counts = new Map<string, number>();
    for (const { blocks } of pages) {
      for (const { plan } of blocks) counts.set(coverage(plan), (counts.get(coverage(plan)) ?? 0) + 1);
    }
    t.diagnostic(`blocks: ${[...counts].map(([kind, count]) => `${count} ${kind}`).join(', ')}`);
    for (const line of notRun) t.diagnostic(line);
    assert.ok(notRun.every((line) => !line.endsWith(': ')));
  });
});

/** Problems of listing the tools served at `url` with the 2026-07-28 client (none when it answers). */
async function answersMcp(block: DocBlock, url: string): Promise<string[]> {
  try {
    const client = await TasksClient.connect({ url });
    try {
      await client.listTools();
      return [];
    } finally {
      await client.close();
    }
  } catch (error) {
    return [`${where(block)}: serves no MCP at ${url}: ${(error as Error).message}`];
  }
}

/** What the test does with a block, in a few words (for the listing's counts). */
function coverage(plan: BlockPlan): string {
  switch (plan.action) {
    case 'code':
      return plan.run === 'none' ? 'type-checked only' : `type-checked and ${plan.run === 'serve' ? 'served' : 'run'}`;
    case 'commands':
      return plan.run ? 'commands run' : 'commands checked';
    case 'config':
      return plan.serve ? 'config loaded and served' : 'config loaded';
    default:
      return plan.action;
  }
}

/** Resolves once something accepts TCP connections on 127.0.0.1:`port`. */
function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Runs one taskvisor command line of a `run` block with the installed CLI (ports mapped; `PORT` the
 * page's 3000): it must exit 0, or, for `serve`, start serving (then it is stopped).
 */
async function runCommand({ block, line, words }: CommandLine, folder: string, ports: Map<number, number>): Promise<string[]> {
  const args = [cli, ...words.map((word) => withPorts(word, ports))];
  const commandEnv = { ...env, PORT: String(ports.get(3000)), HOST: '127.0.0.1' };
  const shown = `${block.page}:${line}: taskvisor ${words.join(' ')}`;
  if (words[0] === 'serve') {
    const server = spawnNode(args, { cwd: folder, env: commandEnv });
    try {
      await server.waitForOutput(/serving MCP over/, { stream: 'stderr', timeoutMs: RUN_TIMEOUT_MS });
      return [];
    } catch {
      return [`${shown}: did not start serving: ${server.stderr.trim()}`];
    } finally {
      await server.kill('SIGTERM');
    }
  }
  const ran = await runNode(args, { cwd: folder, env: commandEnv, timeoutMs: RUN_TIMEOUT_MS });
  return ran.code === 0 ? [] : [`${shown}: exited ${ran.code ?? ran.signal}: ${ran.stderr.trim()}`];
}

/** Runs the page's runnable blocks in page order; returns what failed. */
async function runPage({ folder, ports, blocks }: Page): Promise<string[]> {
  const problems: string[] = [];
  const servers: Child[] = [];
  let demo: Child | undefined;
  try {
    for (const { block, plan } of blocks) {
      if (plan.action === 'config' && plan.serve) {
        // A config without a store of its own gets one in memory: the page's other servers may hold ./.taskvisor.
        const store = /^store:/m.test(block.code) ? [] : ['--store', 'memory'];
        const server = spawnNode([cli, 'serve', '--config', plan.file, ...store, '--http', '127.0.0.1:0'], { cwd: folder, env });
        servers.push(server);
        await server.waitForOutput(SERVING, { stream: 'stderr', timeoutMs: RUN_TIMEOUT_MS }).then(
          () => server.kill('SIGTERM'),
          () => problems.push(`${where(block)}: taskvisor serve --config did not start: ${server.stderr.trim()}`),
        );
        continue;
      }
      if ((plan.action === 'code' || plan.action === 'commands') && plan.demo && !demo) {
        demo = spawnNode([cli, 'serve', '--demo', '--store', 'memory', '--http', `127.0.0.1:${ports.get(3000)}`], { cwd: folder, env });
        servers.push(demo);
        await demo.waitForOutput(SERVING, { stream: 'stderr', timeoutMs: RUN_TIMEOUT_MS });
      }
      if (plan.action === 'commands' && plan.run) {
        for (const command of plan.commands) problems.push(...(await runCommand(command, folder, ports)));
        continue;
      }
      if (plan.action !== 'code' || plan.run === 'none') continue;
      const args = plan.file.endsWith('.ts') ? ['--import', 'tsx', plan.file] : [plan.file];
      if (plan.run === 'serve') {
        const code = await readFile(join(folder, plan.file), 'utf8');
        const port = [...ports.values()].find((actual) => code.includes(String(actual)));
        if (port === undefined) {
          problems.push(`${where(block)}: a serve block listens on one of ${DOC_PORTS.join(', ')}`);
          continue;
        }
        const server = spawnNode(args, { cwd: folder, env });
        servers.push(server);
        const exited = server.exited.then(() => false);
        const listening = await waitFor(
          () => Promise.race([accepting(port), exited]).then((up) => up || server.process.exitCode !== null),
          {
            timeoutMs: RUN_TIMEOUT_MS,
            what: `${where(block)} to listen`,
          },
        ).then(() => server.process.exitCode === null);
        if (!listening) problems.push(`${where(block)}: exited before listening: ${server.stderr.trim()}`);
        // A block serving MCP over HTTP answers a real client there.
        else if (/\b(listenHttp|createHttpEntry)\b/.test(code)) problems.push(...(await answersMcp(block, `http://127.0.0.1:${port}/mcp`)));
        continue;
      }
      const ran = await runNode(args, { cwd: folder, env, timeoutMs: RUN_TIMEOUT_MS });
      if (ran.code !== 0)
        problems.push(`${where(block)}: exited ${ran.code ?? ran.signal}: ${ran.stderr.trim().split('\n').slice(0, 6).join('\n')}`);
    }
  } finally {
    await Promise.all(servers.map((server) => server.kill('SIGTERM')));
  }
  return problems;
}

describe('the docs’ runnable blocks run', { concurrency: 3 }, () => {
  for (const page of docPages()) {
    it(`${page}`, { timeout: 600_000 }, async () => {
      const found = pages.find((candidate) => candidate.page === page)!;
      assert.deepEqual(await runPage(found), []);
    });
  }
});
