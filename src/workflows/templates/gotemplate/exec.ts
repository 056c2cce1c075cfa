/**
 * Executes a parsed Go template over JSON data, with text/template's rules:
 * `missingkey=error` (as muster sets it), truth of values, pipelines (the
 * previous value is the last argument of the next call), variable scopes,
 * `range` over lists and maps (sorted keys) with `break`/`continue`, lazy
 * `and`/`or`, and Go's argument typing for functions (a string parameter
 * refuses a number, as Go does).
 */
import type { Arg, Command, Node, Pipe, Tree } from './parse.js';
import { formatValue, isMap, truth, typeName, type GoValue } from './values.js';

/** A parameter's Go type, as far as argument checking needs it. */
export type ParamKind = 'any' | 'string' | 'int' | 'float' | 'bool' | 'map';

/** A template function: Go signature (for argument checks) and body. */
export interface GoFunction {
  params: ParamKind[];
  /** The kind of a trailing `...` parameter. */
  variadic?: ParamKind;
  fn: (...args: GoValue[]) => GoValue;
}

export type FuncMap = ReadonlyMap<string, GoFunction>;

/** A template that fails while running; the message says where (`at <.input.x>`) and why. */
export class TemplateExecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateExecError';
  }
}

class BreakSignal {}
class ContinueSignal {}

const MAX_OUTPUT = 1024 * 1024;
const MAX_STEPS = 1_000_000;

/** Runs `tree` on `data`; returns the text. With `typed`, returns the value of a lone action instead. */
export function execute(tree: Tree, data: GoValue, funcs: FuncMap): string {
  return new State(tree, funcs).run(data);
}

/** The typed value of a template that is exactly one action without declarations, or `NOT_SINGLE`. */
export const NOT_SINGLE = Symbol('not a single action');
export function executeTyped(tree: Tree, data: GoValue, funcs: FuncMap): GoValue | typeof NOT_SINGLE {
  const [only] = tree.root;
  if (tree.root.length !== 1 || only?.type !== 'action' || only.pipe.decl.length > 0) return NOT_SINGLE;
  const state = new State(tree, funcs);
  return state.pipeline(data, only.pipe, [[{ name: '$', value: data }]]);
}

type Scope = Array<{ name: string; value: GoValue }>;

class State {
  private out = '';
  private steps = 0;

  constructor(
    private readonly tree: Tree,
    private readonly funcs: FuncMap,
  ) {}

  run(data: GoValue): string {
    this.walk(data, this.tree.root, [[{ name: '$', value: data }]]);
    return this.out;
  }

  private where(pos: number): string {
    const before = this.tree.source.slice(0, pos);
    const line = before.split('\n').length;
    const col = pos - before.lastIndexOf('\n');
    return `${line}:${col}`;
  }

  fail(pos: number, message: string, node?: string): never {
    throw new TemplateExecError(`template:${this.where(pos)}: executing${node ? ` at <${node}>` : ''}: ${message}`);
  }

  private tick(pos: number) {
    // A hostile template (nested ranges over large lists) is bounded.
    if (++this.steps > MAX_STEPS) this.fail(pos, 'template too expensive (more than 1,000,000 evaluation steps)');
  }

  private write(text: string, pos: number) {
    this.out += text;
    if (this.out.length > MAX_OUTPUT) this.fail(pos, 'template output larger than 1 MiB');
  }

  private walk(dot: GoValue, list: Node[], vars: Scope[]): void {
    for (const node of list) {
      switch (node.type) {
        case 'text':
          this.write(node.text, 0);
          break;
        case 'action': {
          const value = this.pipeline(dot, node.pipe, vars);
          if (node.pipe.decl.length === 0) this.write(formatValue(value), node.pos);
          break;
        }
        case 'if':
        case 'with': {
          vars.push([]);
          try {
            const value = this.pipeline(dot, node.pipe, vars);
            if (truth(value)) this.walk(node.type === 'with' ? value : dot, node.list, vars);
            else if (node.elseList) this.walk(dot, node.elseList, vars);
          } finally {
            vars.pop();
          }
          break;
        }
        case 'range':
          this.range(dot, node, vars);
          break;
        case 'break':
          throw new BreakSignal();
        case 'continue':
          throw new ContinueSignal();
      }
    }
  }

