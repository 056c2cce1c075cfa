/**
 * `needs:` at load time: unknown ids, a step needing
 * itself or an onFailure step, cycles (named step by step, implicit "follows"
 * edges included) and a fromStep outside what the step needs are refused with
 * file:line:col, path and field; a valid DAG loads.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseWorkflow, WorkflowError } from '../../src/workflows/index.js';

const problems = (text: string) => {
  try {
    parseWorkflow(text, 'dag.yaml');
  } catch (error) {
    assert.ok(error instanceof WorkflowError);
    return error.message;
  }
  assert.fail('expected a WorkflowError');
};

describe('needs at load time', () => {
  it('refuses unknown ids, self needs, onFailure ids and repeated ids, naming the field', () => {
    const message = problems(
      [
        'steps:',
        '  - { id: a, tool: t, needs: [nope] }',
        '  - { id: b, tool: t, needs: [b] }',
        '  - { id: c, tool: t, needs: [a, a, undo] }',
        'onFailure:',
        '  - { id: undo, tool: t }',
      ].join('\n'),
    );
    assert.match(message, /dag\.yaml:2:\d+: steps\[0\]\.needs\[0\]: "nope" is not a step of this workflow/);
    assert.match(message, /dag\.yaml:3:\d+: steps\[1\]\.needs\[0\]: step "b" cannot need itself/);
    assert.match(message, /dag\.yaml:4:\d+: steps\[2\]\.needs\[1\]: "a" is listed twice/);
    assert.match(message, /dag\.yaml:4:\d+: steps\[2\]\.needs\[2\]: "undo" is an onFailure step; needs names main steps/);
  });

  it('names a cycle step by step, with implicit edges', () => {
    assert.match(
      problems('steps:\n  - { id: a, tool: t, needs: [c] }\n  - { id: b, tool: t }\n  - { id: c, tool: t, needs: [b] }\n'),
      /dag\.yaml:2:\d+: steps\[0\]\.needs: the steps' needs form a cycle: a → c → b → a \(a needs c, c needs b, b follows a\)/,
    );
  });

  it('refuses a fromStep the step does not need, and maxConcurrency without needs', () => {
    assert.match(
      problems(
        'steps:\n  - { id: a, tool: t, needs: [] }\n  - { id: b, tool: t, needs: [] }\n  - { id: c, tool: t, needs: [b], condition: { fromStep: a, expect: { success: true } } }\n',
      ),
      /dag\.yaml:4:\d+: steps\[2\]\.condition\.fromStep: "a" is not an earlier step \(one this step needs/,
    );
    assert.match(
      problems('maxConcurrency: 2\nsteps:\n  - { id: a, tool: t }\n'),
      /dag\.yaml:1:\d+: maxConcurrency: applies to steps with needs/,
    );
    assert.match(
      problems('steps:\n  - id: p\n    parallel:\n      - { id: s, tool: t, needs: [] }\n'),
      /steps\[0\]\.parallel\[0\]\.needs: unknown field/,
    );
  });

  it('loads a valid DAG, with fromStep on a transitive need', () => {
    const wf = parseWorkflow(
      'maxConcurrency: 2\nsteps:\n  - { id: a, tool: t, needs: [] }\n  - { id: b, tool: t, needs: [a] }\n  - { id: c, tool: t, needs: [b], condition: { fromStep: a, expect: { success: true } } }\n',
      'dag.yaml',
    );
    assert.deepEqual(
      wf.steps.map((step) => step.needs),
      [[], ['a'], ['b']],
    );
  });
});
