/**
 * The sprig (Masterminds/sprig v3) functions muster's templates can call,
 * with sprig's semantics: its math goes through int64 (`add 1.5 1` is 2),
 * `default` tests sprig's `empty`, `get` on a missing key gives "", `join`
 * skips nils, `toJson` sorts keys and escapes HTML as encoding/json does.
 *
 * Deliberately absent (a call is refused when the file loads, "function … not
 * defined"): `env`/`expandenv` (a workflow must not read the server's
 * environment), date functions (`now`, `date`, …: a replayed step would see a
 * different clock), random and crypto-key functions (`randAlpha`, `uuidv4`,
 * `shuffle`, `genPrivateKey`, …: not replay-safe), `semver*`, `url*`, and
 * the deprecated aliases.
 */
import { createHash } from 'node:crypto';
import type { GoFunction, ParamKind } from './exec.js';
import { compareGoStrings, formatValue, isMap, kindName, toJson, truth, typeName, fromPlain, type GoValue } from './values.js';

/** sprig's strval: strings as they are, everything else as fmt's %v. */
const strval = (v: GoValue): string => (typeof v === 'string' ? v : formatValue(v, false));

/** spf13/cast ToInt64 (errors give 0, as sprig ignores them). */
function toInt64(v: GoValue): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? BigInt(Math.trunc(v)) : 0n;
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (typeof v === 'string') {
    const s = v.replace(/\.0*$/, '');
    try {
      if (/^[+-]?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO]?[0-7_]*|[1-9][0-9_]*|0)$/.test(s)) {
        const negative = s.startsWith('-');
        const body = s.replace(/^[+-]/, '').replace(/_/g, '');
        const lit = /^0[0-7]+$/.test(body) ? '0o' + body.slice(1) : body;
        return negative ? -BigInt(lit) : BigInt(lit);
      }
    } catch {
      return 0n;
    }
    return 0n;
  }
  return 0n;
}

/** spf13/cast ToFloat64. */
function toFloat64(v: GoValue): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') {
    const f = Number(v.trim());
    return v.trim() === '' || Number.isNaN(f) ? 0 : f;
  }
  return 0;
}

/** sprig's empty: nil, false, 0, "" and empty lists/maps. */
const empty = (v: GoValue): boolean => !truth(v);

function asList(v: GoValue, fn: string): GoValue[] {
  if (Array.isArray(v)) return v;
  throw new Error(`Cannot find ${fn} on type ${kindName(v)}`);
}

const list = (v: GoValue, what: string): GoValue[] => {
  if (Array.isArray(v)) return v;
  throw new Error(`${what} should be type of slice or array but ${kindName(v)}`);
};

const strslice = (v: GoValue): string[] => {
  if (Array.isArray(v)) return v.filter((item) => item !== null && item !== undefined).map(strval);
  if (v === null || v === undefined) return [];
  return [strval(v)];
};

