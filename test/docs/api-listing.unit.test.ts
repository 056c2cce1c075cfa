/**
 * docs/api.md lists the public API: for every package.json "exports" subpath,
 * one table row naming exactly what that entry exports, values and types. This fails when an
 * entry gains or loses an export the row does not show, or a subpath has no row.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { exportedNames, packageEntries } from '../support/entryExports.js';
import { REPO_ROOT } from '../support/processes.js';

const api = readFileSync(join(REPO_ROOT, 'docs', 'api.md'), 'utf8');

describe('docs/api.md', () => {
  for (const [specifier, source] of packageEntries()) {
    it(`lists exactly what ${specifier} exports`, () => {
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
