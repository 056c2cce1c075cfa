/**
 * The shape of one JSON-RPC message, judged in one pass before anything
 * validates it: nesting depth, object keys, values (nodes), and the values
 * inside any `_meta`. CPU per request follows the shape of the JSON, not its
 * size: 200,000 keys in 2.3 MB cost `JSON.parse` ~0.4 s and the SDK's
 * schemas seconds more (its catch-all copies every key of `_meta`), so the
 * count is refused, before the text is parsed, not the bytes.
 *
 * Counting on the text, without parsing it: an object member is a `:`
 * outside strings, and a value is the message itself, plus one per `,`,
 * plus one per non-empty object or array (each non-empty container has one
 * value more than its commas). For valid JSON the counts are exact; for
 * text that is not JSON they are an estimate, and `JSON.parse` refuses it
 * anyway. A key counts as `_meta` however it is escaped.
 */
import { limitExceededError } from './Limits.js';

/** JSON-RPC 2.0 §5.1: the message is not an acceptable request. */
const INVALID_REQUEST = -32600;

/** The limits judged here (the same keys as `Limits`). */
export interface JsonShapeLimits {
  /** Deepest nesting of arrays/objects. */
  maxJsonDepth: number;
  /** Object members in the whole message. */
  maxJsonKeys: number;
  /** Values in the whole message (objects, arrays, strings, numbers, literals; the message itself counts). */
  maxJsonNodes: number;
  /** Values in one `_meta` value, itself included. */
  maxMetaNodes: number;
}

/** The limit a message passes. */
export type JsonShapeLimit = keyof JsonShapeLimits;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;
/** "Not inside a `_meta`": no depth is above it. */
const OUTSIDE = 0x7fffffff;
/** The longest spelling of `_meta` in JSON text: five `\uXXXX` escapes. */
const LONGEST_META_KEY = 30;

/** Character classes of the scan (ASCII; 0 for every other character: nothing to do). */
const SPACE = 1;
const STRUCTURE = 2;
const CLASS_OF = new Uint8Array(128);
for (const c of [0x20, 0x0a, 0x0d, 0x09]) CLASS_OF[c] = SPACE;
for (const c of [QUOTE, OPEN_BRACE, OPEN_BRACKET, CLOSE_BRACE, CLOSE_BRACKET, COMMA, COLON]) CLASS_OF[c] = STRUCTURE;

/** The first limit `text` passes while read from the start, or `undefined` within all of them. */
export function jsonTextOverLimit(text: string, limits: JsonShapeLimits): JsonShapeLimit | undefined {
  const { maxJsonDepth, maxJsonKeys, maxJsonNodes, maxMetaNodes } = limits;
  const length = text.length;
  let depth = 0;
  let keys = 0;
  let nodes = 1;
  /** The depth outside the `_meta` being read (its members are deeper), or OUTSIDE. */
  let metaDepth = OUTSIDE;
  let metaNodes = 0;
  let keyStart = 0;
  let keyEnd = 0;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    // Most characters (digits, letters, white space) need nothing: one table look-up.
    if (c >= 128 || CLASS_OF[c] !== STRUCTURE) continue;
    if (c === QUOTE) {
      // indexOf finds the closing quote far faster than a loop over the string; a quote after an odd run of
      // backslashes is escaped.
      const start = i + 1;
      let end = text.indexOf('"', start);
      while (end > 0 && escaped(text, end, start)) end = text.indexOf('"', end + 1);
      if (end < 0) return undefined;
      keyStart = start;
      keyEnd = end;
      i = end;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxJsonDepth) return 'maxJsonDepth';
      // A non-empty container holds one value more than its commas.
      const next = significantAfter(text, i);
      if (next !== CLOSE_BRACE && next !== CLOSE_BRACKET && next !== -1) {
        if (++nodes > maxJsonNodes) return 'maxJsonNodes';
        if (depth > metaDepth && ++metaNodes > maxMetaNodes) return 'maxMetaNodes';
      }
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (--depth === metaDepth) metaDepth = OUTSIDE;
    } else if (c === COMMA) {
      if (++nodes > maxJsonNodes) return 'maxJsonNodes';
      if (depth > metaDepth && ++metaNodes > maxMetaNodes) return 'maxMetaNodes';
    } else {
      if (++keys > maxJsonKeys) return 'maxJsonKeys';
      if (metaDepth === OUTSIDE && isMetaKey(text, keyStart, keyEnd)) {
        const next = significantAfter(text, i);
        // A `_meta` object or array: its values are counted until it closes (a nested `_meta` is part of it).
        if (next === OPEN_BRACE || next === OPEN_BRACKET) {
          metaDepth = depth;
          metaNodes = 1;
        }
      }
    }
  }
  return undefined;
}

