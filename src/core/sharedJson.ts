/**
 * JSON values frozen all the way down and shared by every holder instead of
 * copied: the empty collections every new task's context starts with, and
 * the `clientCapabilities` most calls repeat byte for byte. A live task keeps
 * each of these in its actor's context and again in the memory store's copy
 * of its record; shared, they cost nothing per task (each empty object or
 * array ~56 B, a capabilities object of three levels ~170 B, twice).
 *
 * A value is shared only once it is frozen to its leaves, and recorded here:
 * a copier ({@link isSharedJson}) may hand it on as it is, since nobody can
 * change it. In the `json` layer (.dependency-cruiser.cjs): the machines use it.
 */
import type { JsonObject } from './json.js';

const shared = new WeakSet<object>();

/** Freezes plain JSON `value` to its leaves and records it as shareable; returns it. */
export function shareJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null || shared.has(value)) return value;
  for (const key of Object.keys(value)) shareJson((value as Record<string, unknown>)[key]);
  Object.freeze(value);
  shared.add(value);
  return value;
}

/** Whether `value` was frozen to its leaves by {@link shareJson}: a copy of it may be itself. */
export function isSharedJson(value: unknown): boolean {
  return typeof value === 'object' && value !== null && shared.has(value);
}

/** The empty object every context starts its key-value collections with (answers, input requests). */
export const EMPTY_JSON_OBJECT: Readonly<Record<string, never>> = shareJson({});

/** The empty list every context starts its issued keys with. */
export const EMPTY_JSON_ARRAY: readonly never[] = shareJson([]);

/**
 * An interner: one shared frozen copy per distinct JSON value (by its JSON
 * text), for small values that repeat across tasks (a client's capabilities,
 * a machine's state values): the first seen is copied and frozen, later equal
 * ones get it. At most `max` values of at most `maxChars` characters are
 * kept: past that a value is handed back as it came (never shared, never
 * frozen), so ever-new or large values cannot grow it. Values must be plain
 * JSON (what `JSON.parse` gives).
 */
export function jsonInterner(max: number, maxChars: number): <T>(value: T) => T {
  const interned = new Map<string, unknown>();
  return <T>(value: T): T => {
    if (typeof value !== 'object' || value === null || shared.has(value)) return value;
    const text = JSON.stringify(value);
    const found = interned.get(text);
    if (found !== undefined) return found as T;
    if (interned.size >= max || text.length > maxChars) return value;
    const copy = shareJson(JSON.parse(text) as T);
    interned.set(text, copy);
    return copy;
  };
}

/** Client capabilities, interned: a few distinct ones per deployment, each ~170 B that every live task would hold. */
export const internJson: (value: JsonObject) => JsonObject = jsonInterner(64, 2048);
