/**
 * The library the benchmark measures: the compiled JavaScript a user's
 * `import 'taskvisor'` runs, not the TypeScript sources through tsx.
 *
 * tsx compiles each source file with esbuild's `keepNames`, which wraps every
 * function and class it defines in a `__name(fn, "name")` call: a property
 * definition on each closure the runtime creates per request (2.6% of the
 * server's CPU in a durable-create profile at c=64), a cost the package does
 * not have. So the run first compiles src/ and machines/ with the project's
 * own build settings (tsconfig.build.json, the `tsc` step of `npm run build`)
 * into a folder of its own (bench/.compiled/<pid>/: `npm run build` and the
 * pack test rebuild dist/ and must not pull it from under a running bench),
 * and every bench child process loads it through a resolve hook
 * (bench/compiledRegister.mjs, compiledHooks.mjs) that turns a bench file's `../src/…` import into
 * the compiled file. The bench's own files still run through tsx.
 *
 * `--source` measures the sources through tsx instead.
 */
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

/** The environment variable that hands the compiled folder to the bench's child processes. */
export const COMPILED_ENV = 'TASKVISOR_BENCH_COMPILED';
/** `--import` value that registers the resolve hook (a no-op when {@link COMPILED_ENV} is unset). */
export const COMPILED_IMPORT = fileURLToPath(new URL('compiledRegister.mjs', import.meta.url));

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Compiles the library into bench/.compiled/<pid>/ and sets {@link COMPILED_ENV}
 * for every child spawned from now on; returns the folder, the compile time
 * and a function that removes the folder.
 */
export async function compileLibrary(): Promise<{ dir: string; ms: number; remove(): Promise<void> }> {
  const dir = join(ROOT, 'bench', '.compiled', String(process.pid));
  await rm(dir, { recursive: true, force: true });
  // typescript-native does not export its bin; it sits in the package folder (as in scripts/build.js).
  const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript-native/package.json')), 'bin', 'tsc');
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        tsc,
        '-p',
        join(ROOT, 'tsconfig.build.json'),
        '--outDir',
        dir,
        '--declaration',
        'false',
        '--sourceMap',
        'false',
        '--inlineSources',
        'false',
      ],
      { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] },
    );
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`compiling the library for the bench failed (tsc exit ${code})`)),
    );
  });
  process.env[COMPILED_ENV] = dir;
  return {
    dir,
    ms: performance.now() - started,
    remove: async () => {
      delete process.env[COMPILED_ENV];
      await rm(dir, { recursive: true, force: true });
    },
  };
}
