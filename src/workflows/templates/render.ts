/**
 * Templates in workflow files: `{{ expression }}` inside any string, where the
 * expression is JSONata (https://jsonata.org) over `{ input, results, vars }`.
 *
 * JSONata, not `eval`/`Function`: it is a sandboxed, side-effect-free query
 * language with its own parser and evaluator (no access to the process,
 * modules or prototypes), maintained, and made for exactly this — paths,
 * comparisons, arithmetic, string and array functions over JSON.
 *
 * Type preservation: a string that is exactly one `{{ expr }}` becomes the
 * expression's JSON value (array, number, object…); any other string with
 * templates renders to a string.
 */
import jsonata from 'jsonata';
import { compileGoTemplate } from './gotemplate/index.js';

/**
 * The template language of a workflow file: `go` (Go text/template with
 * sprig, as muster writes them) or `jsonata`. See {@link chooseEngine}.
 */
export type TemplateEngine = 'go' | 'jsonata';

const TEMPLATE = /\{\{([\s\S]*?)\}\}/g;
const SINGLE = /^\{\{([\s\S]*?)\}\}$/;

/** What templates see. */
export interface TemplateScope {
  input: Record<string, unknown>;
  results: Record<string, unknown>;
  vars: Record<string, unknown>;
}

/** Where a template sits, for error messages: `workflow deploy, step backup, field args.name`. */
export interface TemplateSite {
  workflow: string;
  step?: string;
  field: string;
}

/** A template that does not parse or cannot be evaluated; the message names workflow, step and field. */
export class TemplateError extends Error {
  constructor(site: TemplateSite, detail: string) {
    super(`workflow ${site.workflow}${site.step ? `, step ${site.step}` : ''}, field ${site.field}: ${detail}`);
    this.name = 'TemplateError';
  }
}

const compiled = new Map<string, jsonata.Expression>();

function compile(source: string): jsonata.Expression {
  let expression = compiled.get(source);
  if (!expression) {
    // A leading dot (`{{ .input.x }}`, muster's Go-template habit) is accepted as the same path.
    expression = jsonata(source.trim().replace(/^\.(?=[A-Za-z_$])/, ''));
    if (compiled.size > 5000) compiled.clear();
    compiled.set(source, expression);
  }
  return expression;
}

function describe(error: unknown): string {
  const e = error as { message?: string; token?: string; position?: number };
  return `${e.message ?? String(error)}${e.position !== undefined ? ` (at character ${e.position})` : ''}`;
}

/** Every template expression in `value` that does not parse, as `field: reason` strings (load-time check). */
export function checkTemplates(
  value: unknown,
  field: string,
  engine: TemplateEngine = 'jsonata',
): Array<{ field: string; message: string }> {
  const problems: Array<{ field: string; message: string }> = [];
  const walk = (node: unknown, at: string): void => {
    if (typeof node === 'string' && engine === 'go') {
      if (!node.includes('{{')) return;
      try {
        compileGoTemplate(node);
      } catch (error) {
        problems.push({ field: at, message: `invalid Go template ${JSON.stringify(node)}: ${describeGo(error, node)}` });
      }
    } else if (typeof node === 'string') {
      for (const match of node.matchAll(TEMPLATE)) {
        try {
          compile(match[1]!);
        } catch (error) {
          problems.push({ field: at, message: `invalid expression {{${match[1]}}}: ${describe(error)}` });
        }
      }
    } else if (Array.isArray(node)) node.forEach((item, i) => walk(item, `${at}[${i}]`));
    else if (node !== null && typeof node === 'object') {
      for (const [key, item] of Object.entries(node)) walk(item, `${at}.${key}`);
    }
  };
  walk(value, field);
  return problems;
}

function describeGo(error: unknown, source: string): string {
  const e = error as { message?: string; pos?: number };
  return `${e.message ?? String(error)}${e.pos !== undefined ? ` (at character ${e.pos + 1} of the template)` : ''}`;
}

