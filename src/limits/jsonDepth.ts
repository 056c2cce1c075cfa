/**
 * Nesting depth of JSON alone: the depth part of the one-pass shape judge
 * (`jsonShape.ts`), for callers that bound nothing else.
 */
import { jsonTextOverLimit, jsonValueOverLimit, type JsonShapeLimits } from './jsonShape.js';

const depthOnly = (max: number): JsonShapeLimits => ({
  maxJsonDepth: max,
  maxJsonKeys: Infinity,
  maxJsonNodes: Infinity,
  maxMetaNodes: Infinity,
});

/** Whether `text` nests arrays/objects deeper than `max` (strings are skipped, escapes honoured), judged without parsing it. */
export function exceedsJsonDepth(text: string, max: number): boolean {
  return jsonTextOverLimit(text, depthOnly(max)) === 'maxJsonDepth';
}

/**
 * Whether a parsed JSON value nests deeper than `max`: for the text it was
 * parsed from, the same answer as {@link exceedsJsonDepth}. It stops at
 * `max` levels, so a hostile value costs no deeper a walk than the text scan.
 */
export function exceedsValueDepth(value: unknown, max: number): boolean {
  return jsonValueOverLimit(value, depthOnly(max)) === 'maxJsonDepth';
}
