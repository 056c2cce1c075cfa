/**
 * Workflow file validation (library API): every problem names the file,
 * line:col, path and field; types, enums, patterns, bounds and defaults
 * reach the tool's schema; cycles and duplicate names are refused.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkWorkflowSet, parseWorkflow, workflowTool, ToolInvoker, WorkflowError } from '../../src/workflows/index.js';
import { ToolRegistry } from '../../src/tools/ToolRegistry.js';
import type { z } from 'zod';
import type { JsonObject } from '../../src/core/json.js';

const problems = (text: string, file = 'w.yaml') => {
  try {
    parseWorkflow(text, file);
  } catch (error) {
    assert.ok(error instanceof WorkflowError);
    return error.message;
  }
  assert.fail('expected a WorkflowError');
};

describe('parseWorkflow', () => {
  it('names file, line:col, path and field for each problem', () => {
    assert.match(problems('steps: []\n'), /^w\.yaml:1:8: steps: workflow must have at least one step/);
    assert.match(
      problems('steps:\n  - id: a\n    tool: x\n    input: { message: m, requestedSchema: { type: object, properties: {} } }\n'),
      /w\.yaml:2:5: steps\[0\]: tool, input, forEach and parallel are mutually exclusive: a step needs exactly one of them/,
    );
    assert.match(
      problems('steps:\n  - { id: a, tool: x }\n  - { id: a, tool: y }\n'),
      /w\.yaml:3:\d+: steps\[1\]\.id: duplicate step id "a" \(also at steps\[0\]\)/,
    );
    assert.match(problems('steps:\n  - { id: "bad id", tool: x }\n'), /steps\[0\]\.id: step ids are 1-63 characters/);
    assert.match(
      problems('args:\n  n: { type: integer, default: "x" }\nsteps:\n  - { id: a, tool: x }\n'),
      /w\.yaml:2:\d+: args\.n\.default: /,
    );
    assert.match(
      problems('args:\n  s: { type: string, pattern: "(" }\nsteps:\n  - { id: a, tool: x }\n'),
      /args\.s\.pattern: Invalid regular expression/,
    );
    assert.match(
      problems('steps:\n  - { id: a, tool: x, args: { v: "{{ input. }}" } }\noutput: { r: "{{ ( }}" }\n'),
      /steps\[0\]\.args\.v: invalid expression[\s\S]*output\.r: invalid expression/,
    );
    assert.match(problems('steps:\n  - id: a\n    tool: x\n    bogus: 1\n'), /w\.yaml:4:5: steps\[0\]\.bogus: unknown field/);
    assert.match(problems('steps: [\n'), /w\.yaml:\d+:\d+: invalid YAML/);
  });

  it('args become the input schema: types, enum, pattern, bounds, defaults, required', () => {
    const definition = parseWorkflow(
      'args:\n  env: { type: string, enum: [a, b], required: true }\n  v: { type: string, pattern: "^\\\\d+$" }\n  n: { type: integer, minimum: 1, maximum: 3, default: 2 }\nsteps:\n  - { id: a, tool: x }\n',
      'typed.yaml',
    );
    assert.equal(definition.name, 'typed');
    const tool = workflowTool(definition, 'workflow_', new ToolInvoker(new ToolRegistry()));
    const schema = tool.options.inputSchema as z.ZodType<JsonObject>;
    assert.deepEqual(schema.parse({ env: 'a' }), { env: 'a', n: 2 });
    for (const bad of [{}, { env: 'c' }, { env: 'a', v: 'x1' }, { env: 'a', n: 4 }, { env: 'a', n: 1.5 }])
      assert.equal(schema.safeParse(bad).success, false, JSON.stringify(bad));
    const registry = new ToolRegistry();
    registry.add(tool.name, tool.options, tool.handler);
    const listed = registry.list()[0]!;
    assert.deepEqual(listed.inputSchema.required, ['env']);
    assert.deepEqual((listed.inputSchema.properties as Record<string, unknown>).n, { type: 'integer', minimum: 1, maximum: 3, default: 2 });
  });
});

describe("muster's resource shape", () => {
  it('kind: Workflow with metadata.name and spec is read as the plain shape; errors point into spec', () => {
    const definition = parseWorkflow(
      'apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: from-muster\nspec:\n  description: d\n  args:\n    x: { type: string, required: true }\n  steps:\n    - { id: a, tool: echo, args: { value: "{{ .input.x }}" }, store: true }\n',
      'm.yaml',
    );
    assert.equal(definition.name, 'from-muster');
    assert.equal(definition.steps[0]!.tool, 'echo');
    assert.match(
      problems('kind: Workflow\nmetadata: { name: m }\nspec:\n  steps:\n    - { id: a, tol: echo }\n'),
      /w\.yaml:5:\d+: spec\.steps\[0\]\.tol: unknown field/,
    );
  });
});

describe('checkWorkflowSet', () => {
  const flow = (name: string, calls: string[]) =>
    parseWorkflow(`name: ${name}\nsteps:\n${calls.map((tool, i) => `  - { id: s${i}, tool: ${tool} }\n`).join('')}`, `${name}.yaml`);

  it('refuses cycles through nested workflows, and two files with one name', () => {
    const errors = checkWorkflowSet(
      [flow('a', ['workflow_b']), flow('b', ['echo', 'workflow_c']), flow('c', ['workflow_a'])],
      'workflow_',
    ).map((e) => e.message);
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /workflows call each other in a cycle: workflow_a → workflow_b → workflow_c → workflow_a/);
    assert.match(checkWorkflowSet([flow('a', ['x']), flow('a', ['y'])], 'workflow_')[0]!.message, /workflow name "a" is also used by/);
    assert.deepEqual(checkWorkflowSet([flow('a', ['workflow_b']), flow('b', ['echo'])], 'workflow_'), []);
  });
});
