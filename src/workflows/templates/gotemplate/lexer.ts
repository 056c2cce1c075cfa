/**
 * The lexer of Go's `text/template` (https://pkg.go.dev/text/template): text
 * and `{{ actions }}` with trim markers (`{{- ` / ` -}}`) and comments.
 *
 * One deliberate extension: a field name may hold a hyphen between letters or
 * digits (`.results.prod-only.x`), because muster step ids allow hyphens and
 * its users write such paths; Go itself refuses them at parse time.
 */

export type TokenKind =
  | 'text'
  | 'leftDelim'
  | 'rightDelim'
  | 'field' // .name
  | 'dot' // .
  | 'variable' // $ or $name
  | 'identifier' // function name
  | 'keyword' // if else end range with break continue define template block nil
  | 'bool'
  | 'number'
  | 'char'
  | 'string'
  | 'rawString'
  | 'leftParen'
  | 'rightParen'
  | 'pipe'
  | 'declare' // :=
  | 'assign' // =
  | 'comma'
  | 'space'
  | 'eof';

export interface Token {
  kind: TokenKind;
  /** The token's source text (for text: after trimming). */
  value: string;
  /** Offset in the template source. */
  pos: number;
}

/** A template that does not lex or parse; `pos` is the offset in the source. */
export class TemplateSyntaxError extends Error {
  constructor(
    message: string,
    readonly pos: number,
  ) {
    super(message);
    this.name = 'TemplateSyntaxError';
  }
}

const KEYWORDS = new Set(['if', 'else', 'end', 'range', 'with', 'break', 'continue', 'define', 'template', 'block', 'nil']);
const SPACE = /[ \t\r\n]/;
const isSpace = (c: string | undefined) => c !== undefined && SPACE.test(c);
const isAlnum = (c: string | undefined) => c !== undefined && /[\p{L}\p{Nd}_]/u.test(c);

/** Splits a template into tokens. */
export function lex(source: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  let trimNext = false;
  while (pos <= source.length) {
    const open = source.indexOf('{{', pos);
    let text = source.slice(pos, open < 0 ? source.length : open);
    let trimBefore = false;
    if (open >= 0 && source[open + 2] === '-' && isSpace(source[open + 3])) trimBefore = true;
    if (trimNext) text = text.replace(/^[ \t\r\n]+/, '');
    if (trimBefore) text = text.replace(/[ \t\r\n]+$/, '');
    if (text.length > 0) tokens.push({ kind: 'text', value: text, pos });
    if (open < 0) break;
    pos = lexAction(source, open, trimBefore, tokens, (trim) => (trimNext = trim));
  }
  tokens.push({ kind: 'eof', value: '', pos: source.length });
  return tokens;
}

