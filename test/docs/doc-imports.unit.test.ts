/**
 * Every import from the package in the docs' code blocks names something the
 * entry it imports from really exports (`listenHttp` lives in
 * `taskvisor/transports`, not in `taskvisor`), and only public entries are
 * imported. A page whose example cannot compile as written fails here, with
 * the page, the line and the entry that does export the name.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { exportedNames, packageEntries } from '../support/entryExports.js';
import { REPO_ROOT } from '../support/processes.js';

/** docs/**\/*.md, README.md and the examples' markdown. */
function pages(): string[] {
  const found = [join(REPO_ROOT, 'README.md')];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk(join(REPO_ROOT, 'docs'));
  walk(join(REPO_ROOT, 'examples'));
  return found;
}

/** Each fenced code block with the line (1-based) its first code line is on. */
function codeBlocks(text: string): { code: string; line: number }[] {
  const blocks: { code: string; line: number }[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const fence = /^\s*(```+|~~~+)/.exec(lines[i]!);
    if (!fence) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !lines[end]!.trimStart().startsWith(fence[1]!)) end++;
    blocks.push({ code: lines.slice(start, end).join('\n'), line: start + 1 });
    i = end;
  }
  return blocks;
}

const entries = packageEntries();
const exportsOf = new Map([...entries].map(([specifier, file]) => [specifier, exportedNames(file)]));
const allNames = (specifier: string) => {
  const names = exportsOf.get(specifier)!;
  return new Set([...names.values, ...names.types]);
};

describe('imports from taskvisor in the docs', () => {
  for (const page of pages()) {
    const name = relative(REPO_ROOT, page);
    const text = readFileSync(page, 'utf8');
    if (!/['"]taskvisor(\/[\w-]+)?['"]/.test(text)) continue;
    it(`${name}: every imported name is exported by the entry it is imported from`, () => {
      const problems: string[] = [];
      for (const block of codeBlocks(text)) {
        const source = ts.createSourceFile('block.ts', block.code, ts.ScriptTarget.ES2022, true);
        for (const statement of source.statements) {
          if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
          const specifier = statement.moduleSpecifier.text;
          if (specifier !== 'taskvisor' && !specifier.startsWith('taskvisor/')) continue;
          const line = block.line + source.getLineAndCharacterOfPosition(statement.getStart(source)).line;
          if (!entries.has(specifier)) {
            problems.push(`${name}:${line}: '${specifier}' is not a public entry (package.json "exports")`);
            continue;
          }
          const bindings = statement.importClause?.namedBindings;
          if (!bindings || !ts.isNamedImports(bindings)) continue;
          for (const element of bindings.elements) {
            const imported = (element.propertyName ?? element.name).text;
            if (allNames(specifier).has(imported)) continue;
            const home = [...entries.keys()].filter((other) => allNames(other).has(imported));
            problems.push(
              `${name}:${line}: '${specifier}' does not export ${imported}` +
                (home.length ? ` (import it from ${home.map((h) => `'${h}'`).join(' or ')})` : ''),
            );
          }
        }
      }
      assert.deepEqual(problems, []);
    });
  }
});
