/**
 * JSON as taskvisor carries it: the plain object shape of arguments,
 * results, capabilities and wire messages, and equality as JSON would write
 * it. The bottom layer (`json` in .dependency-cruiser.cjs): the machines,
 * whose context must survive a JSON round trip (I-8), and every layer above
 * them import it from here.
 */

/** A JSON object: what `JSON.parse` gives for `{...}`. */
export type JsonObject = { [key: string]: unknown };

/**
 * Equality of two values as JSON would write them (what a store keeps, what
 * a client sent): a property holding `undefined` counts as absent, key order
 * does not matter, arrays compare in order. Shared subtrees compare at once,
 * and nothing is allocated but the key lists.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  let count = 0;
  for (const key of Object.keys(left)) {
    if (left[key] === undefined) continue;
    count++;
    if (!Object.hasOwn(right, key) || !jsonEqual(left[key], right[key])) return false;
  }
  for (const key of Object.keys(right)) if (right[key] !== undefined) count--;
  return count === 0;
}
