/**
 * Go's `fmt.Sprintf`, `Sprint` and `Sprintln` for template values: the verbs
 * `v s q d f F e E g G t x X o b c U %` with flags `-+# 0`, width and
 * precision (`*` included). A verb that does not fit its operand prints as
 * Go does: `%!d(string=abc)`; missing operands `%!d(MISSING)`, extra ones
 * `%!(EXTRA string=x)`.
 */
import { formatFloat, formatValue, typeName, type GoValue } from './values.js';

const pad = (s: string, width: number | undefined, left: boolean, zero: boolean): string => {
  if (width === undefined || s.length >= width) return s;
  if (left) return s + ' '.repeat(width - s.length);
  if (zero) {
    const sign = /^[+-]/.test(s) ? s[0]! : '';
    return sign + '0'.repeat(width - s.length) + s.slice(sign.length);
  }
  return ' '.repeat(width - s.length) + s;
};

function quote(s: string): string {
  let out = '"';
  for (const c of s) {
    const code = c.codePointAt(0)!;
    if (c === '"') out += '\\"';
    else if (c === '\\') out += '\\\\';
    else if (c === '\n') out += '\\n';
    else if (c === '\t') out += '\\t';
    else if (c === '\r') out += '\\r';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += c;
  }
  return out + '"';
}

/** %f: like toFixed, but an exact tie rounds to even, as Go's strconv does (2.25 → "2.2"). */
function fixed(f: number, precision: number): string {
  if (!Number.isFinite(f)) return formatFloat(f);
  const p = Math.min(precision, 99);
  const wide = Math.abs(f).toFixed(Math.min(p + 30, 100));
  const cut = wide.indexOf('.') + 1 + p;
  if (/^50*$/.test(wide.slice(cut))) {
    const kept = wide.slice(0, p === 0 ? cut - 1 : cut);
    const lastDigit = Number(kept.replace('.', '').slice(-1));
    if (lastDigit % 2 === 0) return (f < 0 ? '-' : '') + kept;
  }
  return f.toFixed(p);
}

function exponent(f: number, precision: number, upper: boolean): string {
  if (!Number.isFinite(f)) return formatFloat(f);
  const [m, e] = f.toExponential(Math.min(precision, 100)).split('e') as [string, string];
  const n = Number(e);
  const s = `${m}e${n < 0 ? '-' : '+'}${String(Math.abs(n)).padStart(2, '0')}`;
  return upper ? s.toUpperCase() : s;
}

function general(f: number, precision: number | undefined, upper: boolean): string {
  if (precision === undefined) return upper ? formatFloat(f).toUpperCase() : formatFloat(f);
  if (!Number.isFinite(f)) return formatFloat(f);
  const p = precision === 0 ? 1 : precision;
  const exp = f === 0 ? 0 : Number(f.toExponential(p - 1).split('e')[1]);
  if (exp < -4 || exp >= p) return exponent(f, p - 1, upper).replace(/\.?0+e/, 'e');
  return String(Number(f.toPrecision(p)));
}

function integer(v: bigint, verb: string, plus: boolean, sharp: boolean, precision?: number): string {
  const negative = v < 0n;
  const abs = negative ? -v : v;
  let digits: string;
  switch (verb) {
    case 'x':
      digits = abs.toString(16);
      break;
    case 'X':
      digits = abs.toString(16).toUpperCase();
      break;
    case 'o':
      digits = abs.toString(8);
      break;
    case 'b':
      digits = abs.toString(2);
      break;
    default:
      digits = abs.toString();
  }
  if (precision !== undefined) digits = digits.padStart(precision, '0');
  if (sharp) digits = (verb === 'x' ? '0x' : verb === 'X' ? '0X' : verb === 'o' ? '0' : '') + digits;
  return (negative ? '-' : plus ? '+' : '') + digits;
}