  private range(dot: GoValue, node: Extract<Node, { type: 'range' }>, vars: Scope[]): void {
    vars.push([]);
    try {
      const value = this.pipeline(dot, { ...node.pipe, decl: [] }, vars);
      let entries: Array<[GoValue, GoValue]>;
      if (value === undefined || value === null) entries = [];
      else if (Array.isArray(value)) entries = value.map((item, i) => [BigInt(i), item]);
      else if (isMap(value))
        entries = Object.keys(value)
          .sort()
          .map((key) => [key, value[key]!]);
      else if (typeof value === 'bigint')
        entries = Array.from({ length: Number(value) > 0 ? Number(value) : 0 }, (_, i) => [BigInt(i), BigInt(i)]);
      else this.fail(node.pos, `range can't iterate over ${formatValue(value)}`);
      if (entries.length === 0) {
        if (node.elseList) this.walk(dot, node.elseList, vars);
        return;
      }
      const scope = vars[vars.length - 1]!;
      for (const [key, item] of entries) {
        this.tick(node.pos);
        // $v := … binds the element; $k, $v := … binds the index (or key) and the element.
        if (node.pipe.decl.length === 1) setVar(scope, node.pipe.decl[0]!, item);
        else if (node.pipe.decl.length === 2) {
          setVar(scope, node.pipe.decl[0]!, key);
          setVar(scope, node.pipe.decl[1]!, item);
        }
        vars.push([]);
        try {
          this.walk(item, node.list, vars);
        } catch (signal) {
          if (signal instanceof BreakSignal) break;
          if (!(signal instanceof ContinueSignal)) throw signal;
        } finally {
          vars.pop();
        }
      }
    } finally {
      vars.pop();
    }
  }

  pipeline(dot: GoValue, pipe: Pipe, vars: Scope[]): GoValue {
    let value: GoValue | typeof MISSING = MISSING;
    for (const cmd of pipe.cmds) {
      value = this.command(dot, cmd, value, vars);
      // text/template unwraps interface{}: a nil interface becomes "no value".
      if (value === null) value = undefined;
    }
    const result = value === MISSING ? undefined : value;
    for (const name of pipe.decl) {
      if (pipe.isAssign) assignVar(vars, name, result);
      else setVar(vars[vars.length - 1]!, name, result);
    }
    return result;
  }

  private command(dot: GoValue, cmd: Command, final: GoValue | typeof MISSING, vars: Scope[]): GoValue {
    this.tick(cmd.pos);
    const [head, ...rest] = cmd.args as [Arg, ...Arg[]];
    const hasArgs = rest.length > 0 || final !== MISSING;
    switch (head.type) {
      case 'identifier':
        return this.call(dot, head.name, rest, final, vars, head.pos);
      case 'field':
        return this.fieldChain(dot, dot, head.fields, hasArgs, head.pos, '.' + head.fields.join('.'));
      case 'variable':
        if (hasArgs && head.fields.length === 0) this.fail(head.pos, `can't give argument to non-function ${head.name}`, head.name);
        return this.fieldChain(
          dot,
          lookupVar(vars, head.name),
          head.fields,
          hasArgs,
          head.pos,
          head.name + head.fields.map((f) => '.' + f).join(''),
        );
      case 'chain': {
        const base = this.arg(dot, head.node, vars);
        return this.fieldChain(dot, base, head.fields, hasArgs, head.pos, '(…).' + head.fields.join('.'));
      }
      case 'pipe':
        if (hasArgs) this.fail(head.pos, `can't give argument to non-function (…)`);
        return this.pipeline(dot, head.pipe, [...vars, []]);
      default:
        if (hasArgs) this.fail(head.pos, `can't give argument to non-function ${this.text(head)}`);
        if (head.type === 'nil') this.fail(head.pos, 'nil is not a command');
        return this.arg(dot, head, vars);
    }
  }

  private text(arg: Arg): string {
    switch (arg.type) {
      case 'number':
        return arg.text;
      case 'string':
        return JSON.stringify(arg.value);
      case 'bool':
        return String(arg.value);
      case 'dot':
        return '.';
      default:
        return arg.type;
    }
  }

  private fieldChain(dot: GoValue, receiver: GoValue, fields: string[], hasArgs: boolean, pos: number, label: string): GoValue {
    void dot;
    let value = receiver;
    for (const [i, field] of fields.entries()) {
      const last = i === fields.length - 1;
      if (isMap(value)) {
        if (last && hasArgs) this.fail(pos, `${field} is not a method but has arguments`, label);
        if (!Object.hasOwn(value, field)) this.fail(pos, `map has no entry for key "${field}"`, label);
        value = value[field]!;
      } else if (value === null) this.fail(pos, `nil pointer evaluating interface {}.${field}`, label);
      else if (value === undefined) this.fail(pos, `nil data; no entry for key "${field}"`, label);
      else this.fail(pos, `can't evaluate field ${field} in type ${typeName(value)}`, label);
    }
    return value;
  }

  /** An argument's value (Go's evalEmptyInterface): literals get their Go type. */
  private arg(dot: GoValue, arg: Arg, vars: Scope[]): GoValue {
    switch (arg.type) {
      case 'dot':
        return dot;
      case 'nil':
        return null;
      case 'bool':
        return arg.value;
      case 'string':
        return arg.value;
      case 'number':
        return arg.isFloat || arg.int === undefined ? arg.float : arg.int;
      case 'field':
        return this.fieldChain(dot, dot, arg.fields, false, arg.pos, '.' + arg.fields.join('.'));
      case 'variable':
        return this.fieldChain(dot, lookupVar(vars, arg.name), arg.fields, false, arg.pos, arg.name);
      case 'chain':
        return this.fieldChain(dot, this.arg(dot, arg.node, vars), arg.fields, false, arg.pos, '(…)');
      case 'pipe':
        return this.pipeline(dot, arg.pipe, [...vars, []]);
      case 'identifier':
        // A function name as an argument is called without arguments (Go: evalArg → evalFunction).
        return this.call(dot, arg.name, [], MISSING, vars, arg.pos);
    }
  }

