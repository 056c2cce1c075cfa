/**
 * Nested loops at load time: a forEach inside a forEach or
 * a parallel loads, with its templates and ids checked at every depth; a loop
 * variable that hides an enclosing one, a duplicate id inside an inner loop
 * and loops nested deeper than MAX_LOOP_DEPTH are refused with file:line:col
 * and field.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseWorkflow, WorkflowError } from '../../src/workflows/index.js';

const problems = (text: string) => {
  try {
    parseWorkflow(text, 'loops.yaml');
  } catch (error) {
    assert.ok(error instanceof WorkflowError);
    return error.message;
  }
  assert.fail('expected a WorkflowError');
};

const loop = (as: string | undefined, inner: string) =>
  `{ id: l${as ?? ''}, forEach: { items: [1]${as ? `, as: ${as}` : ''}, steps: [${inner}] } }`;

describe('nested loops at load time', () => {
  it('loads a forEach inside a forEach and inside a parallel', () => {
    const wf = parseWorkflow(
      `steps:\n  - ${loop('a', loop('b', '{ id: t, tool: x }'))}\n  - { id: p, parallel: [${loop('c', '{ id: u, tool: x }')}] }\n`,
      'loops.yaml',
    );
    assert.equal(wf.steps[0]!.forEach!.steps[0]!.forEach!.steps[0]!.tool, 'x');
    assert.equal(wf.steps[1]!.parallel![0]!.forEach!.as, 'c');
  });

  it('refuses a hidden loop variable, duplicate inner ids, bad inner templates and too deep nesting', () => {
    assert.match(
      problems(`steps:\n  - ${loop(undefined, loop(undefined, '{ id: t, tool: x }'))}\n`),
      /loops\.yaml:2:\d+: steps\[0\]\.forEach\.steps\[0\]\.forEach: the loop variable "item" is already an enclosing forEach's/,
    );
    assert.match(
      problems(`steps:\n  - ${loop('a', loop('b', '{ id: t, tool: x }, { id: t, tool: y }'))}\n`),
      /steps\[0\]\.forEach\.steps\[0\]\.forEach\.steps\[1\]\.id: duplicate sub-step id "t" in lb/,
    );
    assert.match(
      problems(`templates: go\nsteps:\n  - ${loop('a', loop('b', '{ id: t, tool: x, args: { v: "{{ nosuch .vars.b }}" } }'))}\n`),
      /steps\[0\]\.forEach\.steps\[0\]\.forEach\.steps\[0\]\.args\.v: .*nosuch/,
    );
    assert.match(
      problems(`steps:\n  - ${loop('a', loop('b', loop('c', loop('d', loop('e', '{ id: t, tool: x }')))))}\n`),
      /steps\[0\](\.forEach\.steps\[0\]){4}: loops nest at most 4 forEach deep/,
    );
  });
});
