/**
 * One call of an upstream tool held by taskvisor as the worker of a task
 * (server-directed promotion of upstream calls, docs/aggregator.md
 * "Promoted calls"; ARCHITECTURE: "a held upstream request is a task's
 * worker like a local handler"). It is a tool handler: promotion, progress,
 * input and cancel go through the task actor like any local tool's.
 *
 * - the upstream's `notifications/progress` for our token → `ctx.progress`
 *   (the caller's progressToken while the call is synchronous, the task's
 *   `statusMessage` once it is a task, T-32);
 * - its log messages → `ctx.log` (where a local tool's go);
 * - an MRTR `input_required` answer (2026-07-28) or an `elicitation/create`
 *   / `sampling/createMessage` it sends within the call (2025-11-25) →
 *   `ctx.requestInput`: the task's `inputRequests`, answered by `tasks/update`;
 * - the task's cancel → `notifications/cancelled` for the held request;
 * - no answer (gone, timed out) or a JSON-RPC error → the task fails with a
 *   stable message; the details go to the log.
 */
import type { InputRequest } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import { ErrorCode, ToolError } from '../core/errors.js';
import { traceMeta } from '../core/traceContext.js';
import type { Logger } from '../runtime/Logger.js';
import type { ToolContext, ToolHandler, ToolResult } from '../tools/ToolDefinition.js';
import { inputRequestsOf, namingOurTool, stripMeta, withoutResultType, withTasks } from './forwardedShapes.js';
import type { RawOutcome, UpstreamConnection } from './UpstreamConnection.js';
import { UpstreamUnavailableError } from './UpstreamUnavailableError.js';

/** What a held call needs to know about its tool and upstream. */
export interface HeldCallTarget {
  upstream: string;
  /** The tool's name upstream. */
  tool: string;
  /** The name callers use (`<namespace>_<prefix>_<tool>`). */
  exposed: string;
  /** The upstream's open connection; after a restart it may wait for the upstream to be ready. */
  connection(signal: AbortSignal): Promise<UpstreamConnection>;
  /** Follows a task the upstream answered with unasked to its result (collapsed, never handed out). */
  collapse(connection: UpstreamConnection, upstreamId: string, first: JsonObject, ctx: ToolContext): Promise<JsonObject>;
  /** How long the held request may wait for its answer; none: no deadline of its own (the task's ttl bounds it). */
  timeoutMs?: number;
  logger: Logger;
}

/** The handler that holds one upstream call per run. */
export function heldCallHandler(target: HeldCallTarget): ToolHandler {
  return (args, ctx) => holdCall(target, args, ctx);
}

async function holdCall(target: HeldCallTarget, args: JsonObject, ctx: ToolContext): Promise<ToolResult> {
  const connection = await target.connection(ctx.signal);
  const token = connection.newProgressToken();
  let asked = 0;
  const stops = [
    connection.onProgress(token, (update) => ctx.progress(update.progress, update.total, update.message)),
    connection.addLogSink((message) => ctx.log(message.level, message.data, message.logger)),
    connection.addInputSink((method, params) => askCaller(ctx, `upstream-${++asked}`, method, params)),
  ];
  try {
    // The caller's own capabilities go up (the upstream checks them, T-19); never the tasks extension: the
    // upstream has no tasks, and the task is ours.
    const capabilities = withTasks(ctx.clientCapabilities ?? {}, false);
    const base: JsonObject = { name: target.tool, arguments: args, ...(ctx.trace ? { _meta: traceMeta(ctx.trace) } : {}) };
    let params = base;
    for (let round = 1; ; round++) {
      const result = await send(target, connection, params, capabilities, token, ctx);
      if (result.resultType === 'input_required') {
        params = { ...base, ...(await answerRound(target, ctx, result, round)) };
        continue;
      }
      // We asked for no task (the upstream has no tasks): one that comes anyway is followed here, as a plain forward does.
      if (result.resultType === 'task' && typeof result.taskId === 'string' && result.taskId.length > 0) {
        return withoutResultType(stripMeta(await target.collapse(connection, result.taskId, result, ctx))) as unknown as ToolResult;
      }
      if (result.resultType !== undefined && result.resultType !== 'complete') {
        target.logger.info(`upstream ${target.upstream}: held call of ${target.tool} answered resultType ${String(result.resultType)}`);
        throw new ToolError(ErrorCode.InternalError, `The upstream tool ${target.exposed} answered a result of an unexpected type`);
      }
      // The upstream's own CallToolResult, passed on as it came (its serverInfo dropped, ours is stamped).
      return withoutResultType(stripMeta(result)) as unknown as ToolResult;
    }
  } finally {
    for (const stop of stops) stop();
  }
}

