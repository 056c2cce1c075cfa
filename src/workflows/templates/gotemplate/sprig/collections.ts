/**
 * sprig's lists, dicts and type tests.
 */
import { isMap, kindName, typeName, type GoValue } from '../values.js';
import { asList, deepEqual, empty, f, list, n, s, strval, toInt64, type Sig } from './coerce.js';

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

export const COLLECTIONS: Record<string, Sig> = {
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