  /** An argument checked against a parameter kind (Go's evalArg + validateType). */
  private typedArg(dot: GoValue, arg: Arg | undefined, piped: GoValue, kind: ParamKind, vars: Scope[], name: string, pos: number): GoValue {
    if (arg && kind !== 'any') {
      // Literals are checked against the parameter type before evaluation.
      const expect = kind === 'float' ? 'float64' : kind === 'map' ? 'map[string]interface {}' : kind;
      if (arg.type === 'nil') {
        if (kind === 'map') return null;
        this.fail(arg.pos, `cannot assign nil to ${expect}`, name);
      }
      if (arg.type === 'string' && kind !== 'string') this.fail(arg.pos, `expected ${expect}; found ${JSON.stringify(arg.value)}`, name);
      if (arg.type === 'bool' && kind !== 'bool') this.fail(arg.pos, `expected ${expect}; found ${arg.value}`, name);
      if (arg.type === 'number') {
        if (kind === 'int' && arg.int !== undefined && !/[.eE]/.test(arg.text)) return arg.int;
        if (kind === 'int' && Number.isInteger(arg.float)) return BigInt(arg.float);
        if (kind === 'float') return arg.float;
        this.fail(arg.pos, `expected ${expect}; found ${arg.text}`, name);
      }
    }
    const value = arg ? this.arg(dot, arg, vars) : piped;
    if (kind === 'any') return value === undefined ? null : value;
    const ok =
      (kind === 'string' && typeof value === 'string') ||
      (kind === 'int' && typeof value === 'bigint') ||
      (kind === 'float' && typeof value === 'number') ||
      (kind === 'bool' && typeof value === 'boolean') ||
      (kind === 'map' && (isMap(value) || value === null));
    if (ok) return value;
    const expect = kind === 'float' ? 'float64' : kind === 'map' ? 'map[string]interface {}' : kind;
    if (value === undefined || value === null) this.fail(pos, `invalid value; expected ${expect}`, name);
    return this.fail(pos, `wrong type for value; expected ${expect}; got ${typeName(value)}`, name);
  }

  private call(dot: GoValue, name: string, args: Arg[], final: GoValue | typeof MISSING, vars: Scope[], pos: number): GoValue {
    const fn = this.funcs.get(name);
    if (!fn) this.fail(pos, `"${name}" is not a defined function`, name);
    const count = args.length + (final === MISSING ? 0 : 1);
    const fixed = fn.params.length;
    if (fn.variadic ? count < fixed : count !== fixed) {
      this.fail(pos, `wrong number of args for ${name}: want ${fn.variadic ? 'at least ' : ''}${fixed} got ${count}`, name);
    }
    const kindAt = (i: number): ParamKind => fn.params[i] ?? fn.variadic ?? 'any';
    // and/or evaluate their arguments lazily, left to right (Go 1.18+).
    if (name === 'and' || name === 'or') {
      let value: GoValue = null;
      for (let i = 0; i < count; i++) {
        value = i < args.length ? this.arg(dot, args[i]!, vars) : (final as GoValue);
        if (value === undefined) value = null;
        if (truth(value) === (name === 'or')) return value;
      }
      return value;
    }
    const values: GoValue[] = [];
    for (let i = 0; i < count; i++) {
      values.push(
        this.typedArg(dot, args[i], i < args.length ? undefined : (final as GoValue), kindAt(i), vars, name, args[i]?.pos ?? pos),
      );
    }
    try {
      return fn.fn(...values);
    } catch (error) {
      if (error instanceof TemplateExecError) throw error;
      return this.fail(pos, `error calling ${name}: ${(error as Error).message ?? String(error)}`, name);
    }
  }
}

const MISSING = Symbol('missing');

function setVar(scope: Scope, name: string, value: GoValue) {
  const existing = scope.find((v) => v.name === name);
  if (existing) existing.value = value;
  else scope.push({ name, value });
}

function lookupVar(vars: Scope[], name: string): GoValue {
  for (let i = vars.length - 1; i >= 0; i--) {
    const found = vars[i]!.findLast((v) => v.name === name);
    if (found) return found.value;
  }
  throw new TemplateExecError(`undefined variable: ${name}`);
}

function assignVar(vars: Scope[], name: string, value: GoValue) {
  for (let i = vars.length - 1; i >= 0; i--) {
    const found = vars[i]!.findLast((v) => v.name === name);
    if (found) {
      found.value = value;
      return;
    }
  }
  throw new TemplateExecError(`undefined variable: ${name}`);
}
