/**
 * `npm run docs:architecture`: redraws the layer picture in
 * docs/architecture.md from `.dependency-cruiser.cjs`'s layer list. `--check`
 * changes nothing and exits 1 when the page is out of date.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { updateArchitectureDocs, type Layer } from '../src/inspection/architectureDocs.js';

const DOCS = fileURLToPath(new URL('../docs/architecture.md', import.meta.url));
const layers = (createRequire(import.meta.url)('../.dependency-cruiser.cjs') as { layers: Layer[] }).layers;
const before = await readFile(DOCS, 'utf8');
const after = updateArchitectureDocs(before, layers);
if (after === before) process.stderr.write('docs/architecture.md is up to date\n');
else if (process.argv.includes('--check')) {
  process.stderr.write('docs/architecture.md is out of date: run npm run docs:architecture\n');
  process.exitCode = 1;
} else {
  await writeFile(DOCS, after);
  process.stderr.write('docs/architecture.md: layers redrawn\n');
}
