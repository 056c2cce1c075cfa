/**
 * What the inspection outputs (the JSONL trace, the Stately inspector) keep
 * of task data. With redaction on, everything a tool's caller or the tool
 * itself put in — arguments, results, checkpoints, input answers, input request params,
 * error data, actor outputs — becomes `"[redacted]"`; the shape stays
 * readable: tool names, statuses, input keys, timestamps, status messages.
 */
import type { InspectionEvent } from 'xstate';

export const REDACTED = '[redacted]';

/** Keys whose whole value is replaced (`args`, `result`, error `data`, request `params`, actor `output`…). */
const WHOLE = new Set(['args', 'arguments', 'result', 'results', 'output', 'data', 'params', 'content', 'checkpoint']);
/** Keys whose object keeps its keys (the input keys) while each value is replaced. */
const VALUES = new Set(['answers', 'responses', 'inputResponses']);

const MAX_DEPTH = 12;

/**
 * A JSON-safe copy of `value` (`toJSON` honoured, `Error`s as `{name, message}`,
 * functions dropped, depth-limited), with task data replaced by `"[redacted]"`
 * when `redact` is on. Never throws on odd input.
 */
export function sanitize(value: unknown, redact: boolean, depth = 0): unknown {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'function' || typeof value === 'symbol') return undefined;
    if (typeof value === 'bigint') return value.toString();
    return value;
  }
  if (depth >= MAX_DEPTH) return '[too deep]';
  if (value instanceof Error) return { name: value.name, message: value.message };
  const json = (value as { toJSON?: unknown }).toJSON;
  if (typeof json === 'function') {
    let converted: unknown;
    try {
      converted = json.call(value);
    } catch {
      return '[unserializable]';
    }
    return converted === value ? '[unserializable]' : sanitize(converted, redact, depth);
  }
  if (Array.isArray(value)) return value.map((item) => sanitize(item, redact, depth + 1) ?? null);
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (redact && item !== undefined && WHOLE.has(key)) out[key] = REDACTED;
    else if (redact && VALUES.has(key) && item !== null && typeof item === 'object' && !Array.isArray(item)) {
      out[key] = Object.fromEntries(Object.keys(item).map((name) => [name, REDACTED]));
    } else {
      const copy = sanitize(item, redact, depth + 1);
      if (copy !== undefined) out[key] = copy;
    }
  }
  return out;
}

/** An inspection function for `createRuntime({ inspect })`. */
export type InspectFn = (event: InspectionEvent) => void;

/**
 * One inspection function feeding several (the Stately inspector and a trace):
 * each receives every event, and one that throws does not starve the others.
 */
export function composeInspectors(...inspectors: Array<InspectFn | undefined>): InspectFn | undefined {
  const present = inspectors.filter((inspect): inspect is InspectFn => inspect !== undefined);
  if (present.length <= 1) return present[0];
  return (event) => {
    let failure: unknown;
    for (const inspect of present) {
      try {
        inspect(event);
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
  };
}
