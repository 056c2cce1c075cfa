#!/usr/bin/env node
/**
 * `npm run build` (also run by `prepare`, so `npm install` in a clone and
 * `npm pack` both produce it): compiles src/, machines/ and the demo tools to
 * dist/ as ESM JavaScript with .d.ts and source maps, then copies the demo
 * config with its tool module renamed to the compiled one (issue 15.1).
 * Plain JavaScript, so it needs nothing but the compiler.
 */
import { spawnSync } from 'node:child_process';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = new URL('../dist/', import.meta.url);

await rm(dist, { recursive: true, force: true });
// typescript-native does not export its bin; it sits in the package folder.
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript-native/package.json')), 'bin', 'tsc');
const compiled = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
if (compiled.status !== 0) {
  process.stderr.write(`build: the compiler failed (exit ${compiled.status ?? compiled.signal})\n`);
  process.exit(1);
}

// The demo config names ./tools.ts; the package holds ./tools.js.
const demoConfig = await readFile(new URL('../examples/demo/taskvisor.yaml', import.meta.url), 'utf8');
const builtConfig = demoConfig.replace(/^(\s*-\s*)\.\/tools\.ts\s*$/m, '$1./tools.js');
if (builtConfig === demoConfig) {
  process.stderr.write('build: examples/demo/taskvisor.yaml no longer lists ./tools.ts; update scripts/build.js\n');
  process.exit(1);
}
await mkdir(new URL('examples/demo/', dist), { recursive: true });
await writeFile(new URL('examples/demo/taskvisor.yaml', dist), builtConfig);
// The dashboard's static files (issue 16.4) are read next to the compiled module that serves them.
await cp(new URL('../src/operations/dashboard/', import.meta.url), new URL('src/operations/dashboard/', dist), { recursive: true });
process.stderr.write('build: dist/ written\n');
