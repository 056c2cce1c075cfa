/**
 * The JSON-RPC response to a decoded `tasks/*` request or `tools/call`, as the SDK would
 * write it after running the same handler: the result with the server's
 * identity stamped into `_meta` (T-38), or the error mapped by the same
 * `toProtocolError` the SDK handlers use, with the HTTP status the SDK's
 * per-request transport gives it (in-band 200; -32021 is 400: T-03, T-33).
 * The decision itself is {@link TaskRequests}'s or {@link ToolCalls}', shared with the SDK path.
 */
import { SERVER_INFO_META_KEY } from '@modelcontextprotocol/server';
import type { JsonObject } from '../core/json.js';
import type { Principal } from '../core/principal.js';
import { ErrorCode } from '../core/errors.js';
import type { Logger } from '../runtime/Logger.js';
import { toProtocolError } from './errors.js';
import type { DecodedTaskRequest } from './taskRequestDecoder.js';
import type { DecodedToolCall } from './toolCallDecoder.js';
import type { ToolCalls } from './ToolCalls.js';
import { traceContextOf } from '../core/traceContext.js';
import type { TaskRequests } from './TaskRequests.js';

/** A response message and the HTTP status it travels with on Streamable HTTP. */
export interface TaskAnswer {
  status: number;
  message: JsonObject;
}

export interface ServerIdentity {
  readonly name: string;
  readonly version: string;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The SDK's `stampServerInfoMeta`: adds `serverInfo` to `_meta` unless the
 * result already names one (or `_meta` is not an object). `owned`: the result
 * was built for this answer alone (the `tasks/*` handlers build a fresh one
 * per request), so it is stamped in place instead of copied; the keys end up
 * in the same order either way (`_meta` keeps its place, or comes last).
 */
function stampServerInfo(result: JsonObject, serverInfo: ServerIdentity, owned: boolean): JsonObject {
  const meta = result._meta;
  if (meta !== undefined && (!isPlainObject(meta) || meta[SERVER_INFO_META_KEY] !== undefined)) return result;
  const stamped =
    meta === undefined ? { [SERVER_INFO_META_KEY]: { ...serverInfo } } : { ...meta, [SERVER_INFO_META_KEY]: { ...serverInfo } };
  if (!owned) return { ...result, _meta: stamped };
  result._meta = stamped;
  return result;
}

/** Runs `request` for `principal` and shapes its response (I-7: the principal scopes every lookup). */
export function answerTaskRequest(
  requests: TaskRequests,
  request: DecodedTaskRequest,
  principal: string,
  serverInfo: ServerIdentity,
  logger?: Logger,
): Promise<TaskAnswer> {
  // The tasks/* handlers answer with an object built for this request (toDetailedTask, or a fresh acknowledgement).
  return respond(request.id, runTaskRequest(requests, request, principal), serverInfo, true, logger);
}

/** The handler of `request` (one promise, no closure around it). */
async function runTaskRequest(requests: TaskRequests, request: DecodedTaskRequest, principal: string): Promise<JsonObject> {
  const { method, taskId, capabilities } = request;
  requests.requireTasks(method, capabilities); // T-33: this request's own _meta, -32021 otherwise
  if (method === 'tasks/get') return requests.get(taskId, principal, capabilities);
  if (method === 'tasks/cancel') return requests.cancel(taskId, principal, capabilities);
  return requests.update(taskId, principal, request.inputResponses ?? { accepted: undefined, dropped: [] }, capabilities);
}

/**
 * Runs a decoded `tools/call` for `principal` through the same
 * {@link ToolCalls} the SDK handler calls (the create is durable before this
 * resolves, I-1) and shapes its response: the `CreateTaskResult` as it is
 * (T-05, P1), or the error.
 */
export function answerToolCall(
  calls: ToolCalls,
  request: DecodedToolCall,
  principal: Principal,
  serverInfo: ServerIdentity,
  logger?: Logger,
): Promise<TaskAnswer> {
  const trace = traceContextOf(request.meta);
  return respond(
    request.id,
    calls.answer({
      name: request.name,
      args: request.args,
      principal: principal.id,
      grants: principal,
      era: 'modern',
      clientCapabilities: request.capabilities,
      ...(trace ? { trace } : {}),
    }),
    serverInfo,
    false,
    logger,
  );
}

/** The response to request `id` whose handler's outcome is `run` (`owned`: see stampServerInfo), as the SDK's protocol layer writes it. */
async function respond(
  id: string | number,
  run: Promise<JsonObject>,
  serverInfo: ServerIdentity,
  owned: boolean,
  logger?: Logger,
): Promise<TaskAnswer> {
  try {
    const result = await run;
    // Key order as the SDK writes it: result, jsonrpc, id.
    return { status: 200, message: { result: stampServerInfo(result, serverInfo, owned), jsonrpc: '2.0', id } };
  } catch (thrown) {
    const error = toProtocolError(thrown, logger) as { code?: unknown; message?: string; data?: unknown };
    // As the SDK's protocol layer encodes a handler's error (its -32002 is sent as -32602).
    const raw = Number.isSafeInteger(error.code) ? (error.code as number) : ErrorCode.InternalError;
    const code = raw === -32002 ? ErrorCode.InvalidParams : raw;
    return {
      status: code === ErrorCode.MissingRequiredClientCapability ? 400 : 200,
      message: {
        jsonrpc: '2.0',
        id,
        error: {
          code,
          message: error.message ?? 'Internal error',
          ...(error.data !== undefined ? { data: error.data as JsonObject } : {}),
        },
      },
    };
  }
}
