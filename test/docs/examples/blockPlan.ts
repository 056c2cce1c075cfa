/**
 * What the docs test does with each code block, from its language and its
 * `docs-test` directive (the rules are in doc-examples.system.test.ts).
 */
import type { DocBlock } from '../../support/docBlocks.js';
import { taskvisorCommands, type CommandLine } from './shellCommands.js';

export type BlockPlan =
  /** Type-checked; `run`: then run to its end (exit 0); `serve`: kept running once it listens. */
  | { action: 'code'; file: string; run: 'run' | 'serve' | 'none'; demo: boolean; reason?: string }
  /** A config file: loaded (schema, positions); `serve`: `taskvisor serve --config` starts with it. */
  | { action: 'config'; file: string; serve: boolean }
  /** A workflow file: parsed and checked as `taskvisor workflows validate` does. */
  | { action: 'workflow'; file: string }
  /** Written as `file` for the page's other blocks, nothing more. */
  | { action: 'write'; file: string }
  /** taskvisor command lines: checked against the CLI's help; `run`: then run in order (`demo`: next to the demo server). */
  | { action: 'commands'; commands: CommandLine[]; run: boolean; demo: boolean }
  /** Not run: a skip, an output sample, a diagram. */
  | { action: 'not run'; reason: string }
  /** A block the runner cannot place: the test fails with `reason`. */
  | { action: 'invalid'; reason: string };

const CODE = new Map([
  ['ts', 'ts'],
  ['typescript', 'ts'],
  ['js', 'mjs'],
  ['javascript', 'mjs'],
  ['mjs', 'mjs'],
]);
const SHELL = new Set(['sh', 'bash', 'shell', 'console']);

export function planBlock(block: DocBlock): BlockPlan {
  const { directive, lang } = block;
  if (block.badDirective !== undefined) {
    return {
      action: 'invalid',
      reason: `the directive ${block.badDirective} does not parse (docs-test: skip|fragment|file|serve|demo|run)`,
    };
  }
  if (directive?.kind === 'skip') {
    return directive.argument
      ? { action: 'not run', reason: directive.argument }
      : { action: 'invalid', reason: 'a skip names its reason: <!-- docs-test: skip REASON -->' };
  }
  const named = directive?.kind === 'file' ? directive.argument : undefined;
  if (directive?.kind === 'file' && !/^[\w.-]+(\/[\w.-]+)*$/.test(directive.argument)) {
    return { action: 'invalid', reason: `file wants a relative file name, not '${directive.argument}'` };
  }
  const extension = CODE.get(lang);
  if (extension) {
    const file = named ?? `block-${block.line}.${extension}`;
    if (directive?.kind === 'fragment') {
      return {
        action: 'code',
        file,
        run: 'none',
        demo: false,
        reason: directive.argument || 'a fragment: uses names the page defines elsewhere',
      };
    }
    if (directive?.kind === 'run') return { action: 'invalid', reason: 'ts blocks run unless marked: drop the run directive' };
    return { action: 'code', file, run: directive?.kind === 'serve' ? 'serve' : 'run', demo: directive?.kind === 'demo' };
  }
  if (lang === 'yaml' || lang === 'yml') {
    if (named) return { action: 'write', file: named };
    if (directive && directive.kind !== 'serve') return { action: 'invalid', reason: `${directive.kind} is not for yaml blocks` };
    if (/^steps:/m.test(block.code)) return { action: 'workflow', file: `block-${block.line}.yaml` };
    return { action: 'config', file: `block-${block.line}.yaml`, serve: directive?.kind === 'serve' };
  }
  if (named) return { action: 'write', file: named };
  if ((SHELL.has(lang) || lang === '') && (directive?.kind === 'run' || directive?.kind === 'demo')) {
    const commands = taskvisorCommands(block);
    if (commands.length === 0) return { action: 'invalid', reason: `${directive.kind}: the block has no taskvisor command to run` };
    return { action: 'commands', commands, run: true, demo: directive.kind === 'demo' };
  }
  if (directive) return { action: 'invalid', reason: `${directive.kind} is not for ${lang || 'plain'} blocks` };
  if (lang === 'json') return { action: 'not run', reason: 'JSON: an answer or another program’s config, shown' };
  if (lang === 'mermaid') return { action: 'not run', reason: 'a diagram' };
  if (SHELL.has(lang) || lang === '' || lang === 'text') {
    const commands = taskvisorCommands(block);
    if (commands.length > 0) return { action: 'commands', commands, run: false, demo: false };
    if (!SHELL.has(lang)) return { action: 'not run', reason: 'output or text, shown' };
    return {
      action: 'invalid',
      reason: 'a shell block without a taskvisor command: run nothing here, so mark it <!-- docs-test: skip REASON -->',
    };
  }
  return { action: 'invalid', reason: `no runner for \`\`\`${lang}: mark it <!-- docs-test: skip REASON -->` };
}
