/**
 * Bounds on the strings a task record keeps that a tool chose (and, through
 * its arguments, possibly a client): without them one principal's tasks
 * could each pin megabytes in the store, in every live actor and in every
 * answer that lists tasks. The record is stored, re-read and served many
 * times, so the bound is applied once, where the string enters the task.
 *
 * - `statusMessage` is informative only (T-32): cut, with a visible marker.
 * - A failed task's `error.message` is a JSON-RPC error message, a short
 *   description by definition: cut the same way; its `data`, when too large,
 *   is replaced by a note saying so.
 * - An input request goes to the client, which must answer exactly it: one
 *   too large is refused, never cut (a cut question could ask something else).
 */
import type { TaskError } from '../../machines/task/index.js';

/** Longest `statusMessage` a task keeps, in UTF-16 code units. */
export const MAX_STATUS_MESSAGE_CHARS = 4096;
/** Longest `error.message` a failed task keeps, in UTF-16 code units. */
export const MAX_ERROR_MESSAGE_CHARS = 16_384;
/** Largest `error.data` a failed task keeps, as bytes of JSON. */
export const MAX_ERROR_DATA_BYTES = 16_384;
/** Largest input request (its JSON, params included) a task may keep outstanding, bytes. */
export const MAX_INPUT_REQUEST_BYTES = 256 * 1024;

/**
 * `text` cut to at most `max` code units, ending with a marker that says how
 * much was left out. A surrogate pair is never split.
 */
export function truncateText(text: string, max: number): string {
  if (text.length <= max) return text;
  const marker = (kept: number) => `… [truncated: ${text.length - kept} of ${text.length} characters left out]`;
  let kept = Math.max(0, max - marker(0).length);
  // A high surrogate at the cut would leave half a character.
  if (kept > 0 && /[\uD800-\uDBFF]/.test(text[kept - 1]!)) kept--;
  return text.slice(0, kept) + marker(kept);
}

/** A task's `statusMessage` as it is kept. */
export const boundedStatusMessage = (message: string): string => truncateText(message, MAX_STATUS_MESSAGE_CHARS);

/** A failed task's error as it is kept: the message cut, oversized data replaced by a note. */
export function boundedTaskError(error: TaskError): TaskError {
  const message = truncateText(error.message, MAX_ERROR_MESSAGE_CHARS);
  if (error.data === undefined) return message === error.message ? error : { ...error, message };
  const dataBytes = jsonBytes(error.data);
  if (dataBytes <= MAX_ERROR_DATA_BYTES) return message === error.message ? error : { ...error, message };
  return {
    code: error.code,
    message,
    data: { truncated: `the error data was ${dataBytes} bytes of JSON; at most ${MAX_ERROR_DATA_BYTES} are kept` },
  };
}

/** Bytes of `value` as UTF-8 JSON (0 for what JSON cannot hold). */
export function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value);
  return text === undefined ? 0 : Buffer.byteLength(text);
}
