/**
 * Nesting depth of JSON text, measured without parsing it: a deeply nested
 * message is refused before `JSON.parse`, schema validation or
 * `JSON.stringify` (all of which recurse or allocate per level) see it.
 */

/** Whether `text` nests arrays/objects deeper than `max` (strings are skipped, escapes honoured). */
export function exceedsJsonDepth(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
}

/**
 * Whether a parsed JSON value nests deeper than `max`: for the text it was
 * parsed from, the same answer as {@link exceedsJsonDepth}. For small
 * messages already parsed (the HTTP fast lane's polls, issue 20 item 1) it
 * walks a handful of nodes instead of every character; it stops at `max`
 * levels, so a hostile value costs no deeper a walk than the text scan.
 */
export function exceedsValueDepth(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (max <= 0) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (exceedsValueDepth(item, max - 1)) return true;
    return false;
  }
  const object = value as Record<string, unknown>;
  for (const key in object) if (exceedsValueDepth(object[key], max - 1)) return true;
  return false;
}