/** Lexes one action starting at `open`; returns the offset after its `}}`. */
function lexAction(source: string, open: number, trimmed: boolean, tokens: Token[], setTrim: (trim: boolean) => void): number {
  let pos = open + 2 + (trimmed ? 2 : 0);
  // Comments: {{/* ... */}}, possibly with trim markers; nothing else may be in the action.
  if (source.startsWith('/*', pos)) {
    const end = source.indexOf('*/', pos + 2);
    if (end < 0) throw new TemplateSyntaxError('unclosed comment', open);
    pos = end + 2;
    let trim = false;
    if (source.startsWith(' -}}', pos)) {
      trim = true;
      pos += 4;
    } else if (source.startsWith('}}', pos)) pos += 2;
    else throw new TemplateSyntaxError('comment ends before closing delimiter', open);
    setTrim(trim);
    return pos;
  }
  tokens.push({ kind: 'leftDelim', value: '{{', pos: open });
  let parens = 0;
  for (;;) {
    if (pos >= source.length) throw new TemplateSyntaxError('unclosed action', open);
    const c = source[pos]!;
    if (isSpace(c)) {
      const start = pos;
      while (isSpace(source[pos])) pos++;
      // ` -}}` closes with a trim marker.
      if (source.startsWith('-}}', pos)) {
        tokens.push({ kind: 'rightDelim', value: '}}', pos });
        setTrim(true);
        return pos + 3;
      }
      tokens.push({ kind: 'space', value: source.slice(start, pos), pos: start });
      continue;
    }
    if (source.startsWith('}}', pos)) {
      if (parens > 0) throw new TemplateSyntaxError('unclosed left paren', pos);
      tokens.push({ kind: 'rightDelim', value: '}}', pos });
      setTrim(false);
      return pos + 2;
    }
    const start = pos;
    if (c === '"') {
      pos++;
      while (source[pos] !== '"') {
        if (pos >= source.length || source[pos] === '\n') throw new TemplateSyntaxError('unterminated quoted string', start);
        if (source[pos] === '\\') pos++;
        pos++;
      }
      pos++;
      tokens.push({ kind: 'string', value: source.slice(start, pos), pos: start });
    } else if (c === '`') {
      const end = source.indexOf('`', pos + 1);
      if (end < 0) throw new TemplateSyntaxError('unterminated raw quoted string', start);
      pos = end + 1;
      tokens.push({ kind: 'rawString', value: source.slice(start, pos), pos: start });
    } else if (c === "'") {
      pos++;
      while (source[pos] !== "'") {
        if (pos >= source.length || source[pos] === '\n') throw new TemplateSyntaxError('unterminated character constant', start);
        if (source[pos] === '\\') pos++;
        pos++;
      }
      pos++;
      tokens.push({ kind: 'char', value: source.slice(start, pos), pos: start });
    } else if (c === '$') {
      pos++;
      while (isAlnum(source[pos])) pos++;
      tokens.push({ kind: 'variable', value: source.slice(start, pos), pos: start });
    } else if (c === '.') {
      if (/[0-9]/.test(source[pos + 1] ?? '')) {
        pos = lexNumber(source, pos);
        tokens.push({ kind: 'number', value: source.slice(start, pos), pos: start });
      } else if (isAlnum(source[pos + 1])) {
        pos++;
        // Field names: Go's alphanumerics, plus inner hyphens (the muster extension above).
        while (isAlnum(source[pos]) || (source[pos] === '-' && isAlnum(source[pos - 1]) && isAlnum(source[pos + 1]))) pos++;
        tokens.push({ kind: 'field', value: source.slice(start, pos), pos: start });
      } else {
        pos++;
        tokens.push({ kind: 'dot', value: '.', pos: start });
      }
    } else if (/[0-9]/.test(c) || ((c === '-' || c === '+') && /[0-9.]/.test(source[pos + 1] ?? ''))) {
      pos = lexNumber(source, pos);
      tokens.push({ kind: 'number', value: source.slice(start, pos), pos: start });
    } else if (isAlnum(c)) {
      while (isAlnum(source[pos])) pos++;
      const word = source.slice(start, pos);
      const kind: TokenKind = KEYWORDS.has(word) ? 'keyword' : word === 'true' || word === 'false' ? 'bool' : 'identifier';
      tokens.push({ kind, value: word, pos: start });
    } else if (c === ':' && source[pos + 1] === '=') {
      pos += 2;
      tokens.push({ kind: 'declare', value: ':=', pos: start });
    } else if (c === '=') {
      pos++;
      tokens.push({ kind: 'assign', value: '=', pos: start });
    } else if (c === '|') {
      pos++;
      tokens.push({ kind: 'pipe', value: '|', pos: start });
    } else if (c === ',') {
      pos++;
      tokens.push({ kind: 'comma', value: ',', pos: start });
    } else if (c === '(') {
      pos++;
      parens++;
      tokens.push({ kind: 'leftParen', value: '(', pos: start });
    } else if (c === ')') {
      pos++;
      parens--;
      if (parens < 0) throw new TemplateSyntaxError(`unexpected right paren`, start);
      tokens.push({ kind: 'rightParen', value: ')', pos: start });
    } else {
      throw new TemplateSyntaxError(`unrecognized character in action: ${JSON.stringify(c)}`, start);
    }
  }
}

/** Scans a Go number literal (decimal, hex, octal, binary, float, with `_` separators). */
function lexNumber(source: string, pos: number): number {
  if (source[pos] === '+' || source[pos] === '-') pos++;
  let digits = '0123456789_';
  if (source[pos] === '0' && /[xXoObB]/.test(source[pos + 1] ?? '')) {
    const base = source[pos + 1]!.toLowerCase();
    digits = base === 'x' ? '0123456789abcdefABCDEF_' : base === 'o' ? '01234567_' : '01_';
    pos += 2;
  }
  while (pos < source.length && digits.includes(source[pos]!)) pos++;
  if (source[pos] === '.') {
    pos++;
    while (pos < source.length && digits.includes(source[pos]!)) pos++;
  }
  if (digits.length === 11 && /[eE]/.test(source[pos] ?? '')) {
    pos++;
    if (source[pos] === '+' || source[pos] === '-') pos++;
    while (/[0-9_]/.test(source[pos] ?? '')) pos++;
  } else if (digits.length > 11 && /[pP]/.test(source[pos] ?? '')) {
    pos++;
    if (source[pos] === '+' || source[pos] === '-') pos++;
    while (/[0-9_]/.test(source[pos] ?? '')) pos++;
  }
  if (isAlnum(source[pos])) throw new TemplateSyntaxError(`bad number syntax: ${JSON.stringify(source.slice(0, pos + 1).slice(-20))}`, pos);
  return pos;
}
