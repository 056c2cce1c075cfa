/**
 * text/template's predefined functions (Go 1.19 semantics): `and or not len
 * index print printf println eq ne lt le gt ge html js urlquery`. `and`/`or`
 * are lazy and handled by the executor; their entries here carry the
 * signature. `slice` comes from sprig, which replaces Go's own (as in muster,
 * whose function map is sprig's). `call` is not offered: data holds no
 * functions.
 */
import type { GoFunction } from './exec.js';
import { sprint, sprintf, sprintln } from './printf.js';
import { byteLength, isMap, truth, typeName, type GoValue } from './values.js';

type Kind = 'bool' | 'int' | 'float' | 'string' | 'invalid' | 'other';

const basicKind = (v: GoValue): Kind =>
  v === null || v === undefined
    ? 'invalid'
    : typeof v === 'boolean'
      ? 'bool'
      : typeof v === 'bigint'
        ? 'int'
        : typeof v === 'number'
          ? 'float'
          : typeof v === 'string'
            ? 'string'
            : 'other';

function eq(a: GoValue, ...rest: GoValue[]): boolean {
  if (rest.length === 0) throw new Error('missing argument for comparison');
  const k1 = basicKind(a);
  for (const b of rest) {
    const k2 = basicKind(b);
    if (k1 !== k2) {
      if (k1 !== 'invalid' && k2 !== 'invalid') throw new Error('incompatible types for comparison');
      continue;
    }
    if (k1 === 'other') {
      // Lists and maps are not comparable in Go.
      throw new Error(`non-comparable type ${typeName(b)}`);
    }
    if (k1 === 'invalid' || a === b) return true;
  }
  return false;
}

function lt(a: GoValue, b: GoValue): boolean {
  const k1 = basicKind(a);
  const k2 = basicKind(b);
  if (k1 === 'invalid' || k1 === 'other' || k2 === 'invalid' || k2 === 'other') throw new Error('invalid type for comparison');
  if (k1 !== k2) throw new Error('incompatible types for comparison');
  if (k1 === 'bool') throw new Error('invalid type for comparison');
  if (k1 === 'string') return Buffer.compare(Buffer.from(a as string), Buffer.from(b as string)) < 0;
  return (a as number | bigint) < (b as number | bigint);
}

function length(v: GoValue): bigint {
  if (typeof v === 'string') return BigInt(byteLength(v));
  if (Array.isArray(v)) return BigInt(v.length);
  if (isMap(v)) return BigInt(Object.keys(v).length);
  if (v === null || v === undefined) throw new Error('len of nil pointer');
  throw new Error(`len of type ${typeName(v)}`);
}

function indexArg(i: GoValue, cap: number): number {
  if (typeof i !== 'bigint') {
    if (i === null || i === undefined) throw new Error('cannot index slice/array with nil');
    throw new Error(`cannot index slice/array with type ${typeName(i)}`);
  }
  if (i < 0n || i > BigInt(cap)) throw new Error(`index out of range: ${i}`);
  return Number(i);
}

function index(item: GoValue, ...indexes: GoValue[]): GoValue {
  if (item === null || item === undefined) throw new Error('index of untyped nil');
  let current: GoValue = item;
  for (const i of indexes) {
    if (current === null || current === undefined) throw new Error('index of nil pointer');
    if (Array.isArray(current)) {
      const x = indexArg(i, current.length);
      if (x >= current.length) throw new Error(`reflect: slice index out of range`);
      current = current[x]!;
    } else if (typeof current === 'string') {
      const bytes: Buffer = Buffer.from(current, 'utf8');
      const x = indexArg(i, bytes.length);
      if (x >= bytes.length) throw new Error(`reflect: string index out of range`);
      current = BigInt(bytes[x]!);
    } else if (isMap(current)) {
      if (typeof i !== 'string') throw new Error(`value has type ${typeName(i)}; should be string`);
      current = Object.hasOwn(current, i) ? current[i]! : null;
    } else throw new Error(`can't index item of type ${typeName(current)}`);
  }
  return current;
}

const htmlEscape = (s: string) =>
  s.replace(/[&'<>"\0]/g, (c) => ({ '&': '&amp;', "'": '&#39;', '<': '&lt;', '>': '&gt;', '"': '&#34;', '\0': '\uFFFD' })[c]!);

function jsEscape(s: string): string {
  let out = '';
  for (const c of s) {
    const code = c.codePointAt(0)!;
    if (c === '\\') out += '\\\\';
    else if (c === "'") out += "\\'";
    else if (c === '"') out += '\\"';
    else if (c === '<') out += '\\u003C';
    else if (c === '>') out += '\\u003E';
    else if (c === '&') out += '\\u0026';
    else if (c === '=') out += '\\u003D';
    else if (code < 0x20) out += `\\u${code.toString(16).toUpperCase().padStart(4, '0')}`;
    else out += c;
  }
  return out;
}

/** Go's evalArgs for html/js/urlquery: one string argument is used as is, anything else is fmt.Sprint'ed. */
const evalArgs = (args: GoValue[]) => (args.length === 1 && typeof args[0] === 'string' ? args[0] : sprint(args));

export const BUILTINS: Record<string, GoFunction> = {
  and: { params: ['any'], variadic: 'any', fn: () => null },
  or: { params: ['any'], variadic: 'any', fn: () => null },
  not: { params: ['any'], fn: (v) => !truth(v) },
  len: { params: ['any'], fn: length },
  index: { params: ['any'], variadic: 'any', fn: index },
  print: { params: [], variadic: 'any', fn: (...args) => sprint(args) },
  printf: { params: ['string'], variadic: 'any', fn: (format, ...args) => sprintf(format as string, args) },
  println: { params: [], variadic: 'any', fn: (...args) => sprintln(args) },
  eq: { params: ['any'], variadic: 'any', fn: eq },
  ne: { params: ['any', 'any'], fn: (a, b) => !eq(a, b) },
  lt: { params: ['any', 'any'], fn: lt },
  le: { params: ['any', 'any'], fn: (a, b) => lt(a, b) || eq(a, b) },
  gt: { params: ['any', 'any'], fn: (a, b) => !(lt(a, b) || eq(a, b)) },
  ge: { params: ['any', 'any'], fn: (a, b) => !lt(a, b) },
  html: { params: [], variadic: 'any', fn: (...args) => htmlEscape(evalArgs(args)) },
  js: { params: [], variadic: 'any', fn: (...args) => jsEscape(evalArgs(args)) },
  urlquery: { params: [], variadic: 'any', fn: (...args) => encodeURIComponent(evalArgs(args)).replace(/%20/g, '+') },
};