function formatOne(verb: string, v: GoValue, flags: string, width: number | undefined, precision: number | undefined): string {
  // A verb that does not fit prints the operand with %v and the same flags: %!d(float64=03).
  const bad = (verb: string, v: GoValue) => `%!${verb}(${typeName(v)}=${formatOne('v', v, flags, width, precision)})`;
  const left = flags.includes('-');
  const plus = flags.includes('+');
  const sharp = flags.includes('#');
  const zero = flags.includes('0') && !left;
  let s: string;
  switch (verb) {
    case 'v':
      if (typeof v === 'number' && precision !== undefined) s = general(v, precision, false);
      else if (typeof v === 'string' && sharp) s = quote(v);
      else s = formatValue(v, false);
      if (plus && (typeof v === 'number' || typeof v === 'bigint') && !s.startsWith('-')) s = '+' + s;
      return pad(s, width, left, zero && typeof v !== 'string');
    case 's':
      if (typeof v === 'string') s = precision !== undefined ? [...v].slice(0, precision).join('') : v;
      else if (typeof v === 'boolean' || typeof v === 'number' || typeof v === 'bigint' || v === null || v === undefined)
        return v === null || v === undefined ? pad('%!s(<nil>)', width, left, false) : bad('s', v);
      else s = formatValue(v, false);
      return pad(s, width, left, zero);
    case 'q':
      if (typeof v === 'string') return pad(quote(v), width, left, zero);
      if (typeof v === 'bigint') return pad(`'${String.fromCodePoint(Number(v))}'`, width, left, zero);
      return bad('q', v);
    case 'd':
    case 'x':
    case 'X':
    case 'o':
    case 'b':
      if (typeof v === 'bigint') return pad(integer(v, verb, plus, sharp, precision), width, left, zero && precision === undefined);
      if (typeof v === 'string' && (verb === 'x' || verb === 'X')) {
        const hex = Buffer.from(v, 'utf8').toString('hex');
        return pad(verb === 'X' ? hex.toUpperCase() : hex, width, left, zero);
      }
      if (typeof v === 'number' && verb === 'b') return bad(verb, v);
      if (typeof v === 'number' && (verb === 'x' || verb === 'X')) return bad(verb, v);
      return bad(verb, v);
    case 'c':
      if (typeof v === 'bigint') return pad(String.fromCodePoint(Number(v)), width, left, zero);
      return bad(verb, v);
    case 'U':
      if (typeof v === 'bigint') return pad(`U+${v.toString(16).toUpperCase().padStart(4, '0')}`, width, left, zero);
      return bad(verb, v);
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
      if (typeof v !== 'number') return bad(verb, v);
      s =
        verb === 'f' || verb === 'F'
          ? fixed(v, precision ?? 6)
          : verb === 'e' || verb === 'E'
            ? exponent(v, precision ?? 6, verb === 'E')
            : general(v, precision, verb === 'G');
      if (plus && !s.startsWith('-')) s = '+' + s;
      return pad(s, width, left, zero);
    case 't':
      if (typeof v === 'boolean') return pad(String(v), width, left, false);
      return bad('t', v);
    case 'T':
      return pad(typeName(v), width, left, false);
    default:
      return `%!${verb}(${typeName(v)}=${formatValue(v, false)})`;
  }
}

/** fmt.Sprintf. */
export function sprintf(format: string, args: GoValue[]): string {
  let out = '';
  let next = 0;
  for (let i = 0; i < format.length; i++) {
    const c = format[i]!;
    if (c !== '%') {
      out += c;
      continue;
    }
    let flags = '';
    i++;
    while (i < format.length && '-+# 0'.includes(format[i]!)) flags += format[i++];
    let width: number | undefined;
    if (format[i] === '*') {
      const w = args[next++];
      width = typeof w === 'bigint' ? Number(w) : undefined;
      if (width !== undefined && width < 0) {
        flags += '-';
        width = -width;
      }
      i++;
    } else {
      let w = '';
      while (/[0-9]/.test(format[i] ?? '')) w += format[i++];
      if (w) width = Number(w);
    }
    let precision: number | undefined;
    if (format[i] === '.') {
      i++;
      if (format[i] === '*') {
        const p = args[next++];
        precision = typeof p === 'bigint' ? Number(p) : 0;
        i++;
      } else {
        let p = '';
        while (/[0-9]/.test(format[i] ?? '')) p += format[i++];
        precision = p ? Number(p) : 0;
      }
    }
    const verb = format[i];
    if (verb === undefined) {
      out += '%!(NOVERB)';
      break;
    }
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (next >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    out += formatOne(verb, args[next++], flags, width, precision);
  }
  if (next < args.length) {
    out += `%!(EXTRA ${args
      .slice(next)
      .map((v) => `${typeName(v)}=${formatValue(v, false)}`)
      .join(', ')})`;
  }
  return out;
}

/** fmt.Sprint: spaces between operands when neither side is a string. */
export function sprint(args: GoValue[]): string {
  let out = '';
  args.forEach((v, i) => {
    if (i > 0 && typeof v !== 'string' && typeof args[i - 1] !== 'string') out += ' ';
    out += formatValue(v, false);
  });
  return out;
}

/** fmt.Sprintln: spaces between all operands, newline at the end. */
export const sprintln = (args: GoValue[]): string => args.map((v) => formatValue(v, false)).join(' ') + '\n';
