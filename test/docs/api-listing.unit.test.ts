/**
 * docs/api.md lists the public API: for every package.json "exports" subpath,
 * one table row naming exactly what that entry exports, values and types. This fails when an
 * entry gains or loses an export the row does not show, or a subpath has no row.
 * The entries are read with TypeScript's parser only (no type checking: it stays fast).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { REPO_ROOT } from '../support/processes.js';

/** The names a module exports, from its export declarations (the entries have no `export *`). */
function exportedNames(file: string): { values: string[]; types: string[] } {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, false);
  const values: string[] = [];
  const types: string[] = [];
  const exported = (node: ts.Node) =>
    ts.canHaveModifiers(node) && ts.getModifiers(node)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement)) {
      assert.ok(statement.exportClause && ts.isNamedExports(statement.exportClause), `${file}: export * is not listed here`);
      for (const element of statement.exportClause.elements)
        (statement.isTypeOnly || element.isTypeOnly ? types : values).push(element.name.text);
    } else if ((ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) && exported(statement)) {
      types.push(statement.name.text);
    } else if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) && exported(statement) && statement.name) {
      values.push(statement.name.text);
    } else if (ts.isVariableStatement(statement) && exported(statement)) {
      for (const declaration of statement.declarationList.declarations)
        if (ts.isIdentifier(declaration.name)) values.push(declaration.name.text);
    }
  }
  return { values, types };
}

const packageJson = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { types: string }>;
};
const api = readFileSync(join(REPO_ROOT, 'docs', 'api.md'), 'utf8');

describe('docs/api.md', () => {
  for (const [subpath, target] of Object.entries(packageJson.exports)) {
    if (typeof target === 'string') continue; // ./package.json
    const specifier = subpath === '.' ? 'taskvisor' : `taskvisor/${subpath.slice(2)}`;
    it(`lists exactly what ${specifier} exports`, () => {
      const source = join(REPO_ROOT, target.types.replace('./dist/', '').replace(/\.d\.ts$/, '.ts'));
      const { values, types } = exportedNames(source);
      const row = api.split('\n').find((line) => line.startsWith(`| \`${specifier}\` |`));
      assert.ok(row, `docs/api.md has no row for ${specifier}`);
      // The last column names the exports: values, then "types:" and the types.
      const listed = row.split('|').at(-2)!;
      const [valuePart = '', typePart = ''] = listed.split('types:');
      const names = (part: string) => [...part.matchAll(/`([A-Za-z_$][\w$]*)`/g)].map((match) => match[1]!).sort();
      assert.deepEqual(names(valuePart), [...values].sort(), `${specifier}: values in docs/api.md vs ${source}`);
      assert.deepEqual(names(typePart), [...types].sort(), `${specifier}: types in docs/api.md vs ${source}`);
    });
  }
});