const deepEqual = (a: GoValue, b: GoValue): boolean => {
  if (typeof a !== typeof b) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isMap(a) && isMap(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return a === b;
};

function regex(pattern: string): RegExp {
  // RE2 and JavaScript agree on the common syntax; RE2's (?P<name>…) is JavaScript's (?<name>…).
  return new RegExp(pattern.replace(/\(\?P</g, '(?<'), 'gu');
}

/** Go's Regexp.Expand templates ($1, ${1}, $name, ${name}) as JavaScript replacement text. */
const goReplacement = (repl: string) =>
  repl.replace(/\$\$|\$\{([^}]*)\}|\$([A-Za-z0-9_]+)/g, (m, braced: string | undefined, bare: string | undefined) => {
    if (m === '$$') return '$$';
    const name = braced ?? bare!;
    return /^\d+$/.test(name) ? `$${name}` : `$<${name}>`;
  });

function words(s: string): string[] {
  return s
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
}

const title = (s: string) => s.replace(/(^|[^\p{L}\p{N}_'])(\p{L})/gu, (_m, pre: string, c: string) => pre + c.toUpperCase());

function dig(args: GoValue[]): GoValue {
  if (args.length < 3) throw new Error('dig needs at least three arguments');
  const dict = args[args.length - 1];
  const fallback = args[args.length - 2]!;
  const keys = args.slice(0, -2);
  let current: GoValue = dict ?? null;
  for (const key of keys) {
    if (typeof key !== 'string') throw new Error(`interface conversion: interface {} is ${typeName(key)}, not string`);
    if (!isMap(current) || !Object.hasOwn(current, key)) return fallback;
    current = current[key]!;
  }
  return current;
}

function merge(overwrite: boolean, dst: GoValue, ...srcs: GoValue[]): GoValue {
  const into = (d: Record<string, GoValue>, s: Record<string, GoValue>) => {
    for (const [k, v] of Object.entries(s)) {
      const existing = d[k];
      if (isMap(existing) && isMap(v)) into(existing, v);
      else if (!Object.hasOwn(d, k) || (overwrite ? v !== null : empty(existing ?? null))) d[k] = v;
    }
  };
  if (!isMap(dst)) return dst;
  for (const src of srcs) if (isMap(src)) into(dst, src);
  return dst;
}

type Sig = [ParamKind[], ParamKind | undefined, GoFunction['fn']];
const f = (params: ParamKind[], fn: GoFunction['fn'], variadic?: ParamKind): Sig => [params, variadic, fn];

const s = (v: GoValue) => v as string;
const n = (v: GoValue) => Number(v);
const must = (name: string, fn: GoFunction['fn']): GoFunction['fn'] => fn;

const table: Record<string, Sig> = {
  // strings
  upper: f(['string'], (v) => s(v).toUpperCase()),
  lower: f(['string'], (v) => s(v).toLowerCase()),
  title: f(['string'], (v) => title(s(v))),
  untitle: f(['string'], (v) => s(v).replace(/(^|\s)(\S)/g, (_m, pre: string, c: string) => pre + c.toLowerCase())),
  trim: f(['string'], (v) => s(v).trim()),
  trimAll: f(['string', 'string'], (cut, v) => {
    const set = new Set([...s(cut)]);
    const chars = [...s(v)];
    let a = 0;
    let b = chars.length;
    while (a < b && set.has(chars[a]!)) a++;
    while (b > a && set.has(chars[b - 1]!)) b--;
    return chars.slice(a, b).join('');
  }),
  trimPrefix: f(['string', 'string'], (pre, v) => (s(v).startsWith(s(pre)) ? s(v).slice(s(pre).length) : s(v))),
  trimSuffix: f(['string', 'string'], (suf, v) => (s(suf) && s(v).endsWith(s(suf)) ? s(v).slice(0, -s(suf).length) : s(v))),
  nospace: f(['string'], (v) => s(v).replace(/\s+/gu, '')),
  repeat: f(['int', 'string'], (count, v) => {
    if (n(count) < 0) throw new Error('strings: negative Repeat count');
    if (n(count) * s(v).length > 1024 * 1024) throw new Error('repeat: result larger than 1 MiB');
    return s(v).repeat(n(count));
  }),
  substr: f(['int', 'int', 'string'], (start, end, v) => {
    const str = s(v);
    const a = n(start);
    const b = n(end);
    if (a < 0) return str.slice(0, b);
    if (b < 0 || b > str.length) return str.slice(a);
    return str.slice(a, b);
  }),
  trunc: f(['int', 'string'], (c, v) => {
    const str = s(v);
    const k = n(c);
    if (k < 0 && str.length + k > 0) return str.slice(str.length + k);
    if (k >= 0 && str.length > k) return str.slice(0, k);
    return str;
  }),
  abbrev: f(['int', 'string'], (w, v) => {
    const width = n(w);
    if (width < 4) return s(v);
    return s(v).length > width ? s(v).slice(0, width - 3) + '...' : s(v);
  }),
  initials: f(['string'], (v) =>
    s(v)
      .split(/\s+/)
      .filter(Boolean)
      .map((word) => [...word][0])
      .join(''),
  ),
  contains: f(['string', 'string'], (sub, v) => s(v).includes(s(sub))),
  hasPrefix: f(['string', 'string'], (pre, v) => s(v).startsWith(s(pre))),
  hasSuffix: f(['string', 'string'], (suf, v) => s(v).endsWith(s(suf))),
  quote: f(
    [],
    (...args) =>
      args
        .filter((a) => a !== null && a !== undefined)
        .map((a) => JSON.stringify(strval(a)))
        .join(' '),
    'any',
  ),
  squote: f(
    [],
    (...args) =>
      args
        .filter((a) => a !== null && a !== undefined)
        .map((a) => `'${strval(a)}'`)
        .join(' '),
    'any',
  ),
  cat: f(
    [],
    (...args) =>
      args
        .filter((a) => a !== null && a !== undefined)
        .map(strval)
        .join(' '),
    'any',
  ),
  indent: f(['int', 'string'], (k, v) => {
    const pad = ' '.repeat(Math.max(0, n(k)));
    return pad + s(v).replace(/\n/g, '\n' + pad);
  }),
  nindent: f(['int', 'string'], (k, v) => {
    const pad = ' '.repeat(Math.max(0, n(k)));
    return '\n' + pad + s(v).replace(/\n/g, '\n' + pad);
  }),
  replace: f(['string', 'string', 'string'], (old, neu, v) => s(v).split(s(old)).join(s(neu))),
  plural: f(['string', 'string', 'int'], (one, many, count) => (n(count) === 1 ? s(one) : s(many))),
  snakecase: f(['string'], (v) =>
    s(v)
      .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
      .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
      .replace(/[\s-]+/g, '_')
      .toLowerCase(),
  ),
  kebabcase: f(['string'], (v) =>
    s(v)
      .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
      .replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2')
      .replace(/[\s_]+/g, '-')
      .toLowerCase(),
  ),
  camelcase: f(['string'], (v) =>
    words(s(v))
      .map((w) => w[0]!.toUpperCase() + w.slice(1))
      .join(''),
  ),
  swapcase: f(['string'], (v) => [...s(v)].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('')),
  toString: f(['any'], strval),
  toStrings: f(['any'], (v) => strslice(v)),
  join: f(['string', 'any'], (sep, v) => strslice(v).join(s(sep))),
  split: f(['string', 'string'], (sep, v) =>
    Object.fromEntries(
      s(v)
        .split(s(sep))
        .map((part, i) => [`_${i}`, part]),
    ),
  ),
  splitList: f(['string', 'string'], (sep, v) => s(v).split(s(sep))),
  splitn: f(['string', 'int', 'string'], (sep, count, v) => {
    const parts = s(v).split(s(sep));
    const k = n(count);
    const out = k > 0 && parts.length > k ? [...parts.slice(0, k - 1), parts.slice(k - 1).join(s(sep))] : parts;
    return Object.fromEntries(out.map((part, i) => [`_${i}`, part]));
  }),
  sortAlpha: f(['any'], (v) => (Array.isArray(v) ? strslice(v).sort(compareGoStrings) : [strval(v)])),
  wrap: f(['int', 'string'], (w, v) => wrap(s(v), n(w), '\n')),
  wrapWith: f(['int', 'string', 'string'], (w, sep, v) => wrap(s(v), n(w), s(sep))),
  // encodings
  b64enc: f(['string'], (v) => Buffer.from(s(v), 'utf8').toString('base64')),
  b64dec: f(['string'], (v) => {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s(v)) || s(v).length % 4 !== 0) return 'illegal base64 data at input byte 0';
    return Buffer.from(s(v), 'base64').toString('utf8');
  }),
  toJson: f(['any'], (v) => toJson(v)),
  toRawJson: f(['any'], (v) => toJson(v, { raw: true })),
  toPrettyJson: f(['any'], (v) => toJson(v, { indent: '  ' })),
  fromJson: f(['string'], (v) => {
    try {
      return fromPlain(JSON.parse(s(v)));
    } catch {
      return null;
    }
  }),
  mustFromJson: f(['string'], (v) => fromPlain(JSON.parse(s(v)))),
  mustToJson: f(['any'], (v) => toJson(v)),
  sha1sum: f(['string'], (v) => createHash('sha1').update(s(v)).digest('hex')),
  sha256sum: f(['string'], (v) => createHash('sha256').update(s(v)).digest('hex')),
  // regular expressions
  regexMatch: f(['string', 'string'], (re, v) => regex(s(re)).test(s(v))),
  regexFind: f(['string', 'string'], (re, v) => regex(s(re)).exec(s(v))?.[0] ?? ''),
  regexFindAll: f(['string', 'string', 'int'], (re, v, k) => {
    const all = [...s(v).matchAll(regex(s(re)))].map((m) => m[0]);
    return n(k) < 0 ? all : all.slice(0, n(k));
  }),
  regexReplaceAll: f(['string', 'string', 'string'], (re, v, repl) => s(v).replace(regex(s(re)), goReplacement(s(repl)))),
  regexReplaceAllLiteral: f(['string', 'string', 'string'], (re, v, repl) => s(v).replace(regex(s(re)), () => s(repl))),
  regexSplit: f(['string', 'string', 'int'], (re, v, k0) => {
    // Go's Regexp.Split: with n > 0 at most n parts, the last one the unsplit rest.
    const k = n(k0);
    if (k === 0) return [];
    const parts: GoValue[] = [];
    const re0 = regex(s(re));
    let last = 0;
    for (const m of s(v).matchAll(re0)) {
      if (k > 0 && parts.length === k - 1) break;
      if (m[0] === '' && m.index === 0) continue;
      parts.push(s(v).slice(last, m.index));
      last = m.index + m[0].length;
    }
    parts.push(s(v).slice(last));
    return parts;
  }),
  regexQuoteMeta: f(['string'], (v) => s(v).replace(/[\\.+*?()|[\]{}^$]/g, '\\$&')),
  // defaults and flow
  default: f(['any'], (d, ...given) => (given.length === 0 || empty(given[0]) ? d : given[0]!), 'any'),
  empty: f(['any'], empty),
  coalesce: f([], (...args) => args.find((a) => !empty(a)) ?? null, 'any'),
  all: f([], (...args) => args.every((a) => !empty(a)), 'any'),
  any: f([], (...args) => args.some((a) => !empty(a)), 'any'),
  ternary: f(['any', 'any', 'bool'], (a, b, c) => (c ? a : b)),
  fail: f(['string'], (msg) => {
    throw new Error(s(msg));
  }),
  // numbers
  add: f([], (...args) => args.reduce<bigint>((sum, a) => sum + toInt64(a), 0n), 'any'),
  add1: f(['any'], (a) => toInt64(a) + 1n),
  sub: f(['any', 'any'], (a, b) => toInt64(a) - toInt64(b)),
  mul: f(['any'], (a, ...rest) => rest.reduce<bigint>((p, b) => p * toInt64(b), toInt64(a)), 'any'),
  div: f(['any', 'any'], (a, b) => {
    if (toInt64(b) === 0n) throw new Error('runtime error: integer divide by zero');
    return toInt64(a) / toInt64(b);
  }),
  mod: f(['any', 'any'], (a, b) => {
    if (toInt64(b) === 0n) throw new Error('runtime error: integer divide by zero');
    return toInt64(a) % toInt64(b);
  }),
  max: f(['any'], (a, ...rest) => rest.reduce<bigint>((m, b) => (toInt64(b) > m ? toInt64(b) : m), toInt64(a)), 'any'),
  min: f(['any'], (a, ...rest) => rest.reduce<bigint>((m, b) => (toInt64(b) < m ? toInt64(b) : m), toInt64(a)), 'any'),
  addf: f([], (...args) => args.reduce<number>((sum, a) => sum + toFloat64(a), 0), 'any'),
  subf: f(['any'], (a, ...rest) => rest.reduce<number>((d, b) => d - toFloat64(b), toFloat64(a)), 'any'),
  mulf: f(['any'], (a, ...rest) => rest.reduce<number>((p, b) => p * toFloat64(b), toFloat64(a)), 'any'),
  divf: f(['any'], (a, ...rest) => rest.reduce<number>((q, b) => q / toFloat64(b), toFloat64(a)), 'any'),
  maxf: f(['any'], (a, ...rest) => Math.max(toFloat64(a), ...rest.map(toFloat64)), 'any'),
  minf: f(['any'], (a, ...rest) => Math.min(toFloat64(a), ...rest.map(toFloat64)), 'any'),
  floor: f(['any'], (a) => Math.floor(toFloat64(a))),
  ceil: f(['any'], (a) => Math.ceil(toFloat64(a))),
  round: f(
    ['any', 'int'],
    (a, p) => {
      const scale = 10 ** n(p);
      const x = toFloat64(a) * scale;
      const r = x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5);
      return r / scale;
    },
    'any',
  ),
  int: f(['any'], (a) => toInt64(a)),
  int64: f(['any'], (a) => toInt64(a)),
  float64: f(['any'], (a) => toFloat64(a)),
  atoi: f(['string'], (v) => (/^[+-]?\d+$/.test(s(v)) ? BigInt(s(v)) : 0n)),
  until: f(['int'], (k) => Array.from({ length: Math.max(0, Math.min(n(k), 100_000)) }, (_, i) => BigInt(i))),
  untilStep: f(['int', 'int', 'int'], (a, b, st) => {
    const out: GoValue[] = [];
    const step = n(st);
    if (step === 0) return out;
    for (let i = n(a); step > 0 ? i < n(b) : i > n(b); i += step) {
      out.push(BigInt(i));
      if (out.length > 100_000) throw new Error('untilStep: more than 100,000 items');
    }
    return out;
  }),
  seq: f(
    [],
    (...args) => {
      const [a, b, c] = args.map((x) => n(x));
      const [start, step, end] =
        args.length === 1 ? [1, a! >= 1 ? 1 : -1, a!] : args.length === 2 ? [a!, a! <= b! ? 1 : -1, b!] : [a!, b!, c!];
      const out: number[] = [];
      if (step === 0) return '';
      for (let i = start; step > 0 ? i <= end : i >= end; i += step) {
        out.push(i);
        if (out.length > 100_000) throw new Error('seq: more than 100,000 items');
      }
      return out.join(' ');
    },
    'int',
  ),
  // lists
  list: f([], (...args) => args, 'any'),
  first: f(['any'], (v) => list(v, 'Cannot find first on type')[0] ?? null),
  last: f(['any'], (v) => {
    const l = asList(v, 'last');
    return l.length ? l[l.length - 1]! : null;
  }),
  rest: f(['any'], (v) => {
    const l = asList(v, 'rest');
    return l.length ? l.slice(1) : null;
  }),
  initial: f(['any'], (v) => {
    const l = asList(v, 'initial');
    return l.length ? l.slice(0, -1) : null;
  }),
  append: f(['any', 'any'], (v, x) => [...asList(v, 'push'), x]),
  push: f(['any', 'any'], (v, x) => [...asList(v, 'push'), x]),
  prepend: f(['any', 'any'], (v, x) => [x, ...asList(v, 'prepend')]),
  concat: f([], (...lists) => lists.flatMap((l) => asList(l, 'concat')), 'any'),
  reverse: f(['any'], (v) => [...asList(v, 'reverse')].reverse()),
  uniq: f(['any'], (v) => asList(v, 'uniq').filter((x, i, all) => all.findIndex((y) => deepEqual(x, y)) === i)),
  without: f(['any'], (v, ...omit) => asList(v, 'without').filter((x) => !omit.some((o) => deepEqual(x, o))), 'any'),
  has: f(['any', 'any'], (needle, hay) => (hay === null ? false : asList(hay, 'has').some((x) => deepEqual(x, needle)))),
  compact: f(['any'], (v) => asList(v, 'compact').filter((x) => !empty(x))),
  slice: f(
    ['any'],
    (v, ...indices) => {
      const l = list(v, 'list');
      const a = indices.length > 0 ? Number(toInt64(indices[0])) : 0;
      const b = indices.length > 1 ? Number(toInt64(indices[1])) : l.length;
      if (a < 0 || b > l.length || a > b) throw new Error(`runtime error: slice bounds out of range [${a}:${b}]`);
      return l.slice(a, b);
    },
    'any',
  ),
  chunk: f(['int', 'any'], (size, v) => {
    const l = asList(v, 'chunk');
    const k = n(size);
    if (k <= 0) throw new Error('chunk size must be positive');
    const out: GoValue[] = [];
    for (let i = 0; i < l.length; i += k) out.push(l.slice(i, i + k));
    return out;
  }),
  // dicts
  dict: f(
    [],
    (...args) => {
      const out: Record<string, GoValue> = {};
      for (let i = 0; i < args.length; i += 2) out[strval(args[i])] = i + 1 < args.length ? args[i + 1]! : '';
      return out;
    },
    'any',
  ),
  get: f(['map', 'string'], (d, k) => (isMap(d) && Object.hasOwn(d, s(k)) ? d[s(k)]! : '')),
  set: f(['map', 'string', 'any'], (d, k, v) => {
    if (!isMap(d)) throw new Error('assignment to entry in nil map');
    d[s(k)] = v;
    return d;
  }),
  unset: f(['map', 'string'], (d, k) => {
    if (isMap(d)) delete d[s(k)];
    return d;
  }),
  hasKey: f(['map', 'string'], (d, k) => isMap(d) && Object.hasOwn(d, s(k))),
  pluck: f(
    ['string'],
    (k, ...ds) => ds.filter((d) => isMap(d) && Object.hasOwn(d, s(k))).map((d) => (d as Record<string, GoValue>)[s(k)]!),
    'map',
  ),
  keys: f([], (...ds) => ds.flatMap((d) => (isMap(d) ? Object.keys(d) : [])), 'map'),
  values: f(['map'], (d) => (isMap(d) ? Object.values(d) : [])),
  pick: f(
    ['map'],
    (d, ...ks) =>
      Object.fromEntries(ks.filter((k) => isMap(d) && Object.hasOwn(d, s(k))).map((k) => [s(k), (d as Record<string, GoValue>)[s(k)]!])),
    'string',
  ),
  omit: f(['map'], (d, ...ks) => Object.fromEntries(Object.entries(isMap(d) ? d : {}).filter(([k]) => !ks.includes(k))), 'string'),
  dig: f([], (...args) => dig(args), 'any'),
  merge: f(['map'], (d, ...srcs) => merge(false, d, ...srcs), 'map'),
  mergeOverwrite: f(['map'], (d, ...srcs) => merge(true, d, ...srcs), 'map'),
  deepCopy: f(['any'], (v) => structuredClone(v)),
  // types
  typeOf: f(['any'], typeName),
  typeIs: f(['string', 'any'], (t, v) => typeName(v) === s(t)),
  kindOf: f(['any'], kindName),
  kindIs: f(['string', 'any'], (k, v) => kindName(v) === s(k)),
  deepEqual: f(['any', 'any'], deepEqual),
};
void must;

function wrap(str: string, width: number, sep: string): string {
  // WordUtils.wrap-like: break lines at spaces so they do not exceed width (long words are kept whole).
  const limit = width < 1 ? 1 : width;
  return str
    .split('\n')
    .map((line) => {
      const out: string[] = [];
      let current = '';
      for (const word of line.split(' ')) {
        if (current === '') current = word;
        else if (current.length + 1 + word.length <= limit) current += ' ' + word;
        else {
          out.push(current);
          current = word;
        }
      }
      out.push(current);
      return out.join(sep);
    })
    .join('\n');
}

export const SPRIG: Record<string, GoFunction> = Object.fromEntries(
  Object.entries(table).map(([name, [params, variadic, fn]]) => [name, { params, ...(variadic ? { variadic } : {}), fn }]),
);
