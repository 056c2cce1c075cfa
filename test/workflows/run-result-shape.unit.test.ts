/**
 * The shape of a run's answer, as muster's clients read it: `workflow`,
 * `status`, `results` and the `steps` list in execution order (parallel
 * sub-steps and forEach iterations as entries of their own, skipped steps
 * listed, failures named), with the final step's result on the top level
 * when it is not stored. Runs are in-process: the tools are forwarded tools
 * answering from memory.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ToolRegistry } from '../../src/tools/ToolRegistry.js';
import type { ToolContext } from '../../src/tools/ToolDefinition.js';
import { workflowHandler } from '../../src/workflows/engine/WorkflowRun.js';
import { parseWorkflow, ToolInvoker } from '../../src/workflows/index.js';

type Json = Record<string, unknown>;

/** `echo {text}` answers `{ said: text }`; `boom` fails with a JSON-RPC error; `list` answers two items. */
function invoker(): ToolInvoker {
  const registry = new ToolRegistry();
  const text = (value: unknown) => ({ kind: 'result' as const, result: { content: [{ type: 'text', text: JSON.stringify(value) }] } });
  registry.addForwarded({ name: 'echo', inputSchema: { type: 'object' } }, (request) =>
    Promise.resolve(text({ said: (request.args as Json).text })),
  );
  registry.addForwarded({ name: 'list', inputSchema: { type: 'object' } }, () =>
    Promise.resolve(text({ items: [{ name: 'alpha' }, { name: 'beta' }] })),
  );
  registry.addForwarded({ name: 'boom', inputSchema: { type: 'object' } }, () => Promise.reject(new Error('kaboom')));
  return new ToolInvoker(registry);
}

