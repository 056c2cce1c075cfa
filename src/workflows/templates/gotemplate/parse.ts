/**
 * The parser of Go's `text/template`: the tree of text, actions and the
 * control structures (`if`/`else if`/`else`, `range` with `break`/`continue`,
 * `with`), pipelines with `|`, variable declarations and assignments, and
 * parenthesised sub-pipelines. As in Go, a call to a function that is not
 * defined, or a use of an undeclared variable, is a parse error — so a
 * template that loads cannot fail later for either reason.
 *
 * Not supported (refused with a clear message): `define`, `template`, `block`
 * (a workflow field is a single template, never a set of named ones).
 */
import { lex, TemplateSyntaxError, type Token } from './lexer.js';

export type Node =
  | { type: 'text'; text: string }
  | { type: 'action'; pipe: Pipe; pos: number }
  | { type: 'if' | 'with'; pipe: Pipe; list: Node[]; elseList?: Node[]; pos: number }
  | { type: 'range'; pipe: Pipe; list: Node[]; elseList?: Node[]; pos: number }
  | { type: 'break' | 'continue'; pos: number };

export interface Pipe {
  /** Declared (`:=`) or assigned (`=`) variables, e.g. `$i, $v := …`. */
  decl: string[];
  isAssign: boolean;
  cmds: Command[];
  pos: number;
}

export interface Command {
  args: Arg[];
  pos: number;
}

export type Arg =
  | { type: 'identifier'; name: string; pos: number }
  | { type: 'dot'; pos: number }
  | { type: 'nil'; pos: number }
  | { type: 'bool'; value: boolean; pos: number }
  | { type: 'string'; value: string; pos: number }
  | { type: 'number'; text: string; int?: bigint; float: number; isFloat: boolean; pos: number }
  | { type: 'field'; fields: string[]; pos: number } // .a.b
  | { type: 'variable'; name: string; fields: string[]; pos: number } // $x.a.b
  | { type: 'chain'; node: Arg; fields: string[]; pos: number } // (pipe).a.b
  | { type: 'pipe'; pipe: Pipe; pos: number };

/** A parsed template. */
export interface Tree {
  source: string;
  root: Node[];
}

/** What the parser must know: which function names exist. */
export interface ParseOptions {
  hasFunction(name: string): boolean;
}

/** Parses a template; throws {@link TemplateSyntaxError}. */
export function parse(source: string, options: ParseOptions): Tree {
  return { source, root: new Parser(lex(source), options).parseRoot() };
}

type End = 'eof' | 'end' | 'else';

class Parser {
  private i = 0;
  private vars: string[][] = [['$']];
  private rangeDepth = 0;

  constructor(
    private readonly tokens: Token[],
    private readonly options: ParseOptions,
  ) {}

  private peek(): Token {
    return this.tokens[this.i]!;
  }
  private next(): Token {
    return this.tokens[this.i++]!;
  }
  private peekNonSpace(): Token {
    while (this.peek().kind === 'space') this.i++;
    return this.peek();
  }
  private nextNonSpace(): Token {
    this.peekNonSpace();
    return this.next();
  }
  private fail(message: string, token: Token): never {
    throw new TemplateSyntaxError(message, token.pos);
  }

  parseRoot(): Node[] {
    const { list, end } = this.parseList();
    if (end.kind !== 'eof') this.fail(`unexpected {{${end.value}}}`, end);
    return list;
  }

  /** Parses nodes until eof, `{{end}}` or `{{else …}}` (left for the caller to inspect). */
  private parseList(): { list: Node[]; end: Token } {
    const list: Node[] = [];
    for (;;) {
      const token = this.next();
      if (token.kind === 'eof') return { list, end: token };
      if (token.kind === 'text') {
        list.push({ type: 'text', text: token.value });
        continue;
      }
      // leftDelim
      const first = this.peekNonSpace();
      if (first.kind === 'keyword') {
        switch (first.value) {
          case 'end':
            this.next();
            this.expectClose('end');
            return { list, end: first };
          case 'else':
            this.next();
            return { list, end: first };
          case 'if':
          case 'with':
          case 'range':
            this.next();
            list.push(this.parseControl(first.value, first));
            continue;
          case 'break':
          case 'continue':
            this.next();
            if (this.rangeDepth === 0) this.fail(`{{${first.value}}} outside {{range}}`, first);
            this.expectClose(first.value);
            list.push({ type: first.value, pos: first.pos });
            continue;
          case 'define':
          case 'template':
          case 'block':
            this.fail(`{{${first.value}}} is not supported in workflow templates`, first);
        }
      }
      const pipe = this.parsePipeline('command', true);
      list.push({ type: 'action', pipe, pos: first.pos });
    }
  }

  private expectClose(context: string): void {
    const token = this.nextNonSpace();
    if (token.kind !== 'rightDelim') this.fail(`unexpected ${describe(token)} in ${context}`, token);
  }

