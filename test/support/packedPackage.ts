/**
 * The package as `npm pack` makes it (prepack builds dist/), for the tests
 * that install it into a fresh project: test/package/pack-install and
 * test/docs/doc-examples.
 *
 * Packing rebuilds dist/ in the repository, so two test files packing at
 * once would delete each other's build: packing holds a lock (a directory
 * under .cache/, created atomically). The tarball and npm's report of it are
 * kept there under a digest of everything the build reads, so the second
 * file of a run (or a rerun with nothing changed) installs the same tarball
 * without building again.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './processes.js';

const run = promisify(execFile);
/** npm pack builds (tsc) and packs: generous on a loaded machine. */
export const PACK_TIMEOUT_MS = 240_000;
const CACHE = join(REPO_ROOT, '.cache', 'packed');
const LOCK = join(REPO_ROOT, '.cache', 'packed.lock');

/** What `npm pack --json` reports of a tarball. */
export interface PackReport {
  filename: string;
  size: number;
  unpackedSize: number;
  files: { path: string }[];
}

/** The files and folders the build and the tarball are made of. */
const INPUTS = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'README.md',
  'scripts/build.js',
  'src',
  'machines',
  'examples',
  'bin',
  'docs',
];

/** A digest of every input file's path and bytes. */
function inputsDigest(): string {
  const hash = createHash('sha256');
  const visit = (path: string): void => {
    const absolute = join(REPO_ROOT, path);
    let children: string[] | undefined;
    try {
      children = readdirSync(absolute).sort();
    } catch {
      children = undefined;
    }
    if (children === undefined) {
      if (!existsSync(absolute)) return;
      hash.update(`${path}\0`).update(readFileSync(absolute)).update('\0');
      return;
    }
    for (const child of children) if (child !== 'node_modules' && child !== '.taskvisor') visit(join(path, child));
  };
  for (const input of INPUTS) visit(input);
  return hash.digest('hex').slice(0, 16);
}

async function withLock<T>(work: () => Promise<T>): Promise<T> {
  await mkdir(join(REPO_ROOT, '.cache'), { recursive: true });
  const deadline = Date.now() + PACK_TIMEOUT_MS;
  for (;;) {
    try {
      await mkdir(LOCK);
      await writeFile(join(LOCK, 'pid'), String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      // A holder that died (a test run killed mid-pack) leaves the lock behind: it is taken over.
      const holder = Number(await readFile(join(LOCK, 'pid'), 'utf8').catch(() => '0'));
      if (holder > 0 && !alive(holder)) await rm(LOCK, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`waited ${PACK_TIMEOUT_MS} ms for ${LOCK} (held by pid ${holder})`);
      // The holder ends with no event this process can wait on: poll.
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  try {
    return await work();
  } finally {
    await rm(LOCK, { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The packed tarball (copied into `destination`) and npm's report of it: packed now, or the one
 * packed from the same inputs before.
 */
export async function packedTarball(destination: string): Promise<{ tarball: string; report: PackReport }> {
  return withLock(async () => {
    const digest = inputsDigest();
    const cached = join(CACHE, digest);
    if (!existsSync(join(cached, 'report.json'))) {
      await rm(CACHE, { recursive: true, force: true });
      await mkdir(cached, { recursive: true });
      // --json: the file list of the very tarball installed (prepack's output goes to stderr).
      const pack = await run('npm', ['pack', '--json', '--pack-destination', cached], {
        cwd: REPO_ROOT,
        timeout: PACK_TIMEOUT_MS,
        maxBuffer: 16 * 1024 * 1024,
      });
      const [report] = JSON.parse(pack.stdout) as [PackReport];
      await writeFile(join(cached, 'report.json'), JSON.stringify(report));
    }
    const report = JSON.parse(await readFile(join(cached, 'report.json'), 'utf8')) as PackReport;
    const tarball = join(destination, report.filename);
    await copyFile(join(cached, report.filename), tarball);
    return { tarball, report };
  });
}

/**
 * Unpacks `tarball` as `project`/node_modules/taskvisor and links its runtime dependencies and
 * `extra` packages from this repository's node_modules, as npm would place them
 * (`npm install <tarball>` resolves ~80 packuments: it takes minutes on a loaded machine even
 * offline), and its bins into node_modules/.bin.
 */
export async function installLinked(tarball: string, project: string, extra: readonly string[] = []): Promise<void> {
  const target = join(project, 'node_modules', 'taskvisor');
  await mkdir(target, { recursive: true });
  await run('tar', ['xzf', tarball, '-C', target, '--strip-components=1']);
  const manifest = JSON.parse(await readFile(join(target, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    bin: Record<string, string>;
  };
  for (const name of [...Object.keys(manifest.dependencies), ...extra]) {
    const link = join(project, 'node_modules', name);
    if (existsSync(link)) continue;
    await mkdir(join(link, '..'), { recursive: true });
    await symlink(join(REPO_ROOT, 'node_modules', name), link, 'dir');
  }
  await mkdir(join(project, 'node_modules', '.bin'), { recursive: true });
  for (const [command, file] of Object.entries(manifest.bin)) {
    await symlink(join('..', 'taskvisor', file), join(project, 'node_modules', '.bin', command));
  }
}
