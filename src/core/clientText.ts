/**
 * A client's string quoted in an error message, cut short. An error that
 * quotes what it refuses must not grow with it: a 3 MB task id named twice
 * in a header-mismatch error made a 6 MB answer. Every error builder that
 * quotes a client's string (a name, a key, an id, a version) passes it
 * through {@link clipClientText}; answers built by the SDK are cut by
 * {@link clipQuotedSegments} on their way out.
 */

/** Characters of a client's string an error message keeps. */
export const CLIENT_TEXT_BOUND = 128;

/**
 * `value` when at most {@link CLIENT_TEXT_BOUND} characters, else its start
 * and a marker with its full size: `abc…(3145728 bytes)`. Never splits a
 * surrogate pair.
 */
export function clipClientText(value: string, bound = CLIENT_TEXT_BOUND): string {
  if (value.length <= bound) return value;
  const end = isHighSurrogate(value.charCodeAt(bound - 1)) ? bound - 1 : bound;
  return `${value.slice(0, end)}…(${Buffer.byteLength(value)} bytes)`;
}

/** `JSON.stringify(value)` of a client's value, cut as {@link clipClientText} cuts a string. */
export function quoteClientValue(value: unknown, bound = CLIENT_TEXT_BOUND): string {
  if (typeof value === 'string') return JSON.stringify(clipClientText(value, bound));
  const text = JSON.stringify(value) ?? String(value);
  return clipClientText(text, bound);
}

/**
 * `text` with every double-quoted segment (JSON string syntax, as messages
 * quote values) longer than `bound` cut as {@link clipClientText} cuts it.
 * For messages built elsewhere (the SDK's), where only the quotes show which
 * part came from the client. Text outside quotes longer than a few times
 * `bound` is cut too, as a last resort.
 */
export function clipQuotedSegments(text: string, bound = CLIENT_TEXT_BOUND): string {
  if (text.length <= bound) return text;
  const clipped = text.replace(/"((?:[^"\\]|\\.)*)"/g, (whole, inner: string) => {
    if (inner.length <= bound) return whole;
    return JSON.stringify(clipClientText(unescaped(inner), bound));
  });
  return clipClientText(clipped, 8 * bound);
}

function unescaped(inner: string): string {
  try {
    return JSON.parse(`"${inner}"`) as string;
  } catch {
    return inner;
  }
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/**
 * A JSON-RPC error whose message and every string in its data are cut as
 * {@link clipQuotedSegments} cuts them: for errors built by the SDK, which
 * quote the client's values (a header mismatch quotes the body's value in
 * both). `error` itself is returned when nothing needed cutting.
 */
export function clipErrorStrings<E extends { message: string; data?: unknown }>(error: E): E {
  const message = clipQuotedSegments(error.message);
  const data = error.data === undefined ? undefined : clipStrings(error.data, 0);
  if (message === error.message && data === error.data) return error;
  return { ...error, message, ...(data === undefined ? {} : { data }) };
}

/** `value` with every long string cut; the same object when none was (depth-bounded: SDK data is shallow). */
function clipStrings(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return clipQuotedSegments(value);
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  let changed = false;
  const entries = Object.entries(value).map(([key, item]) => {
    const clipped = clipStrings(item, depth + 1);
    changed ||= clipped !== item;
    return [key, clipped] as const;
  });
  if (!changed) return value;
  return Array.isArray(value) ? entries.map(([, item]) => item) : Object.fromEntries(entries);
}