/** The first character after `at` that is not white space, or -1 at the end. */
function significantAfter(text: string, at: number): number {
  for (let j = at + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c >= 128 || CLASS_OF[c] !== SPACE) return c;
  }
  return -1;
}

/** Whether the quote at `at` follows an odd number of backslashes (not counting before `from`). */
function escaped(text: string, at: number, from: number): boolean {
  let backslashes = 0;
  for (let j = at - 1; j >= from && text.charCodeAt(j) === BACKSLASH; j--) backslashes++;
  return backslashes % 2 === 1;
}

/** Whether the key text between `start` and `end` (exclusive) is `_meta`, however escaped. */
function isMetaKey(text: string, start: number, end: number): boolean {
  const length = end - start;
  if (length === 5) return text.startsWith('_meta', start);
  if (length < 5 || length > LONGEST_META_KEY) return false;
  // Only an escaped spelling can be longer; the loop is bounded by the key (an indexOf could run to the text's end).
  let hasEscape = false;
  for (let j = start; j < end && !hasEscape; j++) hasEscape = text.charCodeAt(j) === BACKSLASH;
  if (!hasEscape) return false;
  try {
    return JSON.parse(text.slice(start - 1, end + 1)) === '_meta';
  } catch {
    return false;
  }
}

/**
 * The first limit a parsed value passes, or `undefined`: for the text it was
 * parsed from, the same answer as {@link jsonTextOverLimit} whether any
 * limit is passed (a text with duplicate keys counts each, its parsed value
 * only the last; the shape is then smaller than the text's). One walk that
 * stops at the first limit, so a hostile value costs no more than the text
 * scan. For short messages already parsed (the HTTP fast lane's polls).
 */
export function jsonValueOverLimit(value: unknown, limits: JsonShapeLimits): JsonShapeLimit | undefined {
  const walk = new ShapeWalk(limits);
  return walk.visit(value, 1, false);
}

class ShapeWalk {
  private keys = 0;
  private nodes = 0;
  private metaNodes = 0;
  constructor(private readonly limits: JsonShapeLimits) {}

  /** Counts `value` (at nesting `depth` if it is a container) and what it holds. */
  visit(value: unknown, depth: number, inMeta: boolean): JsonShapeLimit | undefined {
    if (++this.nodes > this.limits.maxJsonNodes) return 'maxJsonNodes';
    if (inMeta && ++this.metaNodes > this.limits.maxMetaNodes) return 'maxMetaNodes';
    if (value === null || typeof value !== 'object') return undefined;
    if (depth > this.limits.maxJsonDepth) return 'maxJsonDepth';
    if (Array.isArray(value)) {
      for (const item of value) {
        const over = this.visit(item, depth + 1, inMeta);
        if (over) return over;
      }
      return undefined;
    }
    const object = value as Record<string, unknown>;
    for (const key in object) {
      if (++this.keys > this.limits.maxJsonKeys) return 'maxJsonKeys';
      const entersMeta = !inMeta && key === '_meta' && object[key] !== null && typeof object[key] === 'object';
      if (entersMeta) this.metaNodes = 0;
      const over = this.visit(object[key], depth + 1, inMeta || entersMeta);
      if (over) return over;
    }
    return undefined;
  }
}

/** What each limit bounds, for the error's message. */
const TOO_MANY: Record<Exclude<JsonShapeLimit, 'maxJsonDepth'>, string> = {
  maxJsonKeys: 'has too many object keys',
  maxJsonNodes: 'has too many values',
  maxMetaNodes: 'has too many values in one _meta',
};

/**
 * The JSON-RPC error refusing a message over `limit`, naming it in the
 * message and in `data.limit` (its value in `data.max`). Depth keeps its
 * limit error (-32000); a message with too many keys or values is an
 * Invalid Request (-32600): it is refused as a whole, before any schema
 * sees it, and sending it again can never succeed.
 */
export function jsonShapeError(
  limit: JsonShapeLimit,
  limits: JsonShapeLimits,
  subject: string,
): { code: number; message: string; data: { limit: string; max: number } } {
  const max = limits[limit];
  if (limit === 'maxJsonDepth') return limitExceededError(limit, max, `${subject} nests arrays/objects too deeply`);
  return { code: INVALID_REQUEST, message: `Invalid Request: ${subject} ${TOO_MANY[limit]} (${limit} = ${max})`, data: { limit, max } };
}
