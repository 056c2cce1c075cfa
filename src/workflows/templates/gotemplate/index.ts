/**
 * A Go `text/template` engine with sprig's functions, for muster's workflow
 * files (docs/workflows.md, "Coming from muster"). It parses and executes the
 * Go template language itself — no Go toolchain at run time — and is checked
 * against real Go (1.19 + sprig 3.2.3) by committed golden files
 * (test/workflows/gotemplate, regenerated with scripts/gotemplate-golden).
 *
 * As in muster: `missingkey=error`, and a template that is exactly one action
 * (`{{ len .results.x.items }}`) yields the action's typed value, not its text.
 */
import { BUILTINS } from './builtins.js';
import { execute, executeTyped, NOT_SINGLE, TemplateExecError, type FuncMap, type GoFunction } from './exec.js';
import { TemplateSyntaxError } from './lexer.js';
import { parse, type Tree } from './parse.js';
import { SPRIG } from './sprig/index.js';
import { fromPlain, toPlain } from './values.js';

export { TemplateExecError, TemplateSyntaxError };

/** Go's builtins, then sprig's (which replace Go's `slice`), as muster's `sprig.TxtFuncMap()` does. */
export const FUNCTIONS: FuncMap = new Map<string, GoFunction>([...Object.entries(BUILTINS), ...Object.entries(SPRIG)]);

/** A parsed template, ready to run many times. */
export interface GoTemplate {
  readonly source: string;
  /** The rendered text (text/template's Execute). */
  render(data: unknown): string;
  /** The JSON value of a single-action template, else its text (muster's typed rendering). */
  renderTyped(data: unknown): unknown;
}

const cache = new Map<string, Tree>();

/** Parses `source`; throws {@link TemplateSyntaxError} (with the offset) when it does not parse. */
export function compileGoTemplate(source: string): GoTemplate {
  let tree = cache.get(source);
  if (!tree) {
    tree = parse(source, { hasFunction: (name) => FUNCTIONS.has(name) });
    if (cache.size > 5000) cache.clear();
    cache.set(source, tree);
  }
  const parsed = tree;
  return {
    source,
    render: (data) => execute(parsed, fromPlain(data), FUNCTIONS),
    renderTyped: (data) => {
      const value = executeTyped(parsed, fromPlain(data), FUNCTIONS);
      return value === NOT_SINGLE ? execute(parsed, fromPlain(data), FUNCTIONS) : toPlain(value);
    },
  };
}
