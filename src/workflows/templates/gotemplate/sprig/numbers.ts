/**
 * sprig's defaults and flow (`default`, `empty`, `ternary`, `fail`, …) and its math: integers through int64, `*f` through float64.
 */
import type { GoValue } from '../values.js';
import { empty, f, n, s, toFloat64, toInt64, type Sig } from './coerce.js';

export const NUMBERS: Record<string, Sig> = {
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
};