  private parseControl(kind: 'if' | 'with' | 'range', at: Token): Node {
    this.vars.push([]);
    const pipe = this.parsePipeline(kind, kind !== 'if' || true);
    if (kind === 'range') this.rangeDepth++;
    let { list, end } = this.parseList();
    if (kind === 'range') this.rangeDepth--;
    let elseList: Node[] | undefined;
    if (end.value === 'else') {
      const after = this.peekNonSpace();
      if (kind === 'if' && after.kind === 'keyword' && after.value === 'if') {
        // {{else if …}}: an if nested in the else branch that shares this {{end}}.
        this.next();
        elseList = [this.parseControl('if', after)];
      } else {
        this.expectClose('else');
        ({ list: elseList, end } = this.parseList());
        if (end.value !== 'end') this.fail(`expected {{end}}, found {{${end.value}}}`, end);
      }
    } else if (end.kind === 'eof') this.fail(`unexpected EOF: {{${kind}}} has no {{end}}`, at);
    this.vars.pop();
    return { type: kind, pipe, list, ...(elseList ? { elseList } : {}), pos: at.pos };
  }

  /** A pipeline up to `}}` (or `)` when `inParens`). */
  private parsePipeline(context: string, allowDecl: boolean, inParens = false): Pipe {
    const start = this.peekNonSpace();
    const pipe: Pipe = { decl: [], isAssign: false, cmds: [], pos: start.pos };
    // Declarations: $x := / $x = / $i, $v :=
    if (allowDecl && start.kind === 'variable') {
      const save = this.i;
      const names: string[] = [];
      let ok = false;
      for (;;) {
        const v = this.nextNonSpace();
        if (v.kind !== 'variable') break;
        names.push(v.value);
        const op = this.nextNonSpace();
        if (op.kind === 'declare' || op.kind === 'assign') {
          pipe.isAssign = op.kind === 'assign';
          ok = true;
          break;
        }
        if (op.kind === 'comma' && context === 'range' && names.length < 2) continue;
        break;
      }
      if (ok) {
        pipe.decl = names;
        const scope = this.vars[this.vars.length - 1]!;
        for (const name of names) {
          if (pipe.isAssign) {
            if (!this.hasVar(name)) this.fail(`undefined variable "${name}"`, start);
          } else scope.push(name);
        }
      } else this.i = save;
    }
    for (;;) {
      const token = this.peekNonSpace();
      if ((!inParens && token.kind === 'rightDelim') || (inParens && token.kind === 'rightParen')) {
        this.next();
        break;
      }
      if (token.kind === 'eof' || token.kind === 'rightDelim' || token.kind === 'rightParen')
        this.fail(`unexpected ${describe(token)} in ${context}`, token);
      pipe.cmds.push(this.parseCommand(inParens));
      const after = this.peekNonSpace();
      if (after.kind === 'pipe') {
        this.next();
        if (this.peekNonSpace().kind === 'rightDelim' || this.peek().kind === 'rightParen')
          this.fail(`missing command after |`, this.peek());
      }
    }
    if (pipe.cmds.length === 0) this.fail(`missing value for ${context}`, start);
    // Only the first command may be a non-function with arguments' absence… and later commands must be callable.
    for (const [i, cmd] of pipe.cmds.entries()) {
      if (i > 0) {
        const head = cmd.args[0]!;
        if (head.type === 'bool' || head.type === 'string' || head.type === 'number' || head.type === 'nil' || head.type === 'dot')
          throw new TemplateSyntaxError(`non executable command in pipeline stage ${i + 1}`, head.pos);
      }
    }
    return pipe;
  }

  private parseCommand(inParens: boolean): Command {
    const cmd: Command = { args: [], pos: this.peekNonSpace().pos };
    for (;;) {
      const token = this.peekNonSpace();
      if (token.kind === 'rightDelim' || token.kind === 'pipe' || (inParens && token.kind === 'rightParen')) break;
      if (token.kind === 'eof') this.fail('unclosed action', token);
      cmd.args.push(this.parseOperand());
      const sep = this.peek();
      if (sep.kind !== 'space' && sep.kind !== 'rightDelim' && sep.kind !== 'pipe' && !(inParens && sep.kind === 'rightParen'))
        this.fail(`unexpected ${describe(sep)} in operand`, sep);
    }
    if (cmd.args.length === 0) this.fail('empty command', this.peek());
    return cmd;
  }

  /** A term followed by any `.field` chain written without spaces. */
  private parseOperand(): Arg {
    const term = this.parseTerm();
    const fields: string[] = [];
    while (this.peek().kind === 'field') fields.push(this.next().value.slice(1));
    if (fields.length === 0) return term;
    switch (term.type) {
      case 'field':
        return { ...term, fields: [...term.fields, ...fields] };
      case 'variable':
        return { ...term, fields: [...term.fields, ...fields] };
      case 'bool':
      case 'string':
      case 'number':
      case 'nil':
      case 'dot':
        this.fail(`unexpected . after term`, this.tokens[this.i - 1]!);
      // falls through (fail throws)
      default:
        return { type: 'chain', node: term, fields, pos: term.pos };
    }
  }

