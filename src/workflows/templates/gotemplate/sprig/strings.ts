/**
 * sprig's string functions: case, trimming, padding, splitting and joining, wrapping.
 */
import { compareGoStrings } from '../values.js';
import { f, n, s, strslice, strval, type Sig } from './coerce.js';

function words(s: string): string[] {
  return s
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
}

const title = (s: string) => s.replace(/(^|[^\p{L}\p{N}_'])(\p{L})/gu, (_m, pre: string, c: string) => pre + c.toUpperCase());

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

export const STRINGS: Record<string, Sig> = {
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
};
