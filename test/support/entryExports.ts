/**
 * What each package entry (`taskvisor`, `taskvisor/<subpath>`) exports, read
 * from its source file with TypeScript's parser only (no type checking: it
 * stays fast). Used by the docs tests that compare pages with the real API.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from './processes.js';

/** The names a module exports, from its export declarations (the entries have no `export *`). */
export function exportedNames(file: string): { values: string[]; types: string[] } {
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

/** Each public specifier (`taskvisor`, `taskvisor/transports`, …) with the source file of its entry. */
export function packageEntries(): Map<string, string> {
  const packageJson = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { types: string }>;
  };
  const entries = new Map<string, string>();
  for (const [subpath, target] of Object.entries(packageJson.exports)) {
    if (typeof target === 'string') continue; // ./package.json
    const specifier = subpath === '.' ? 'taskvisor' : `taskvisor/${subpath.slice(2)}`;
    entries.set(specifier, join(REPO_ROOT, target.types.replace('./dist/', '').replace(/\.d\.ts$/, '.ts')));
  }
  return entries;
}
