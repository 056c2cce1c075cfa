/**
 * Validation of a `subscriptions/listen` request (2026-07-28 base §4.6 plus
 * the Tasks extension's `taskIds`, §1.9). The SDK's own listen router strips
 * `taskIds` (P8), so taskvisor owns every modern listen on every transport.
 */
import { CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import type { JsonObject } from '../core/json.js';
import { clipClientText, quoteClientValue } from '../core/clientText.js';
import { ErrorCode, MissingTasksCapabilityError } from '../core/errors.js';
import { declaresTasksExtension } from '../core/tasksExtension.js';
import type { ListenFilter } from './ListenSubscription.js';
import { DEFAULT_LIMITS, limitExceededError, type Limits } from '../limits/Limits.js';

export const SUPPORTED_MODERN_VERSIONS = ['2026-07-28'];

/** Most task ids one listen request may carry before it is refused as malformed. */
export const MAX_LISTEN_TASK_IDS = 10_000;

export type ListenRequestOutcome =
  { ok: true; filter: ListenFilter } | { ok: false; httpStatus: number; error: { code: number; message: string; data?: unknown } };

const invalid = (message: string): ListenRequestOutcome => ({
  ok: false,
  httpStatus: 400,
  error: { code: ErrorCode.InvalidParams, message: `Invalid params for subscriptions/listen: ${message}` },
});

/** Whether `message` is a request that opens a 2026-07-28 listen stream (it carries the per-request envelope). */
export function isModernListenRequest(message: unknown): message is { id: string | number; method: string; params?: JsonObject } {
  if (message === null || typeof message !== 'object') return false;
  const candidate = message as { method?: unknown; id?: unknown; params?: { _meta?: Record<string, unknown> } };
  return (
    candidate.method === 'subscriptions/listen' &&
    (typeof candidate.id === 'string' || typeof candidate.id === 'number') &&
    candidate.params?._meta?.[PROTOCOL_VERSION_META_KEY] !== undefined
  );
}

/** The bounds on the resource URIs of one listen (what a principal's open listens hold is the hub's to count). */
export type ListenUriLimits = Pick<Limits, 'maxListenUriBytes' | 'maxListenUriBytesPerListen'>;

/** Validates the envelope and the filter of a listen request. */
export function parseListenRequest(
  params: JsonObject | undefined,
  maxTaskIds = MAX_LISTEN_TASK_IDS,
  uriLimits: ListenUriLimits = DEFAULT_LIMITS,
): ListenRequestOutcome {
  if (params === null || typeof params !== 'object') return invalid('params is required');
  const meta = params._meta as Record<string, unknown> | undefined;
  const version = meta?.[PROTOCOL_VERSION_META_KEY];
  if (typeof version !== 'string' || !SUPPORTED_MODERN_VERSIONS.includes(version)) {
    return {
      ok: false,
      httpStatus: 400,
      error: {
        code: ErrorCode.UnsupportedProtocolVersion,
        message: `Unsupported protocol version ${quoteClientValue(version)}`,
        data: { supported: SUPPORTED_MODERN_VERSIONS, ...(typeof version === 'string' ? { requested: clipClientText(version) } : {}) },
      },
    };
  }
  const capabilities = meta?.[CLIENT_CAPABILITIES_META_KEY];
  if (capabilities === null || typeof capabilities !== 'object' || Array.isArray(capabilities)) {
    return invalid(`_meta["${CLIENT_CAPABILITIES_META_KEY}"] is required`);
  }
  const notifications = params.notifications as Record<string, unknown> | undefined;
  if (notifications === null || typeof notifications !== 'object' || Array.isArray(notifications)) {
    return invalid('notifications is required and must be an object');
  }
  const filter: ListenFilter = {};
  for (const flag of ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const) {
    if (notifications[flag] === undefined) continue;
    if (typeof notifications[flag] !== 'boolean') return invalid(`notifications.${flag} must be a boolean`);
    if (notifications[flag]) filter[flag] = true;
  }
  const uris = boundedStrings(notifications, 'resourceSubscriptions', 'resources', maxTaskIds);
  if (uris && !Array.isArray(uris)) return uris;
  if (uris) {
    // Every URI is kept, indexed and echoed in the acknowledgement: refused past the bounds, never cut (the spec has no partial grant here).
    const tooLong = uriTooLong(uris, uriLimits);
    if (tooLong) return tooLong;
    filter.resourceSubscriptions = uris;
  }
  const ids = boundedStrings(notifications, 'taskIds', 'tasks', maxTaskIds);
  if (ids && !Array.isArray(ids)) return ids;
  if (ids) {
    if (!declaresTasksExtension(capabilities)) {
      // T-30: taskIds without the extension declared on this same listen request.
      const { code, message, data } = new MissingTasksCapabilityError('notifications.taskIds');
      return { ok: false, httpStatus: 400, error: { code, message, data } };
    }
    filter.taskIds = ids;
  }
  return { ok: true, filter };
}

/**
 * `notifications[key]` as a list of strings, or the refusal: -32602 for
 * anything else, the `maxTaskIdsPerListen` limit (one bound for everything a
 * listen names) past `max` entries. Undefined when the key is absent.
 */
function boundedStrings(
  notifications: Record<string, unknown>,
  key: 'taskIds' | 'resourceSubscriptions',
  what: string,
  max: number,
): string[] | ListenRequestOutcome | undefined {
  const value = notifications[key];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((entry) => typeof entry !== 'string'))
    return invalid(`notifications.${key} must be an array of strings`);
  if (value.length > max) {
    return {
      ok: false,
      httpStatus: 400,
      error: limitExceededError('maxTaskIdsPerListen', max, `notifications.${key} names ${value.length} ${what}`),
    };
  }
  return value as string[];
}

/** The refusal of URIs past `bounds`: one too long, or too many bytes together. */
function uriTooLong(uris: readonly string[], limits: ListenUriLimits): ListenRequestOutcome | undefined {
  let total = 0;
  for (const [index, uri] of uris.entries()) {
    const bytes = Buffer.byteLength(uri);
    if (bytes > limits.maxListenUriBytes) {
      return {
        ok: false,
        httpStatus: 400,
        error: limitExceededError(
          'maxListenUriBytes',
          limits.maxListenUriBytes,
          `notifications.resourceSubscriptions[${index}] is ${bytes} bytes long`,
        ),
      };
    }
    total += bytes;
  }
  if (total <= limits.maxListenUriBytesPerListen) return undefined;
  return {
    ok: false,
    httpStatus: 400,
    error: limitExceededError(
      'maxListenUriBytesPerListen',
      limits.maxListenUriBytesPerListen,
      `notifications.resourceSubscriptions names ${total} bytes of URIs`,
    ),
  };
}
