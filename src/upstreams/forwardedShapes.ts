/**
 * The shapes of what crosses the aggregator: upstream answers made ours (no
 * upstream `serverInfo`, no `resultType` where ours goes, errors naming our
 * tool), and the capabilities we declare upstream on the caller's behalf.
 */
import { ProtocolError } from '@modelcontextprotocol/server';
import type { InputRequest } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import { ErrorCode } from '../core/errors.js';
import { TASKS_EXTENSION_ID } from '../core/tasksExtension.js';

const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';

/** The capabilities of a `tasks/*` request we make on our own account: the tasks extension only. */
export const TASKS_ONLY: JsonObject = { extensions: { [TASKS_EXTENSION_ID]: {} } };

/** The task as a `notifications/tasks` frame carries it: no `resultType`, no `_meta`. */
export function asNotification(task: JsonObject): JsonObject {
  const { resultType: _resultType, _meta: _dropped, ...rest } = task;
  return rest;
}

/** The inbound capabilities with the tasks extension set (or removed when `tasks` is false). */
export function withTasks(capabilities: JsonObject, tasks: boolean): JsonObject {
  const extensions = { ...((capabilities.extensions as JsonObject | undefined) ?? {}) };
  if (tasks) extensions[TASKS_EXTENSION_ID] = {};
  else delete extensions[TASKS_EXTENSION_ID];
  return { ...capabilities, extensions };
}

/** Drops the upstream's `serverInfo` (our SDK stamps ours); other `_meta` keys pass. */
export function stripMeta(result: JsonObject): JsonObject {
  const meta = result._meta as JsonObject | undefined;
  if (!meta || !(SERVER_INFO_META_KEY in meta)) return result;
  const { [SERVER_INFO_META_KEY]: _dropped, ...rest } = meta;
  const { _meta, ...body } = result;
  return Object.keys(rest).length > 0 ? { ...body, _meta: rest } : body;
}

export function withoutResultType(result: JsonObject): JsonObject {
  const { resultType: _resultType, ...rest } = result;
  return rest;
}

export function protocolError(error: { code: number; message: string; data?: unknown }): ProtocolError {
  return new ProtocolError(
    typeof error.code === 'number' ? error.code : ErrorCode.InternalError,
    String(error.message ?? 'Upstream error'),
    error.data,
  );
}

/** A JSON-RPC error as an upstream answered it. */
export type RawError = { code: number; message: string; data?: unknown };

/**
 * The upstream's error with its own name of the tool ("Invalid arguments for
 * tool sleep") replaced by the one the caller used (`x_demo_sleep`): the
 * caller has never heard of the upstream's name.
 */
export function namingOurTool(error: RawError, upstreamName: string, ourName: string): RawError {
  if (typeof error.message !== 'string') return error;
  const pattern = new RegExp(`(\\btool\\s+["'\`]?)${upstreamName.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`, 'gi');
  return { ...error, message: error.message.replace(pattern, `$1${ourName}`) };
}

/** A task's or an MRTR result's non-empty `inputRequests`, or `undefined`. */
export function inputRequestsOf(value: JsonObject): Record<string, InputRequest> | undefined {
  const requests = value.inputRequests;
  if (requests === null || typeof requests !== 'object' || Array.isArray(requests)) return undefined;
  // Cast: an upstream's input requests are relayed as it sent them; the client that answers them checks each (T-19).
  return Object.keys(requests).length > 0 ? (requests as Record<string, InputRequest>) : undefined;
}
