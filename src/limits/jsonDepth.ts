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
