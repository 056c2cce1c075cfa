/**
 * How a step ended, as the engine's parts hand it to each other, and the
 * values later steps and the step records see of it.
 */
import type { JsonObject } from '../../core/json.js';
import { MAX_RECORDED_VALUE_BYTES } from '../history/RunHistory.js';
import type { StepRecord } from './checkpoint.js';

/** What made a step fail, for `retry.on`: a thrown error, an `isError` result, its timeout, or bad input that fails every time. */
export type FailureKind = 'error' | 'isError' | 'timeout' | 'invalid';

/** Step outcome inside the engine (a composite step's sub-steps included). */
export type Outcome =
  | { status: 'completed'; result: unknown }
  | { status: 'skipped' }
  | { status: 'failed'; message: string; code?: number; result?: unknown; kind?: FailureKind };

export type Failed = Extract<Outcome, { status: 'failed' }>;

/** A step's input cannot work (a bad item list, a condition on a step that has not run): never retried. */
export class StepFailure extends Error {
  constructor(
    message: string,
    readonly code?: number,
    readonly result?: unknown,
  ) {
    super(message);
  }
}

/**
 * What later steps see of a step: its result; for a failed step its error
 * result, or — when it has none (a thrown error, a timeout) — muster's
 * `{ error, success: false, isError: true }`; null when skipped.
 */
export const resultOf = (outcome: Outcome): unknown =>
  outcome.status === 'completed' ? outcome.result : outcome.status === 'failed' ? failedValue(outcome) : null;

export const failedValue = (outcome: Failed): unknown => outcome.result ?? { error: outcome.message, success: false, isError: true };

/** The value `results.<id>` holds for a tool's CallToolResult: structured content, else JSON text, else text. */
export function resultValue(result: JsonObject): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const content = Array.isArray(result.content) ? (result.content as Array<{ type?: string; text?: unknown }>) : [];
  const texts = content.filter((block) => block.type === 'text' && typeof block.text === 'string').map((block) => block.text as string);
  if (texts.length === 0) return result;
  const text = texts.join('\n');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** An `isError` result as the text of the step's error. */
export function errorText(result: JsonObject): string {
  const value = resultValue(result);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The `{ message, code? }` of anything thrown. */
export function describeError(error: unknown): { message: string; code?: number } {
  const coded = error as { code?: unknown; message?: unknown };
  const message = typeof coded.message === 'string' ? coded.message : String(error);
  return { message, ...(typeof coded.code === 'number' ? { code: coded.code } : {}) };
}

export const now = () => new Date().toISOString();

/**
 * muster's payload guard: a step record keeps a value (input or result) of at
 * most MAX_RECORDED_VALUE_BYTES of JSON; a bigger one is replaced by a marker
 * and the record says `truncated`. Only the record: later steps and the run's
 * result see the whole value (it lives in the machine's context), so a large
 * result is not rewritten with every later step record.
 */
export function guarded(record: StepRecord, value: unknown): unknown {
  const bytes = Buffer.byteLength(JSON.stringify(value) ?? '');
  if (bytes <= MAX_RECORDED_VALUE_BYTES) return value;
  record.truncated = true;
  return { truncated: true, bytes, limit: MAX_RECORDED_VALUE_BYTES };
}
