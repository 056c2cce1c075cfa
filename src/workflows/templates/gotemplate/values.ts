/**
 * Go values as the template engine sees JSON data (what `encoding/json`
 * decodes into `interface{}`), and how `fmt` prints them:
 *
 * | Go                       | here                          |
 * |--------------------------|-------------------------------|
 * | float64 (every JSON number) | `number`                   |
 * | int (literals, `len`, sprig math) | `bigint`             |
 * | string, bool             | `string`, `boolean`           |
 * | []interface{}            | array                         |
 * | map[string]interface{}   | plain object                  |
 * | nil interface            | `null`                        |
 * | no value (invalid reflect.Value) | `undefined`           |
 *
 * Keeping int and float64 apart is what makes `eq .input.count 3` fail as it
 * does in Go ("incompatible types for comparison"), and `{{ 1e6 }}` print as
 * `1e+06`.
 */

export type GoValue = null | undefined | boolean | number | bigint | string | GoValue[] | { [key: string]: GoValue };

export const isMap = (v: unknown): v is Record<string, GoValue> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Go's type name of a value, as `%T` / sprig's `typeOf` print it. */
export function typeName(v: GoValue): string {
  if (v === null || v === undefined) return '<nil>';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'string') return 'string';
  if (Array.isArray(v)) return '[]interface {}';
  return 'map[string]interface {}';
}

/** Go's reflect kind name (sprig's `kindOf`). */
export function kindName(v: GoValue): string {
  if (v === null || v === undefined) return 'invalid';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'bigint') return 'int';
  if (Array.isArray(v)) return 'slice';
  if (typeof v === 'object') return 'map';
  return typeof v === 'boolean' ? 'bool' : 'string';
}

/** text/template's truth: false, 0, nil, no value and empty strings/lists/maps are false. */
export function truth(v: GoValue): boolean {
  if (v === null || v === undefined) return false;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'bigint') return v !== 0n;
  if (typeof v === 'string') return v.length > 0;
  if (Array.isArray(v)) return v.length > 0;
  return Object.keys(v).length > 0;
}

/** strconv.FormatFloat(f, 'g', -1, 64) (exponent form when exp < -4 || exp >= 6, as %v prints), or encoding/json's float form. */
export function formatFloat(f: number, fmt: 'g' | 'json' = 'g'): string {
  if (Number.isNaN(f)) return 'NaN';
  if (!Number.isFinite(f)) return f > 0 ? '+Inf' : '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  // Shortest round-trip digits and decimal exponent, from JS's own shortest repr.
  const [mantissa, expText] = f.toExponential().split('e') as [string, string];
  const exp = Number(expText);
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = negative ? '-' : '';
  const useExp = fmt === 'g' ? exp < -4 || exp >= 6 : Math.abs(f) < 1e-6 || Math.abs(f) >= 1e21;
  if (useExp) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exp);
    // fmt's %v writes at least two exponent digits; encoding/json trims e-07 to e-7.
    const ed = fmt === 'g' ? String(e).padStart(2, '0') : String(e);
    return `${sign}${m}e${exp < 0 ? '-' : '+'}${ed}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  if (digits.length <= exp + 1) return `${sign}${digits}${'0'.repeat(exp + 1 - digits.length)}`;
  return `${sign}${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
}

/**
 * fmt's `%v` (and `fmt.Sprint` of one value): maps print as `map[k:v …]`
 * with sorted keys, lists as `[a b]`, nil as `<nil>`.
 */
export function formatValue(v: GoValue, top = true): string {
  if (v === undefined) return top ? '<no value>' : '<nil>';
  if (v === null) return '<nil>';
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return formatGFloat(v);
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return `[${v.map((item) => formatValue(item, false)).join(' ')}]`;
  const keys = Object.keys(v).sort(compareGoStrings);
  return `map[${keys.map((key) => `${key}:${formatValue(v[key], false)}`).join(' ')}]`;
}

/** %v of a float64: strconv's shortest 'g' form. */
export const formatGFloat = (f: number): string => formatFloat(f, 'g');

/** Go compares strings bytewise (UTF-8); JS compares UTF-16 units. */
export function compareGoStrings(a: string, b: string): number {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return Buffer.compare(x, y);
}

/** Go's `len` of a string counts UTF-8 bytes. */
export const byteLength = (s: string) => Buffer.byteLength(s, 'utf8');

/** encoding/json's Marshal (sorted map keys, HTML-safe escapes unless `raw`), with optional indent. */
export function toJson(v: GoValue, options: { raw?: boolean; indent?: string } = {}): string {
  const write = (value: GoValue, depth: number): string => {
    if (value === null || value === undefined) return 'null';
    if (typeof value === 'boolean') return String(value);
    if (typeof value === 'bigint') return value.toString();
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new Error(`json: unsupported value: ${formatGFloat(value)}`);
      return formatFloat(value, 'json');
    }
    if (typeof value === 'string') return quoteJson(value, !options.raw);
    const pad = options.indent ? '\n' + options.indent.repeat(depth + 1) : '';
    const close = options.indent ? '\n' + options.indent.repeat(depth) : '';
    const colon = options.indent ? ': ' : ':';
    if (Array.isArray(value)) {
      if (value.length === 0) return '[]';
      return `[${value.map((item) => pad + write(item, depth + 1)).join(',')}${close}]`;
    }
    const keys = Object.keys(value).sort(compareGoStrings);
    if (keys.length === 0) return '{}';
    return `{${keys.map((key) => `${pad}${quoteJson(key, !options.raw)}${colon}${write(value[key], depth + 1)}`).join(',')}${close}}`;
  };
  return write(v, 0);
}

function quoteJson(s: string, htmlSafe: boolean): string {
  let out = '"';
  for (const c of s) {
    const code = c.codePointAt(0)!;
    if (c === '"') out += '\\"';
    else if (c === '\\') out += '\\\\';
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (code < 0x20 || (htmlSafe && (c === '<' || c === '>' || c === '&')) || code === 0x2028 || code === 0x2029)
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += c;
  }
  return out + '"';
}

/** Turns an engine value into plain JSON (ints become numbers, no value becomes null). */
export function toPlain(v: GoValue): unknown {
  if (v === undefined || v === null) return null;
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(toPlain);
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, toPlain(item)]));
  return v;
}

/** Turns JSON data into engine values (JSON numbers are float64, as encoding/json decodes them). */
export function fromPlain(v: unknown): GoValue {
  if (v === undefined || v === null) return null;
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean' || typeof v === 'bigint') return v;
  if (Array.isArray(v)) return v.map(fromPlain);
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, fromPlain(item)]));
  return String(v);
}
