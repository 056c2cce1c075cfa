/**
 * Cold start: MCP hosts spawn a stdio server for every
 * conversation, so the time from spawn to the first answer counts. Measures
 * `taskvisor serve --stdio --demo` from the built package (the bundled CLI in
 * dist/cli/, plain node: what `npx taskvisor` runs) until its answer to
 * `initialize` arrives, next to `node -e 0` spawned to its exit (Node's own
 * floor) and a bare v2 SDK stdio server (bench/bareStdio.mjs: the floor of
 * any server on the SDK), in interleaved rounds; and, for reference, the same
 * from the TypeScript sources through tsx.
 */
import { spawn } from 'node:child_process';
import { existsSync, statSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { TSX_IMPORT } from './child.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** What bin/taskvisor.js runs from the package. */
const BUILT_CLI = join(ROOT, 'dist', 'cli', 'taskvisor.js');
const BARE_SDK = join(ROOT, 'bench', 'bareStdio.mjs');
const SOURCE_CLI = join(ROOT, 'src', 'cli', 'run.ts');

export interface ColdStartResult {
  /** ms from spawn to the `initialize` answer, built package. */
  built: number[];
  /** ms from spawn to exit of `node -e 0`. */
  floor: number[];
  /** ms from spawn to the answer of a bare v2 SDK stdio server. */
  bare: number[];
  /** ms from spawn to the answer, TypeScript sources through tsx. */
  source: number[];
  /** Whether dist/ was (re)built for this run. */
  rebuilt: boolean;
}

/** Newest modification time under `dir` (recursive), ms. */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/** Builds dist/ when it is missing or older than src/, machines/ or the demo. */
async function ensureBuilt(): Promise<boolean> {
  const sources = Math.max(newest(join(ROOT, 'src')), newest(join(ROOT, 'machines')), newest(join(ROOT, 'examples', 'demo')));
  if (existsSync(BUILT_CLI) && statSync(BUILT_CLI).mtimeMs >= sources) return false;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'scripts', 'build.js')], { stdio: ['ignore', 'inherit', 'inherit'] });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`npm run build failed (exit ${code})`))));
  });
  return true;
}

const INITIALIZE = `${JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
})}\n`;

/** Spawns `args`, writes an initialize request, resolves with ms until the first stdout line, then kills it. */
function timeToFirstAnswer(args: string[], cwd: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdin.end(INITIALIZE);
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (!out.includes('\n')) return;
      const elapsed = performance.now() - started;
      child.kill('SIGKILL');
      if (!out.includes('"result"')) reject(new Error(`unexpected first answer: ${out.slice(0, 200)}`));
      else resolve(elapsed);
    });
    child.once('exit', (code) => {
      if (!out.includes('\n')) reject(new Error(`exited (${code}) before answering: ${err.slice(0, 500)}`));
    });
  });
}

function timeToExit(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { stdio: 'ignore' });
    child.once('exit', (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`exit ${code}`))));
  });
}

export async function runColdStart(rounds: number, sourceRounds: number): Promise<ColdStartResult> {
  const rebuilt = await ensureBuilt();
  const cwd = await mkdtemp(join(tmpdir(), 'taskvisor-coldstart-'));
  const serve = ['serve', '--stdio', '--demo', '--quiet'];
  const result: ColdStartResult = { built: [], floor: [], bare: [], source: [], rebuilt };
  try {
    // One unmeasured run of each warms the file cache (and creates the demo store).
    await timeToFirstAnswer([BUILT_CLI, ...serve], cwd);
    await timeToExit(['-e', '0']);
    await timeToFirstAnswer([BARE_SDK], cwd);
    for (let round = 0; round < rounds; round++) {
      result.floor.push(await timeToExit(['-e', '0']));
      result.bare.push(await timeToFirstAnswer([BARE_SDK], cwd));
      result.built.push(await timeToFirstAnswer([BUILT_CLI, ...serve], cwd));
    }
    for (let round = 0; round < sourceRounds; round++) {
      result.source.push(await timeToFirstAnswer(['--import', TSX_IMPORT, SOURCE_CLI, ...serve], cwd));
    }
  } finally {
    await rm(cwd, { recursive: true, force: true });
  }
  return result;
}
