/**
 * `npm run docs:machines`: regenerates the Mermaid diagrams in docs/machines.md
 * from the machines themselves (the blocks between `<!-- generated:NAME:start -->`
 * and `<!-- generated:NAME:end -->`). `--check` changes nothing and exits 1 when
 * the docs are out of date.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { MACHINES } from '../machines/index.js';
import { updateMachineDocs } from '../src/inspection/machineDocs.js';

const DOCS = fileURLToPath(new URL('../docs/machines.md', import.meta.url));
const check = process.argv.includes('--check');

const before = await readFile(DOCS, 'utf8');
const { text, updated, added } = updateMachineDocs(before, MACHINES);
const changed = [...updated, ...added.map((name) => `${name} (new section)`)];
if (text === before) {
  process.stderr.write(`docs/machines.md is up to date (${MACHINES.map((entry) => entry.name).join(', ')})\n`);
} else if (check) {
  process.stderr.write(`docs/machines.md is out of date for: ${changed.join(', ')}; run npm run docs:machines\n`);
  process.exitCode = 1;
} else {
  await writeFile(DOCS, text);
  process.stderr.write(`docs/machines.md: regenerated ${changed.join(', ')}\n`);
}
