/**
 * How sprig reads its arguments: spf13/cast conversions, sprig's `empty`,
 * lists, and the signature helper every function family uses.
 */
import type { GoFunction, ParamKind } from '../exec.js';
import { formatValue, isMap, kindName, truth, type GoValue } from '../values.js';

/** sprig's strval: strings as they are, everything else as fmt's %v. */
export const strval = (v: GoValue): string => (typeof v === 'string' ? v : formatValue(v, false));

/** spf13/cast ToInt64 (errors give 0, as sprig ignores them). */
export function toInt64(v: GoValue): bigint {
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
export function toFloat64(v: GoValue): number {
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
export const empty = (v: GoValue): boolean => !truth(v);

export function asList(v: GoValue, fn: string): GoValue[] {
  if (Array.isArray(v)) return v;
  throw new Error(`Cannot find ${fn} on type ${kindName(v)}`);
}

export const list = (v: GoValue, what: string): GoValue[] => {
  if (Array.isArray(v)) return v;
  throw new Error(`${what} should be type of slice or array but ${kindName(v)}`);
};

export const strslice = (v: GoValue): string[] => {
  if (Array.isArray(v)) return v.filter((item) => item !== null && item !== undefined).map(strval);
  if (v === null || v === undefined) return [];
  return [strval(v)];
};

export const deepEqual = (a: GoValue, b: GoValue): boolean => {
  if (typeof a !== typeof b) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isMap(a) && isMap(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return a === b;
};

/** A function's parameter kinds, its variadic kind, and its body. */
export type Sig = [ParamKind[], ParamKind | undefined, GoFunction['fn']];
export const f = (params: ParamKind[], fn: GoFunction['fn'], variadic?: ParamKind): Sig => [params, variadic, fn];

export const s = (v: GoValue) => v as string;
export const n = (v: GoValue) => Number(v);