/**
 * An upstream's MRTR round (§4.4) asked of the caller as task input: every
 * request at once, under keys unique for the task's life (T-18: an
 * upstream's keys are unique only within its round). Returns what the retry
 * carries: the answers under the upstream's keys, and its requestState.
 */
async function answerRound(target: HeldCallTarget, ctx: ToolContext, result: JsonObject, round: number): Promise<JsonObject> {
  const requests = inputRequestsOf(result);
  if (!requests) throw new ToolError(ErrorCode.InternalError, `The upstream tool ${target.exposed} asked for input without input requests`);
  const entries = Object.entries(requests);
  const answers = await Promise.all(entries.map(([key, request]) => ctx.requestInput(`round-${round}.${key}`, request)));
  return {
    inputResponses: Object.fromEntries(entries.map(([key], index): [string, JsonObject] => [key, answers[index] as JsonObject])),
    ...(typeof result.requestState === 'string' ? { requestState: result.requestState } : {}),
  };
}

/**
 * An upstream's request for input within the call, asked of the caller as
 * the task's input request. One the caller cannot be asked (it did not
 * declare the capability, T-19) is declined (elicitation) or refused.
 */
async function askCaller(ctx: ToolContext, key: string, method: InputRequest['method'], params: JsonObject): Promise<JsonObject> {
  // 2025-11-25 extras 2026-07-28 has no place for (its `_meta`, a URL elicitation's id) stay here.
  const { _meta: _dropped, elicitationId: _id, ...request } = params;
  try {
    return (await ctx.requestInput(key, { method, params: request })) as JsonObject;
  } catch (error) {
    if (method === 'elicitation/create' && !ctx.signal.aborted) return { action: 'decline' };
    throw error;
  }
}

/** One `tools/call` of the held call; what cannot be a result ends the run (see the file comment). */
async function send(
  target: HeldCallTarget,
  connection: UpstreamConnection,
  params: JsonObject,
  capabilities: JsonObject,
  progressToken: string,
  ctx: ToolContext,
): Promise<JsonObject> {
  let outcome: RawOutcome;
  try {
    outcome = await connection.request('tools/call', params, capabilities, {
      signal: ctx.signal,
      progressToken,
      abandonOnAbort: true,
      ...(target.timeoutMs !== undefined ? { timeoutMs: target.timeoutMs } : { noDeadline: true }),
    });
  } catch (error) {
    // Cancelled: notifications/cancelled went up; the run ends with the abort (the task: cancelled).
    if (ctx.signal.aborted) throw ctx.signal.reason;
    if (!(error instanceof UpstreamUnavailableError)) throw error;
    target.logger.info(`upstream ${target.upstream}: held call of ${target.tool} got no answer: ${error.message}`);
    throw new ToolError(
      ErrorCode.InternalError,
      error.timedOut
        ? `The upstream server ${target.upstream} did not answer the call of ${target.exposed} in time`
        : `The upstream server ${target.upstream} went away before answering the call of ${target.exposed}`,
    );
  }
  if (outcome.kind === 'result') return outcome.result;
  const error = namingOurTool(outcome.error, target.tool, target.exposed);
  // Still synchronous: exactly what a plain forward of the call answers.
  if (ctx.taskId === undefined) throw new ToolError(error.code, error.message, error.data);
  target.logger.info(
    `upstream ${target.upstream}: held call of ${target.tool} (task ${ctx.taskId}) answered error ${error.code}: ${error.message}`,
  );
  // Kept in the task for its whole life and shown to whoever reads it: the upstream's words without its paths and URLs.
  return Promise.reject(new ToolError(error.code, `The upstream tool ${target.exposed} failed: ${withoutLocations(error.message)}`));
}

/** `text` with URLs and file paths replaced by `…` (they name the upstream's insides, never the caller's business). */
export function withoutLocations(text: string): string {
  return String(text)
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, '…')
    .replace(/\b[A-Za-z]:\\\S+/g, '…')
    .replace(/(^|[\s"'`(=:,[])(?:~|\.{1,2})?(?:\/[^\s"'`/)\],]+)+\/?/g, '$1…');
}
