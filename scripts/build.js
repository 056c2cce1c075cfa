#!/usr/bin/env node
/**
 * `npm run build` (also run by `prepack`, so `npm pack` and `npm publish` ship
 * a fresh dist/, and installing the package runs no script of ours): compiles
 * src/, machines/ and the demo tools to dist/ as ESM JavaScript with .d.ts,
 * then copies the demo config with its tool module renamed to the compiled
 * one, and bundles the CLI into dist/cli/ with esbuild. No source maps: they
 * would point at TypeScript the package does not ship, and the CLI bundle's
 * would carry every bundled dependency's source (two thirds of the tarball).
 * Plain JavaScript, so it needs nothing but the compiler and esbuild.
 */
import { spawnSync } from 'node:child_process';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

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

// The CLI as one bundle (MCP hosts spawn `taskvisor serve --stdio` for every
// conversation). Resolving and compiling ~400 module files cost a third of its cold start; a
// bundle of the compiled CLI with its pure-JS dependencies, split where the CLI imports on demand
// (the chunks of other commands and transports load only when used), does not.
// Left out, loaded from node_modules: native modules, optional peers (the user's own
// instance), and what is required at run time by name (prom-client, Ajv).
const cliOut = join(root, 'dist', 'cli');
await build({
  entryPoints: {
    taskvisor: join(root, 'dist', 'src', 'cli', 'run.js'),
    // The demo tools share the CLI's chunks (zod, defineTool): `serve --demo` loads one zod, not two.
    'demo-tools': join(root, 'dist', 'examples', 'demo', 'tools.js'),
  },
  outdir: cliOut,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  sourcemap: false,
  logLevel: 'warning',
  external: [
    'better-sqlite3',
    'better-sqlite3-node22',
    'pg',
    'pg-native',
    '@opentelemetry/api',
    'tsx',
    '@statelyai/inspect',
    'bufferutil',
    'utf-8-validate',
  ],
  // CommonJS dependencies in an ES module bundle call require() for Node's own modules.
  banner: {
    js: "import { createRequire as __taskvisorCreateRequire } from 'node:module';\nconst require = __taskvisorCreateRequire(import.meta.url);",
  },
  plugins: [
    {
      // The SDK's Node shims load its bundled Ajv (15-23 ms) for a validator that only a JSON Schema needs: the
      // bundle's SDK gets them from src/cli/sdkShims.ts, which loads the SDK's own validator on first use.
      name: 'sdk-validator-on-demand',
      setup(bundler) {
        const shims = join(root, 'dist', 'src', 'cli', 'sdkShims.js');
        bundler.onResolve({ filter: /^@modelcontextprotocol\/server\/_shims$/ }, (args) =>
          args.importer === shims ? undefined : { path: shims },
        );
      },
    },
    {
      // zod's namespace (`z`, and the SDK's `import * as z`) re-exports every locale, which keeps all
      // of them (~40 modules, a third of zod's bytes) in the bundle although nothing in the CLI
      // switches zod's language: the bundle's zod has English, its default, only.
      name: 'zod-english-only',
      setup(bundler) {
        bundler.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
          /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer)
            ? { path: join(dirname(args.importer), '..', 'locales', 'en.js'), namespace: 'zod-locales' }
            : undefined,
        );
        bundler.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
          contents: `export { default as en } from ${JSON.stringify(args.path)};\n`,
          resolveDir: dirname(args.path),
          loader: 'js',
        }));
      },
    },
    {
      // A compiled module finds files next to itself (the demo config, the dashboard's assets)
      // through import.meta.url: it keeps meaning that module's place in dist/, not the chunk's.
      name: 'keep-import-meta-url',
      setup(bundler) {
        bundler.onLoad({ filter: /[\\/]dist[\\/].*\.js$/ }, async (args) => {
          const text = await readFile(args.path, 'utf8');
          if (!text.includes('import.meta.url')) return undefined;
          const place = relative(cliOut, args.path).split('\\').join('/');
          return { contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(place)}, import.meta.url).href`), loader: 'js' };
        });
      },
    },
  ],
});

// The demo config's ./tools.js hands over to the bundled demo tools.
await writeFile(
  new URL('examples/demo/tools.js', dist),
  "// The demo tools, bundled with the CLI so that they share its modules.\n// Their source: examples/demo/tools.ts in the repository.\nexport { default } from '../../cli/demo-tools.js';\n",
);

// The demo config names ./tools.ts; the package holds ./tools.js.
const demoConfig = await readFile(new URL('../examples/demo/taskvisor.yaml', import.meta.url), 'utf8');
const builtConfig = demoConfig.replace(/^(\s*-\s*)\.\/tools\.ts\s*$/m, '$1./tools.js');
if (builtConfig === demoConfig) {
  process.stderr.write('build: examples/demo/taskvisor.yaml no longer lists ./tools.ts; update scripts/build.js\n');
  process.exit(1);
}
await mkdir(new URL('examples/demo/', dist), { recursive: true });
await writeFile(new URL('examples/demo/taskvisor.yaml', dist), builtConfig);
// The dashboard's static files are read next to the compiled module that serves them.
await cp(new URL('../src/operations/dashboard/', import.meta.url), new URL('src/operations/dashboard/', dist), { recursive: true });
process.stderr.write('build: dist/ written\n');
