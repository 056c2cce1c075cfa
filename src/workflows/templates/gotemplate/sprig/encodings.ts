/**
 * sprig's encodings (base64, JSON, hashes) and regular expressions (RE2 syntax, Go's replacement templates).
 */
import { createHash } from 'node:crypto';
import { toJson, fromPlain, type GoValue } from '../values.js';
import { f, n, s, type Sig } from './coerce.js';

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

export const ENCODINGS: Record<string, Sig> = {
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
};
