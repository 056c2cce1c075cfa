/**
 * Every import from the package in the docs' code blocks names something the
 * entry it imports from really exports (`listenHttp` lives in
 * `taskvisor/transports`, not in `taskvisor`), and only public entries are
 * imported. A page whose example cannot compile as written fails here, with
 * the page, the line and the entry that does export the name.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { codeBlocks, docPages } from '../support/docBlocks.js';
import { exportedNames, packageEntries } from '../support/entryExports.js';
import { REPO_ROOT } from '../support/processes.js';

const entries = packageEntries();
const exportsOf = new Map([...entries].map(([specifier, file]) => [specifier, exportedNames(file)]));
const allNames = (specifier: string) => {
  const names = exportsOf.get(specifier)!;
  return new Set([...names.values, ...names.types]);
};

describe('imports from taskvisor in the docs', () => {
  for (const name of docPages({ withExamples: true })) {
    const text = readFileSync(join(REPO_ROOT, name), 'utf8');
    if (!/['"]taskvisor(\/[\w-]+)?['"]/.test(text)) continue;
    it(`${name}: every imported name is exported by the entry it is imported from`, () => {
      const problems: string[] = [];
      for (const block of codeBlocks(text)) {
        const source = ts.createSourceFile('block.ts', block.code, ts.ScriptTarget.ES2022, true);
        for (const statement of source.statements) {
          if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
          const specifier = statement.moduleSpecifier.text;
          if (specifier !== 'taskvisor' && !specifier.startsWith('taskvisor/')) continue;
          const line = block.codeLine + source.getLineAndCharacterOfPosition(statement.getStart(source)).line;
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
