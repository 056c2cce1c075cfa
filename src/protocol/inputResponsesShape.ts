/**
 * The one `tasks/update` check that must see the raw request: the SDK lifts
 * `params.inputResponses` out of every request before a handler runs and
 * turns any non-object (an array, null, a string) into `{}`, so a malformed
 * update would be acknowledged as an empty one. §1.6 types `inputResponses`
 * as a map from key to bare result; anything else is invalid params (-32602).
 */
import { CLIENT_CAPABILITIES_META_KEY, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { ErrorCode } from '../core/errors.js';
import { declaresTasksExtension } from '../core/tasksExtension.js';

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The error response for a `tasks/update` whose `inputResponses` is present
 * but not an object, or undefined to let the request through. Requests that
 * do not declare the extension pass, so `-32021` keeps its precedence (T-33).
 */
export function malformedInputResponses(message: JSONRPCMessage): JSONRPCMessage | undefined {
  const request = message as { id?: unknown; method?: unknown; params?: unknown };
  if (request.method !== 'tasks/update' || (typeof request.id !== 'string' && typeof request.id !== 'number')) return undefined;
  if (!isPlainObject(request.params) || !('inputResponses' in request.params)) return undefined;
  const value = request.params.inputResponses;
  if (isPlainObject(value)) return undefined;
  const meta = request.params._meta;
  const capabilities = isPlainObject(meta) ? meta[CLIENT_CAPABILITIES_META_KEY] : undefined;
  if (!declaresTasksExtension(capabilities)) return undefined;
  const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
  return {
    jsonrpc: '2.0',
    id: request.id,
    error: {
      code: ErrorCode.InvalidParams,
      message: `Invalid params for tasks/update: inputResponses must be an object keyed by input request key, got ${got}`,
    },
  };
}
