/**
 * HTTP headers an upstream is sent (`upstreams[].headers`), checked when the
 * config is loaded: a value fetch cannot send (a character past U+00FF, which
 * is not a ByteString, or a control character) would otherwise pass the
 * check and fail every connection attempt later. Messages name the header and
 * the offending character's index and code point, never the value: it is
 * often a secret (an `Authorization` token).
 */
import { z } from 'zod';

/** RFC 9110 §5.6.2 `token`: the characters a field name may use. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** `U+2026` for a code point. */
const codePoint = (char: string) => `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/** The index and code point of the first character an HTTP field value cannot carry, or undefined. */
function firstBadValueCharacter(value: string): string | undefined {
  for (let index = 0; index < value.length; index++) {
    const code = value.charCodeAt(index);
    // ByteString (WebIDL, what fetch's Headers take): every code unit <= 0xFF. Control characters
    // (CR, LF, NUL … and DEL) would split or truncate the header (RFC 9110 §5.5); HTAB is allowed there.
    if (code > 0xff) return `${codePoint(value.slice(index, index + 2))} at index ${index}, a character outside Latin-1`;
    if ((code < 0x20 && code !== 0x09) || code === 0x7f) return `${codePoint(value[index]!)} at index ${index}, a control character`;
  }
  return undefined;
}

export const UpstreamHeadersSchema = z.record(z.string(), z.string()).superRefine((headers, ctx) => {
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) {
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: "not a valid HTTP header name (use A-Z a-z 0-9 and !#$%&'*+-.^_`|~, no spaces or colons)",
      });
      continue;
    }
    const bad = firstBadValueCharacter(value);
    if (bad) {
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: `the value cannot be sent as an HTTP header: it has ${bad} (the value is not shown)`,
      });
    }
  }
});
