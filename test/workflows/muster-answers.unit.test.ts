/**
 * The words and views muster's clients match on: a workflow argument left
 * out or of the wrong type, and the run history's summary view, which drops
 * the step data from the recorded answer as muster's does.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RunDetail } from '../../src/workflows/history/RunHistory.js';
import { viewOf } from '../../src/workflows/history/runViews.js';
import { argsSchema } from '../../src/workflows/model/argsSchema.js';

describe("muster's words and views", () => {
  it('an argument left out is a required field missing; one of another type has the wrong type', () => {
    const schema = argsSchema({ name: { type: 'string', required: true }, count: { type: 'integer' } });
    const messages = (args: Record<string, unknown>) => schema.safeParse(args).error?.issues.map((issue) => issue.message);
    assert.deepEqual(messages({}), ['required field missing']);
    assert.deepEqual(messages({ name: 1, count: 'x' }), [
      'wrong type: expected string, received number',
      'wrong type: expected number, received string',
    ]);
    assert.equal(messages({ name: 'ok' }), undefined);
  });

  it('the summary view drops the steps and the step data of the answer, text and structured', () => {
    const answer = { workflow: 'w', status: 'completed', results: { a: 1 }, steps: [{ id: 'a' }], template_vars: [], said: 'hi' };
    const detail: RunDetail = {
      execution_id: 'e1',
      workflow_name: 'w',
      status: 'completed',
      task: false,
      started_at: '2026-01-01T00:00:00.000Z',
      duration_ms: 1,
      step_count: 1,
      input: {},
      result: { content: [{ type: 'text', text: JSON.stringify(answer) }], structuredContent: answer },
      steps: [],
    };
    const summary = viewOf(detail, { includeSteps: false })!;
    assert.equal(summary.steps, undefined);
    const expected = { workflow: 'w', status: 'completed', said: 'hi' };
    const result = summary.result as { content: Array<{ text: string }>; structuredContent: unknown };
    assert.deepEqual(result.structuredContent, expected);
    assert.deepEqual(JSON.parse(result.content[0]!.text), expected);
    // The full view keeps everything.
    assert.deepEqual(viewOf(detail, {}), detail);
  });
});
