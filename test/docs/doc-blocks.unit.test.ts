/**
 * The docs test's reading of the markdown (doc-examples.system.test.ts runs
 * the blocks): directives, what each block is planned for, the taskvisor
 * command lines of a shell block, and the declarations a fragment gets. The
 * first test is the quick version of the docs test's own first check: a page
 * with a block the docs test could not place fails here, without packing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { codeBlocks, docPages, pageBlocks } from '../support/docBlocks.js';
import { planBlock } from './examples/blockPlan.js';
import { taskvisorCommands } from './examples/shellCommands.js';
import { typescriptSource } from './examples/typescriptBlocks.js';

const fence = '```';

describe('the docs test’s reading of the markdown', () => {
  it('places every block of every page (a language it runs, or a directive)', () => {
    const invalid = docPages().flatMap((page) =>
      pageBlocks(page).flatMap((block) => {
        const plan = planBlock(block);
        return plan.action === 'invalid' ? [`${page}:${block.line}: ${plan.reason}`] : [];
      }),
    );
    assert.deepEqual(invalid, []);
  });

  it('reads the directive on the last non-blank line before a fence, and refuses what it cannot parse', () => {
    const blocks = codeBlocks(
      [
        '<!-- docs-test: skip needs a database -->',
        '',
        `${fence}ts`,
        'connect();',
        fence,
        '<!-- docs-test: skip -->',
        `${fence}sh`,
        'npm install',
        fence,
        '<!-- docs-test: sometimes -->',
        `${fence}ts`,
        fence,
        `${fence}sh`,
        'npm start',
        fence,
      ].join('\n'),
      'page.md',
    );
    assert.deepEqual(
      blocks.map((block) => [block.line, block.codeLine, block.lang, block.directive?.kind, block.directive?.argument]),
      [
        [3, 4, 'ts', 'skip', 'needs a database'],
        [7, 8, 'sh', 'skip', ''],
        [11, 12, 'ts', undefined, undefined],
        [13, 14, 'sh', undefined, undefined],
      ],
    );
    assert.deepEqual(
      blocks.map((block) => planBlock(block).action),
      ['not run', 'invalid', 'invalid', 'invalid'],
      'a skip without a reason, an unknown directive and a shell block running no taskvisor command are refused',
    );
  });

  it('plans by language: yaml with steps is a workflow, other yaml a config, ts runs unless marked', () => {
    const [workflow, config, code, served, fragment, file] = codeBlocks(
      [
        `${fence}yaml`,
        'steps: []',
        fence,
        `${fence}yaml`,
        'store: { kind: memory }',
        fence,
        `${fence}ts`,
        fence,
        '<!-- docs-test: serve -->',
        `${fence}ts`,
        fence,
        '<!-- docs-test: fragment uses runtime -->',
        `${fence}ts`,
        fence,
        '<!-- docs-test: file tools.ts -->',
        `${fence}ts`,
        fence,
      ].join('\n'),
    );
    assert.equal(planBlock(workflow!).action, 'workflow');
    assert.deepEqual(planBlock(config!), { action: 'config', file: 'block-4.yaml', serve: false });
    assert.deepEqual(planBlock(code!), { action: 'code', file: 'block-7.ts', run: 'run', demo: false });
    assert.deepEqual(planBlock(served!), { action: 'code', file: 'block-10.ts', run: 'serve', demo: false });
    assert.deepEqual(planBlock(fragment!), { action: 'code', file: 'block-13.ts', run: 'none', demo: false, reason: 'uses runtime' });
    assert.deepEqual(planBlock(file!), { action: 'code', file: 'tools.ts', run: 'run', demo: false });
  });

  it('finds the taskvisor command lines of a shell block: npx, quotes, comments, &&', () => {
    const [block] = codeBlocks(
      [
        `${fence}sh`,
        'npx taskvisor call --stdio "npx taskvisor serve --stdio" echo --arg text=hi   # spawn a server',
        'npm install && npx --offline taskvisor tools http://127.0.0.1:3000/mcp',
        '# taskvisor serve (a comment)',
        'dot -Tsvg task.dot > task.svg',
        fence,
      ].join('\n'),
      'page.md',
    );
    assert.deepEqual(
      taskvisorCommands(block!).map(({ line, words }) => [line, words]),
      [
        [2, ['call', '--stdio', 'npx taskvisor serve --stdio', 'echo', '--arg', 'text=hi']],
        [3, ['tools', 'http://127.0.0.1:3000/mcp']],
      ],
    );
  });

  it('declares for a fragment only the names it uses and does not declare itself', () => {
    const [block] = codeBlocks(
      [
        '<!-- docs-test: fragment -->',
        `${fence}ts`,
        "import { z } from 'zod';",
        'const entry = makeEntry();',
        "runtime.tool('t', { inputSchema: z.object({}) }, () => 'ok');",
        fence,
      ].join('\n'),
    );
    const source = typescriptSource(block!);
    assert.match(source, /declare const runtime: import\('taskvisor'\)\.TaskvisorRuntime;/);
    assert.doesNotMatch(source, /declare const entry|import \{ z \} from 'zod';\n.*import \{ z \}/s);
    assert.equal(
      source.split('\n')[2],
      "runtime.tool('t', { inputSchema: z.object({}) }, () => 'ok');",
      'the block keeps its line numbers',
    );
  });
});
