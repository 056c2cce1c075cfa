/**
 * The `taskvisor …` command lines of the docs' shell blocks (and synopsis
 * blocks): each one's command must exist and each option it uses must be
 * one its `--help` lists, asked of the installed CLI. Catches a renamed or
 * removed command or flag in a page; what the command then does is the
 * business of the blocks that run.
 */
import type { DocBlock } from '../../support/docBlocks.js';
import { runNode } from '../../support/processes.js';

export interface CommandLine {
  block: DocBlock;
  /** 1-based line on the page. */
  line: number;
  /** The words after `taskvisor`. */
  words: string[];
}

/** Splits a shell line into words: quotes group, `#` outside quotes starts a comment. */
function shellWords(text: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: string | undefined;
  for (const char of text) {
    if (quote) {
      if (char === quote) quote = undefined;
      else word = (word ?? '') + char;
    } else if (char === '"' || char === "'") {
      quote = char;
      word ??= '';
    } else if (/\s/.test(char)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (char === '#' && word === undefined) {
      break;
    } else {
      word = (word ?? '') + char;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** Every line of `block` that runs taskvisor (`taskvisor …` or `npx taskvisor …`, also after `&&`). */
export function taskvisorCommands(block: DocBlock): CommandLine[] {
  const found: CommandLine[] = [];
  block.code.split('\n').forEach((text, index) => {
    for (const part of text.split(/&&|\|\||;/)) {
      const words = shellWords(part.trim());
      const start = words[0] === 'npx' ? words.findIndex((word, i) => i > 0 && !word.startsWith('-')) : 0;
      if (start < 0 || words[start] !== 'taskvisor' || words.length <= start + 1) continue;
      found.push({ block, line: block.codeLine + index, words: words.slice(start + 1) });
    }
  });
  return found;
}

/**
 * The problems of `commands` against the CLI (`cli`: the installed bin), as `page:line: …`: an
 * unknown command, or an option its help does not list.
 */
export async function checkCommands(cli: string, cwd: string, commands: CommandLine[]): Promise<string[]> {
  const helps = new Map<string, Promise<{ code: number | null; text: string }>>();
  const help = (command: string) => {
    let answer = helps.get(command);
    if (!answer) {
      answer = runNode([cli, command, '--help'], { cwd, timeoutMs: 60_000 }).then((ran) => ({
        code: ran.code,
        text: `${ran.stdout}${ran.stderr}`,
      }));
      helps.set(command, answer);
    }
    return answer;
  };
  // Every command's help at once, read in page order below.
  for (const { words } of commands) void help(words[0]!);
  const problems: string[] = [];
  for (const { block, line, words } of commands) {
    const [command] = words as [string];
    const { code, text } = await help(command);
    if (code !== 0) {
      problems.push(`${block.page}:${line}: taskvisor ${command}: not a command (${text.split('\n')[0]})`);
      continue;
    }
    for (const word of words) {
      // A synopsis writes `[--json]`, `(--config FILE | --demo)`.
      const option = /^[[(]*(--[a-z][\w-]*|-[a-zA-Z])(?=$|[=\])|])/.exec(word)?.[1];
      if (!option) continue;
      // Listed as `--out DIR`, `[--json]`, `-o, --out`, `(--config FILE | --demo)`.
      if (!new RegExp(`(^|[\\s[(,|])${option}(?![\\w-])`, 'm').test(text)) {
        problems.push(`${block.page}:${line}: taskvisor ${command} ${option}: an option 'taskvisor ${command} --help' does not list`);
      }
    }
  }
  return problems;
}