/** Every template string in `value` (deeply), keys included: a condition's `jsonPath` key may be a template. */
function templateStrings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') {
    if (value.includes('{{')) out.push(value);
  } else if (Array.isArray(value)) value.forEach((item) => templateStrings(item, out));
  else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes('{{')) out.push(key);
      templateStrings(item, out);
    }
  }
  return out;
}

/**
 * The engine of a file that does not say (`templates:`): muster's resource
 * shape (`kind: Workflow`) is Go; otherwise Go when every template parses as
 * a Go template (muster's `{{ .input.x }}`, `{{ eq … }}`), else JSONata
 * (`{{ input.x }}` is a call of an undefined function in Go, so JSONata files
 * never parse as Go).
 */
export function chooseEngine(templated: unknown, musterShape: boolean): TemplateEngine {
  if (musterShape) return 'go';
  const strings = templateStrings(templated);
  if (strings.length === 0) return 'jsonata';
  return strings.every((source) => {
    try {
      compileGoTemplate(source);
      return true;
    } catch {
      return false;
    }
  })
    ? 'go'
    : 'jsonata';
}

/** Whether `value` holds any template. */
export function hasTemplate(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('{{');
  if (Array.isArray(value)) return value.some(hasTemplate);
  if (value !== null && typeof value === 'object') return Object.values(value).some(hasTemplate);
  return false;
}

async function evaluate(source: string, scope: TemplateScope, site: TemplateSite, optional: boolean): Promise<unknown> {
  let value: unknown;
  try {
    value = await compile(source).evaluate(scope);
  } catch (error) {
    throw new TemplateError(site, `{{${source}}}: ${describe(error)}`);
  }
  if (value === undefined) {
    if (optional) return undefined;
    throw new TemplateError(site, `{{${source}}} yields no value (is a name misspelt, or did the step not run?)`);
  }
  if (typeof value === 'function') throw new TemplateError(site, `{{${source}}} yields a function, not JSON`);
  // JSONata sequences carry extra properties: a JSON copy makes them plain arrays.
  return JSON.parse(JSON.stringify(value)) as unknown;
}

/**
 * Renders every template in `value` (deeply). A string that is one template
 * keeps the expression's JSON type. With `optional`, a template yielding
 * nothing gives `undefined` (conditions) instead of an error.
 */
export async function render(
  value: unknown,
  scope: TemplateScope,
  site: TemplateSite,
  optional = false,
  engine: TemplateEngine = 'jsonata',
): Promise<unknown> {
  if (typeof value === 'string' && engine === 'go') {
    if (!value.includes('{{')) return value;
    try {
      // muster's rule: a string that is one action keeps the action's type; anything else is text.
      // `.context` is muster's older name of `.results`.
      return compileGoTemplate(value).renderTyped({ ...scope, context: scope.results });
    } catch (error) {
      throw new TemplateError(site, `${value}: ${(error as Error).message}`);
    }
  }
  if (typeof value === 'string') {
    const single = SINGLE.exec(value);
    if (single && !single[1]!.includes('{{')) return evaluate(single[1]!, scope, site, optional);
    if (!value.includes('{{')) return value;
    let out = '';
    let last = 0;
    for (const match of value.matchAll(TEMPLATE)) {
      out += value.slice(last, match.index);
      const part = await evaluate(match[1]!, scope, site, optional);
      out += part === undefined ? '' : typeof part === 'string' ? part : JSON.stringify(part);
      last = match.index + match[0].length;
    }
    return out + value.slice(last);
  }
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const [i, item] of value.entries())
      out.push(await render(item, scope, { ...site, field: `${site.field}[${i}]` }, optional, engine));
    return out;
  }
  if (value !== null && typeof value === 'object') {
    const entries: Array<[string, unknown]> = [];
    for (const [key, item] of Object.entries(value)) {
      entries.push([key, await render(item, scope, { ...site, field: `${site.field}.${key}` }, optional, engine)]);
    }
    return Object.fromEntries(entries);
  }
  return value;
}
