/**
 * Speaks the 2025-11-25 experimental tasks to a v1-era upstream and answers
 * in 2026-07-28 shapes, so a task-augmented upstream tool (`execution.taskSupport`
 * `"required"` or `"optional"`) becomes an ordinary forwarded task: passed
 * through under a wrapped id to a Tasks-capable caller, collapsed for any
 * other. The shape mapping is `legacyTaskShapes.ts`; this file is the I/O:
 * `tools/call` with `params.task`, `tasks/get`, `tasks/result` (blocks until
 * the task ends: read once it is terminal, and held open while it waits for
 * input, which the upstream delivers there), `tasks/update` answered from the
 * held input requests, `tasks/cancel`.
 */
import type { JsonObject } from '../core/json.js';
import { ProtocolError } from '@modelcontextprotocol/server';
import { ErrorCode } from '../core/errors.js';
import { legacyCreatedTask, toModernResult, toModernTask } from './legacyTaskShapes.js';
import type { RawOutcome, UpstreamConnection } from './UpstreamConnection.js';

/** How the forwarder sends one request (errors mapped to ours, the unreachable upstream to a retryable error). */
export type LegacySend = (
  connection: UpstreamConnection,
  method: string,
  params: JsonObject,
  options?: { signal?: AbortSignal; progressToken?: string; noDeadline?: boolean },
) => Promise<RawOutcome>;

/** How long a `tasks/get` that finds the task `input_required` waits for its requests to arrive on `tasks/result`. */
const INPUT_ARRIVAL_MS = 2_000;

/** A `tasks/*` answer or the error to throw for it. */
export type Answer = (outcome: RawOutcome) => JsonObject;

export class LegacyTaskBridge {
  constructor(
    private readonly send: LegacySend,
    private readonly answer: Answer,
  ) {}

  /**
   * `tools/call` asking for a task (2025-11-25: `params.task`). Resolves the
   * upstream's answer: a task (in 2026-07-28 shape, the upstream's own id) or
   * a plain result / error when the upstream answered without one.
   */
  async call(
    connection: UpstreamConnection,
    tool: string,
    args: JsonObject,
    options: { signal?: AbortSignal; progressToken?: string; meta?: JsonObject } = {},
  ): Promise<{ kind: 'task'; task: JsonObject } | RawOutcome> {
    // The progress token stays valid for the task's whole life (2025-11-25): later progress becomes its statusMessage.
    const { meta, ...sendOptions } = options;
    const params: JsonObject = { name: tool, arguments: args, task: {}, ...(meta ? { _meta: meta } : {}) };
    const outcome = await this.send(connection, 'tools/call', params, sendOptions);
    if (outcome.kind === 'error') return outcome;
    const created = legacyCreatedTask(outcome.result);
    return created ? { kind: 'task', task: toModernTask(created) } : outcome;
  }

  /**
   * The task as a 2026-07-28 `tasks/get` answers it (§1.4): a completed task
   * carries the `tasks/result` answer as `result`, a failed one its error.
   */
  async get(connection: UpstreamConnection, taskId: string): Promise<JsonObject> {
    const task = toModernTask(this.answer(await this.send(connection, 'tasks/get', { taskId })), taskId);
    if (task.status === 'completed' || task.status === 'failed') {
      // Terminal: `tasks/result` answers at once (it only blocks while the task runs).
      const outcome = await this.send(connection, 'tasks/result', { taskId });
      if (task.status === 'completed' && outcome.kind === 'result')
        return { resultType: 'complete', ...task, result: toModernResult(outcome.result) };
      return { resultType: 'complete', ...task, status: 'failed', error: failure(task, outcome) };
    }
    if (task.status === 'input_required') {
      // The upstream delivers the task's requests only while tasks/result is open: keep one open, and give them a
      // moment to arrive so this very answer carries them (T-12).
      connection.inputs.drain(taskId, () => this.send(connection, 'tasks/result', { taskId }, { noDeadline: true }));
      await connection.inputs.arrival(taskId, INPUT_ARRIVAL_MS);
      const inputRequests = connection.inputs.outstanding(taskId);
      // T-12: input_required always carries its requests. With none to show (just answered, or the upstream asks
      // for something it never sent) the task is shown working: the caller keeps polling and sees what comes next.
      if (Object.keys(inputRequests).length === 0) return { resultType: 'complete', ...task, status: 'working' };
      return { resultType: 'complete', ...task, inputRequests };
    }
    return { resultType: 'complete', ...task };
  }

  /**
   * `tasks/update`: each answer settles the upstream's held request (its
   * `elicitation/create` gets it as the response); answers to keys not
   * outstanding are ignored (T-22).
   */
  update(connection: UpstreamConnection, taskId: string, responses: Record<string, unknown>, dropped: readonly string[] = []): void {
    const outstanding = connection.inputs.outstanding(taskId);
    const { malformed } = connection.inputs.answer(
      taskId,
      // Entries the SDK dropped as malformed count as malformed answers when their key is outstanding.
      { ...responses, ...Object.fromEntries(dropped.filter((key) => Object.hasOwn(outstanding, key)).map((key) => [key, null])) },
    );
    if (malformed.length > 0) {
      throw new ProtocolError(
        ErrorCode.InvalidParams,
        `Invalid params for tasks/update: inputResponses.${malformed[0]} is not an elicitation result ({action, content?})`,
      );
    }
  }

  /** `tasks/cancel` (2025-11-25 answers the Task; 2026-07-28 only acknowledges); its held requests are answered `cancel`. */
  async cancel(connection: UpstreamConnection, taskId: string): Promise<void> {
    this.answer(await this.send(connection, 'tasks/cancel', { taskId }));
    connection.inputs.cancel(taskId);
  }
}

/** The JSON-RPC error of a failed task: the upstream's own when `tasks/result` gives one. */
function failure(task: JsonObject, outcome: RawOutcome): { code: number; message: string; data?: unknown } {
  if (outcome.kind === 'error') return outcome.error;
  if (task.status === 'completed') {
    return { code: ErrorCode.InternalError, message: 'The upstream task completed but its result could not be read' };
  }
  // A failed 2025-11-25 task may store a CallToolResult: its text is the best message there is.
  const content = (outcome.result as { content?: Array<{ type?: string; text?: string }> }).content;
  const text = Array.isArray(content) ? content.find((block) => block?.type === 'text')?.text : undefined;
  const message = typeof task.statusMessage === 'string' ? task.statusMessage : (text ?? 'The upstream task failed');
  return { code: ErrorCode.InternalError, message, data: { result: outcome.result } };
}
