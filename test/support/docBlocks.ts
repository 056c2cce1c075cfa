/**
 * The fenced code blocks of the docs' markdown, with the `docs-test`
 * directive written before each (see test/docs/doc-examples.system.test.ts
 * for what the directives mean).
 *
 * A directive is an HTML comment on the last non-blank line before the fence:
 *
 *     <!-- docs-test: skip the Next.js path alias `@/lib/…` -->
 *     ```ts
 *
 * and reads `<!-- docs-test: KIND [ARGUMENT] -->`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from './processes.js';

/** What a directive can ask for (the runner documents each). */
export const DIRECTIVE_KINDS = ['skip', 'fragment', 'file', 'serve', 'demo', 'run'] as const;
export type DirectiveKind = (typeof DIRECTIVE_KINDS)[number];

export interface DocBlock {
  /** The page, relative to the repository (`docs/tools.md`). */
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** 1-based line of the first code line. */
  codeLine: number;
  /** The fence's info string's first word, lower case; '' for none. */
  lang: string;
  code: string;
  directive?: { kind: DirectiveKind; argument: string };
  /** A directive comment that does not parse: the runner reports it. */
  badDirective?: string;
}

const DIRECTIVE = /^<!--\s*docs-test:\s*(\S+)\s*(.*?)\s*-->\s*$/;

/** README.md, then docs/**\/*.md (examples' markdown too with `withExamples`), relative to the repository. */
export function docPages({ withExamples = false }: { withExamples?: boolean } = {}): string[] {
  const found = [join(REPO_ROOT, 'README.md')];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name === 'node_modules') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk(join(REPO_ROOT, 'docs'));
  if (withExamples) walk(join(REPO_ROOT, 'examples'));
  return found.map((path) => relative(REPO_ROOT, path));
}

/** Each fenced code block of `text` (the markdown of `page`), in page order. */
export function codeBlocks(text: string, page = ''): DocBlock[] {
  const blocks: DocBlock[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const fence = /^\s*(```+|~~~+)\s*([^\s`]*)/.exec(lines[i]!);
    if (!fence) continue;
    let end = i + 1;
    while (end < lines.length && !lines[end]!.trimStart().startsWith(fence[1]!)) end++;
    const block: DocBlock = {
      page,
      line: i + 1,
      codeLine: i + 2,
      lang: fence[2]!.toLowerCase(),
      code: lines.slice(i + 1, end).join('\n'),
    };
    let before = i - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const comment = before >= 0 ? lines[before]!.trim() : '';
    if (/^<!--\s*docs-test:/.test(comment)) {
      const parsed = DIRECTIVE.exec(comment);
      if (parsed && (DIRECTIVE_KINDS as readonly string[]).includes(parsed[1]!)) {
        block.directive = { kind: parsed[1] as DirectiveKind, argument: parsed[2]! };
      } else {
        block.badDirective = comment;
      }
    }
    blocks.push(block);
    i = end;
  }
  return blocks;
}

/** The code blocks of `page` (relative to the repository). */
export function pageBlocks(page: string): DocBlock[] {
  return codeBlocks(readFileSync(join(REPO_ROOT, page), 'utf8'), page);
}
