/**
 * The Go template engine against real Go: every case in gotemplate/cases.json
 * was run through Go 1.19's text/template with sprig 3.2.3 and muster's
 * options (missingkey=error; typed value of a single action), and the results
 * committed as gotemplate/golden.json (scripts/gotemplate-golden.sh). Here the
 * engine must give the same text, the same typed value, and fail where Go
 * fails (at parse time where Go's parse fails).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { compileGoTemplate, TemplateSyntaxError } from '../../src/workflows/index.js';

interface Case {
  name: string;
  template: string;
  data: unknown;
}
interface Golden {
  name: string;
  output?: string;
  typed?: unknown;
  error?: string;
  phase?: 'parse' | 'exec';
}

const dir = new URL('./gotemplate/', import.meta.url);
const cases = JSON.parse(readFileSync(new URL('cases.json', dir), 'utf8')) as Case[];
const golden = new Map((JSON.parse(readFileSync(new URL('golden.json', dir), 'utf8')) as Golden[]).map((g) => [g.name, g]));

/** Where this engine knowingly differs from Go, and why (docs/workflows.md, "Coming from muster"). */
const EXTENSIONS: Record<string, string> = {
  // Hyphenated step ids are referencable (`.results.prod-only.x`): muster ids allow hyphens, Go's parser does not.
  '{{ .results.prod-only.x }}': 'hy',
  '{{ .results.seed.said }} and {{ .results.prod-only.x }}': 'base and hy',
};

/** Where this engine refuses at load time what Go 1.19 accepts or refuses only when run: stricter, never looser. */
const STRICTER = new Set([
  '{{ .input.env | }}', // Go 1.19 ignores a trailing pipe; a dangling `|` is almost certainly a mistake
  '{{ template "x" }}', // named templates do not exist in a workflow field
]);

test('golden files cover every case', () => {
  assert.equal(golden.size, cases.length);
  assert.ok(cases.length >= 200);
});

for (const c of cases) {
  test(`${c.name}: ${c.template}`, () => {
    const want = golden.get(c.name)!;
    if (Object.hasOwn(EXTENSIONS, c.template)) {
      assert.equal(want.phase, 'parse', 'Go refuses it');
      assert.equal(compileGoTemplate(c.template).render(c.data), EXTENSIONS[c.template]);
      return;
    }
    if (STRICTER.has(c.template)) {
      assert.throws(() => compileGoTemplate(c.template), TemplateSyntaxError);
      return;
    }
    if (want.phase === 'parse') {
      assert.throws(() => compileGoTemplate(c.template), TemplateSyntaxError, `Go: ${want.error}`);
      return;
    }
    const template = compileGoTemplate(c.template);
    if (want.phase === 'exec') {
      assert.throws(() => template.render(c.data), `Go: ${want.error}`);
      return;
    }
    assert.equal(template.render(c.data), want.output);
    if (Object.hasOwn(want, 'typed')) assert.deepEqual(template.renderTyped(c.data), want.typed);
  });
}
