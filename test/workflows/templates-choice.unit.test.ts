/**
 * Which template language a file gets, and the load-time check of Go
 * templates: a Go template that would fail to parse (or call an undefined
 * function, or use an undeclared variable) is refused when the file loads,
 * with file:line:col and the field — never first at run time.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseWorkflow, WorkflowError } from '../../src/workflows/index.js';

const refused = (text: string): string => {
  try {
    parseWorkflow(text, 'wf.yaml');
  } catch (error) {
    assert.ok(error instanceof WorkflowError);
    return error.message;
  }
  assert.fail('expected the file to be refused');
};

describe('template language', () => {
  it("muster's resource shape is Go; plain files are Go when every template parses as Go, else JSONata", () => {
    const muster = parseWorkflow(
      'kind: Workflow\nmetadata: { name: m }\nspec:\n  steps:\n    - { id: a, tool: t, args: { v: "{{ .input.x }}" } }\n',
      'm.yaml',
    );
    assert.equal(muster.templates, 'go');
    const plainGo = parseWorkflow('steps:\n  - { id: a, tool: t, args: { v: "{{ eq .input.x \\"y\\" }}" } }\n', 'p.yaml');
    assert.equal(plainGo.templates, 'go');
    const jsonata = parseWorkflow('steps:\n  - { id: a, tool: t, args: { v: "{{ input.x = \'y\' }}" } }\n', 'j.yaml');
    assert.equal(jsonata.templates, 'jsonata');
    const forced = parseWorkflow('templates: jsonata\nsteps:\n  - { id: a, tool: t, args: { v: "{{ .input.x }}" } }\n', 'f.yaml');
    assert.equal(forced.templates, 'jsonata');
  });

  it('a Go file with an unknown function, an undeclared variable or a syntax error is refused at load, naming line:col and field', () => {
    const unknownFunction = refused('templates: go\nsteps:\n  - id: a\n    tool: t\n    args: { v: "{{ lenn .results.x.items }}" }\n');
    assert.match(unknownFunction, /wf\.yaml:5:\d+: steps\[0\]\.args\.v: invalid Go template .*function "lenn" not defined/);
    assert.match(refused('templates: go\nsteps:\n  - { id: a, tool: t, args: { v: "{{ $x }}" } }\n'), /undefined variable "\$x"/);
    assert.match(refused('templates: go\nsteps:\n  - { id: a, tool: t, args: { v: "{{ if .x }}open" } }\n'), /has no \{\{end\}\}/);
    assert.match(
      refused(
        'kind: Workflow\nmetadata: { name: m }\nspec:\n  steps:\n    - id: a\n      condition: { template: "{{ eq .input.env }" }\n      tool: t\n',
      ),
      /spec\.steps\[0\]\.condition\.template: invalid Go template/,
    );
  });
});