function context(): ToolContext {
  const refuse = () => Promise.reject(new Error('no input in this test'));
  return {
    signal: new AbortController().signal,
    taskId: undefined,
    principal: 'test',
    elicit: refuse,
    requestInput: refuse,
    setStatus: () => {},
    progress: () => {},
    log: () => {},
    checkpoint: undefined,
    saveCheckpoint: () => Promise.resolve(),
    sleep: (_key, ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    trace: undefined,
  };
}

async function run(yaml: string, args: Json = {}): Promise<{ structured: Json; isError: boolean }> {
  const definition = parseWorkflow(`name: wf\n${yaml}`, 'wf.yaml');
  const result = await workflowHandler(definition, { invoker: invoker() })(args, context());
  assert.ok(typeof result === 'object' && result.structuredContent, 'the run answers structured content');
  return { structured: result.structuredContent, isError: result.isError === true };
}

const idsAndStatuses = (structured: Json) =>
  (structured.steps as Array<{ id: string; status: string }>).map((step) => `${step.id}:${step.status}`);

describe('run result shape', () => {
  it('a sequence lists every step in order; the unstored final result surfaces at the top level', async () => {
    const { structured } = await run(
      [
        'steps:',
        '  - { id: a, tool: echo, args: { text: one }, store: true }',
        '  - { id: b, tool: echo, args: { text: "{{ .results.a.said }} two" } }',
      ].join('\n'),
    );
    assert.equal(structured.workflow, 'wf');
    assert.equal(structured.status, 'completed');
    assert.deepEqual(structured.steps, [
      { id: 'a', tool: 'echo', status: 'completed', result: { said: 'one' } },
      { id: 'b', tool: 'echo', status: 'completed' },
    ]);
    assert.deepEqual(structured.results, { a: { said: 'one' } });
    assert.equal(structured.said, 'one two');
  });

  it('a stored final step is not merged; a file without flags keeps every result in `results`', async () => {
    const stored = await run('steps:\n  - { id: a, tool: echo, args: { text: x }, output: true }\n');
    assert.equal(stored.structured.said, undefined);
    const plain = await run('steps:\n  - { id: a, tool: echo, args: { text: x } }\n  - { id: b, tool: echo, args: { text: y } }\n');
    assert.deepEqual(plain.structured.results, { a: { said: 'x' }, b: { said: 'y' } });
    assert.equal(plain.structured.said, 'y');
    assert.deepEqual(idsAndStatuses(plain.structured), ['a:completed', 'b:completed']);
  });

  it('parallel sub-steps are entries of their own, in declaration order, between the steps around them', async () => {
    const { structured } = await run(
      [
        'steps:',
        '  - { id: seed, tool: echo, args: { text: base }, store: true }',
        '  - id: fan',
        '    parallel:',
        '      - { id: p1, tool: echo, args: { text: "p1 {{ .results.seed.said }}" }, store: true }',
        '      - { id: p2, tool: echo, args: { text: "p2 {{ .results.seed.said }}" }, store: true }',
        '  - { id: combine, tool: echo, args: { text: "{{ .results.p1.said }} | {{ .results.p2.said }}" } }',
      ].join('\n'),
    );
    assert.deepEqual(idsAndStatuses(structured), ['seed:completed', 'p1:completed', 'p2:completed', 'combine:completed']);
    assert.deepEqual((structured.steps as Json[])[2]!.result, { said: 'p2 base' });
    assert.equal(structured.said, 'p1 base | p2 base');
  });

  it('a forEach gives one entry per iteration with that iteration’s result; an empty one gives none', async () => {
    const loop = [
      'args: { names: { type: array } }',
      'steps:',
      '  - id: each',
      '    forEach:',
      '      items: "{{ .input.names }}"',
      '      steps:',
      '        - { id: say, tool: echo, args: { text: "item={{ .vars.item }}" }, store: true }',
      '  - { id: after, tool: echo, args: { text: done } }',
    ].join('\n');
    const { structured } = await run(loop, { names: ['alpha', 'beta', 'gamma'] });
    const steps = structured.steps as Json[];
    assert.deepEqual(idsAndStatuses(structured), ['say:completed', 'say:completed', 'say:completed', 'after:completed']);
    assert.deepEqual(
      steps.slice(0, 3).map((step) => step.result),
      [{ said: 'item=alpha' }, { said: 'item=beta' }, { said: 'item=gamma' }],
    );
    const empty = await run(loop, { names: [] });
    assert.deepEqual(idsAndStatuses(empty.structured), ['after:completed']);
  });

  it('skipped steps are listed as skipped with their condition; a skipped parallel group is one entry', async () => {
    const { structured } = await run(
      [
        'steps:',
        '  - { id: a, tool: echo, args: { text: x } }',
        '  - { id: no, tool: echo, args: { text: y }, condition: { template: "{{ eq .results.a.said \\"z\\" }}" } }',
        '  - id: group',
        '    condition: { template: "false" }',
        '    parallel:',
        '      - { id: g1, tool: echo, args: { text: g } }',
        '  - { id: yes, tool: echo, args: { text: w }, condition: { fromStep: a, expect: { success: true } } }',
      ].join('\n'),
    );
    assert.deepEqual(idsAndStatuses(structured), ['a:completed', 'no:skipped', 'group:skipped', 'yes:completed']);
    const steps = structured.steps as Json[];
    assert.equal(steps[1]!.condition_evaluation, false);
    assert.equal(steps[3]!.condition_evaluation, true);
    assert.equal(steps[0]!.condition_evaluation, undefined);
  });

  it('a failed step is listed with its error, an allowed failure goes on, onFailure steps follow', async () => {
    const { structured, isError } = await run(
      [
        'steps:',
        '  - { id: tolerated, tool: boom, allowFailure: true }',
        '  - { id: fatal, tool: boom }',
        '  - { id: never, tool: echo, args: { text: x } }',
        'onFailure:',
        '  - { id: cleanup, tool: echo, args: { text: c } }',
      ].join('\n'),
    );
    assert.equal(isError, true);
    assert.equal(structured.status, 'failed');
    assert.deepEqual(idsAndStatuses(structured), ['tolerated:failed', 'fatal:failed', 'cleanup:completed']);
    const steps = structured.steps as Json[];
    assert.equal(steps[0]!.allow_failure, true);
    assert.match(String(steps[1]!.error), /kaboom/);
  });

  it('the answer carries the validated input and the input names the run’s arguments used (template_vars)', async () => {
    const { structured } = await run(
      [
        'args: { who: { type: string, default: Ada }, unused: { type: string, default: x } }',
        'steps:',
        '  - { id: a, tool: echo, args: { text: "hi {{ .input.who }}" } }',
        '  - { id: b, tool: echo, args: { text: "{{ .input.unused }}" }, condition: { template: "false" } }',
      ].join('\n'),
      // The handler is called directly: the arguments as the tool's schema validation hands them over.
      { who: 'Ada', unused: 'x' },
    );
    assert.deepEqual(structured.input, { who: 'Ada', unused: 'x' });
    assert.deepEqual(structured.template_vars, ['input.who']);
  });

  it('a condition json_path key may be a template over the condition result', async () => {
    const { structured } = await run(
      [
        'steps:',
        '  - id: match',
        '    condition: { tool: list, expect: { json_path: { "{{ (index .result.items 1).name }}": beta } } }',
        '    tool: echo',
        '    args: { text: ran }',
        '  - id: miss',
        '    condition: { tool: list, expect: { json_path: { "{{ (index .result.items 0).name }}": beta } } }',
        '    tool: echo',
        '    args: { text: ran }',
      ].join('\n'),
    );
    assert.deepEqual(idsAndStatuses(structured), ['match:completed', 'miss:skipped']);
  });
});
