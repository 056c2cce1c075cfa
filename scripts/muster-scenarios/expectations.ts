/**
 * muster's step expectations (`expected:` of a scenario step) checked the
 * way muster's BDD runner checks them: `success` against the JSON-RPC error
 * and `isError`; `error_contains`, `contains` and `not_contains` as
 * case-insensitive substrings of the text content; `json_path` as dotted
 * paths (numeric segments index arrays) into the first text block that
 * parses as a JSON object, objects matching when the listed keys match.
 */

export interface Expected {
  success?: boolean;
  error_contains?: string[];
  contains?: string[];
  not_contains?: string[];
  json_path?: Record<string, unknown>;
}

/** One tool call's outcome as the runner saw it. */
export interface CallOutcome {
  /** The JSON-RPC error's message, when the call was refused. */
  error?: string;
  isError: boolean;
  /** The text content, joined with spaces. */
  text: string;
  /** The first text block that parses as a JSON object (muster's response map). */
  json?: Record<string, unknown>;
}

const includes = (text: string, part: string) => text.toLowerCase().includes(part.toLowerCase());

/** The value at muster's dotted path, or `undefined` when there is none. */
export function atPath(value: unknown, path: string): { found: boolean; value?: unknown } {
  let current: unknown = value;
  for (const segment of path.split('.')) {
    if (Array.isArray(current) && /^\d+$/.test(segment) && Number(segment) < current.length) current = current[Number(segment)];
    else if (current !== null && typeof current === 'object' && !Array.isArray(current) && Object.hasOwn(current, segment))
      current = (current as Record<string, unknown>)[segment];
    else return { found: false };
  }
  return { found: true, value: current };
}

/** muster's comparison: arrays element by element, objects by the expected keys, anything else by its text. */
export function sameValue(actual: unknown, expected: unknown): boolean {
  if (actual === null || actual === undefined || expected === null || expected === undefined) return actual === expected;
  if (Array.isArray(actual) || Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      Array.isArray(expected) &&
      actual.length === expected.length &&
      actual.every((a, i) => sameValue(a, expected[i]))
    );
  }
  if (typeof actual === 'object' && typeof expected === 'object') {
    return Object.entries(expected).every(([key, want]) => sameValue((actual as Record<string, unknown>)[key], want));
  }
  return String(actual) === String(expected);
}

/** The first expectation `outcome` misses, described, or `undefined` when it meets them all. */
export function firstMismatch(expected: Expected, outcome: CallOutcome): string | undefined {
  const failed = outcome.error !== undefined || outcome.isError;
  const shown = outcome.error ?? outcome.text.slice(0, 300);
  if (expected.success === true && failed) return `expected success, got ${outcome.error !== undefined ? 'error' : 'isError'}: ${shown}`;
  if (expected.success !== true && !failed) return `expected failure, got success: ${shown}`;
  if (expected.error_contains?.length) {
    const errorText = outcome.error ?? (outcome.isError ? outcome.text : '');
    for (const part of expected.error_contains)
      if (!includes(errorText, part)) return `error does not contain "${part}": ${errorText.slice(0, 300)}`;
  }
  for (const part of expected.contains ?? [])
    if (!includes(outcome.text, part)) return `response does not contain "${part}": ${outcome.text.slice(0, 300)}`;
  for (const part of expected.not_contains ?? []) if (includes(outcome.text, part)) return `response contains "${part}"`;
  for (const [path, want] of Object.entries(expected.json_path ?? {})) {
    if (!outcome.json) return `json_path ${path}: the response is not a JSON object: ${outcome.text.slice(0, 300)}`;
    const got = atPath(outcome.json, path);
    if (!got.found) return `json_path ${path}: absent (want ${JSON.stringify(want)})`;
    if (!sameValue(got.value, want)) return `json_path ${path}: ${JSON.stringify(got.value)?.slice(0, 200)}, want ${JSON.stringify(want)}`;
  }
  return undefined;
}
