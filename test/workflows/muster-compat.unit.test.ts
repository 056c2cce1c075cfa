/**
 * muster's spellings at load time: what is accepted (snake_case, top-level
 * required, input_schema, a CR's status block, args: {} on a loop) and the
 * clear errors for what cannot be meant (both spellings, an unknown required
 * name, a tool condition without expectations).
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

describe("muster's spellings", () => {
  it('snake_case keys, top-level required and input_schema become the camelCase fields and required args', () => {
    const wf = parseWorkflow(
      [
        'input_schema: { type: object, args: { a: { type: string } }, required: [a] }',
        'steps:',
        '  - { id: x, tool: t, allow_failure: true }',
        '  - { id: y, tool: t, condition: { from_step: x, expect_not: { json_path: { k: 1 } } } }',
      ].join('\n'),
      'wf.yaml',
    );
    assert.equal(wf.args?.a?.required, true);
    assert.equal(wf.steps[0]!.allowFailure, true);
    assert.deepEqual(wf.steps[1]!.condition, { fromStep: 'x', expectNot: { jsonPath: { k: 1 } } });
  });

  it('a custom resource status block is ignored; other extra top-level keys are still refused', () => {
    const wf = parseWorkflow(
      'kind: Workflow\nmetadata: { name: cr }\nspec: { steps: [{ id: a, tool: t }] }\nstatus: { valid: true }\n',
      'cr.yaml',
    );
    assert.equal(wf.name, 'cr');
    assert.match(
      refused('kind: Workflow\nmetadata: { name: cr }\nspec: { steps: [{ id: a, tool: t }] }\nextra: 1\n'),
      /extra: unknown field/,
    );
  });

  it('refuses both spellings, unknown required names and tool conditions without expect', () => {
    assert.match(
      refused('steps:\n  - { id: x, tool: t, allow_failure: true, allowFailure: true }\n'),
      /wf\.yaml:2:\d+: steps\[0\]\.allow_failure: both/,
    );
    assert.match(
      refused('args: { a: { type: string } }\nrequired: [b]\nsteps: [{ id: x, tool: t }]\n'),
      /required\[0\]: "b" is not an argument/,
    );
    assert.match(refused('steps:\n  - { id: x, tool: t, condition: { tool: probe } }\n'), /a tool condition needs expect or expectNot/);
  });
});
