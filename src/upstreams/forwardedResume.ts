/**
 * Where an MRTR retry of a forwarded call picks up, kept in our
 * (integrity-protected) `requestState`: an upstream's own input round, or an
 * upstream task waiting for input.
 */
import type { JsonObject } from '../core/json.js';
import type { ToolCallRequest } from '../runtime/ToolCaller.js';

/**
 * An upstream's synchronous input round, retried with its answers and its own requestState.
 * Type aliases, not interfaces: they are JSON objects (kept in the requestState), which only an alias is assignable to.
 */
export type ResumeRound = {
  kind: 'round';
  keys: string[];
  requestState?: string;
};
/** An upstream task waiting for input: the retry answers it (`tasks/update`) and follows it again. */
export type ResumeTask = {
  kind: 'task';
  /** Wrapped for the caller's principal (I-7), like every id of an upstream task we hand out. */
  taskId: string;
  keys: string[];
};

/** The resume point an MRTR retry carries, when it is one of ours. */
export function resumeOf(request: ToolCallRequest): ResumeRound | ResumeTask | undefined {
  const resume = request.resume as { kind?: unknown; keys?: unknown; taskId?: unknown } | undefined;
  if (!resume || !Array.isArray(resume.keys)) return undefined;
  if (resume.kind === 'task' && typeof resume.taskId === 'string') return resume as ResumeTask;
  if (resume.kind === 'round') return resume as ResumeRound;
  return undefined;
}

/** The caller's answers to `keys` (the requests the upstream made), nothing else. */
export function answersFor(keys: string[], answers: Record<string, unknown> | undefined): JsonObject {
  const picked: JsonObject = {};
  for (const key of keys) if (answers && Object.hasOwn(answers, key)) picked[key] = answers[key];
  return picked;
}