  private parseTerm(): Arg {
    const token = this.next();
    switch (token.kind) {
      case 'identifier':
        if (!this.options.hasFunction(token.value)) this.fail(`function "${token.value}" not defined`, token);
        return { type: 'identifier', name: token.value, pos: token.pos };
      case 'dot':
        return { type: 'dot', pos: token.pos };
      case 'keyword':
        if (token.value === 'nil') return { type: 'nil', pos: token.pos };
        return this.fail(`unexpected ${describe(token)} in operand`, token);
      case 'variable':
        if (!this.hasVar(token.value)) this.fail(`undefined variable "${token.value}"`, token);
        return { type: 'variable', name: token.value, fields: [], pos: token.pos };
      case 'field':
        return { type: 'field', fields: [token.value.slice(1)], pos: token.pos };
      case 'bool':
        return { type: 'bool', value: token.value === 'true', pos: token.pos };
      case 'string':
        return { type: 'string', value: unquote(token), pos: token.pos };
      case 'rawString':
        return { type: 'string', value: token.value.slice(1, -1).replace(/\r/g, ''), pos: token.pos };
      case 'char': {
        const text = unquote({ ...token, value: `"${token.value.slice(1, -1)}"` });
        const chars = [...text];
        if (chars.length !== 1) this.fail(`malformed character constant: ${token.value}`, token);
        const code = chars[0]!.codePointAt(0)!;
        return { type: 'number', text: token.value, int: BigInt(code), float: code, isFloat: false, pos: token.pos };
      }
      case 'number':
        return parseNumber(token);
      case 'leftParen': {
        const pipe = this.parsePipeline('parenthesized pipeline', false, true);
        return { type: 'pipe', pipe, pos: token.pos };
      }
      default:
        return this.fail(`unexpected ${describe(token)} in operand`, token);
    }
  }

  private hasVar(name: string): boolean {
    return this.vars.some((scope) => scope.includes(name));
  }
}

function describe(token: Token): string {
  switch (token.kind) {
    case 'eof':
      return 'EOF';
    case 'rightDelim':
      return '"}}"';
    case 'rightParen':
      return '")"';
    case 'space':
      return 'space';
    default:
      return `<${token.value}>`;
  }
}

function parseNumber(token: Token): Arg {
  const text = token.value.replace(/_/g, '');
  const sign = text.startsWith('-') ? -1n : 1n;
  const body = text.replace(/^[+-]/, '');
  const hexOrRadix = /^0[xXoObB]/.test(body);
  // Go: a literal with . e E (or p P in hex) is a float constant when passed as interface{}.
  const isFloat = hexOrRadix ? /[pP]/.test(body) : /[.eE]/.test(body);
  let int: bigint | undefined;
  if (!isFloat) {
    try {
      const radix = /^0[oO]/.test(body) ? '0o' + body.slice(2) : /^0[0-9]+$/.test(body) ? '0o' + body.slice(1) : body;
      int = sign * BigInt(radix);
    } catch {
      throw new TemplateSyntaxError(`bad number syntax: ${token.value}`, token.pos);
    }
  }
  const float = int !== undefined ? Number(int) : Number(text);
  if (Number.isNaN(float)) throw new TemplateSyntaxError(`bad number syntax: ${token.value}`, token.pos);
  return { type: 'number', text: token.value, ...(int !== undefined ? { int } : {}), float, isFloat, pos: token.pos };
}

/** Go's interpreted string literal. */
function unquote(token: Token): string {
  const body = token.value.slice(1, -1);
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = body[++i];
    const simple: Record<string, string> = {
      n: '\n',
      t: '\t',
      r: '\r',
      '\\': '\\',
      '"': '"',
      "'": "'",
      a: '\x07',
      b: '\b',
      f: '\f',
      v: '\v',
    };
    if (e !== undefined && simple[e] !== undefined) out += simple[e];
    else if (e === 'x' || e === 'u' || e === 'U') {
      const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
      const hex = body.slice(i + 1, i + 1 + n);
      if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(hex)) throw new TemplateSyntaxError(`invalid escape in ${token.value}`, token.pos);
      out += e === 'x' ? String.fromCharCode(parseInt(hex, 16)) : String.fromCodePoint(parseInt(hex, 16));
      i += n;
    } else if (e !== undefined && /[0-7]/.test(e)) {
      const oct = body.slice(i, i + 3);
      if (!/^[0-7]{3}$/.test(oct)) throw new TemplateSyntaxError(`invalid escape in ${token.value}`, token.pos);
      out += String.fromCharCode(parseInt(oct, 8));
      i += 2;
    } else throw new TemplateSyntaxError(`invalid escape in ${token.value}`, token.pos);
  }
  return out;
}
