/**
 * A hand decoder for the one message shape the fast lane answers: a single
 * 2026-07-28 JSON-RPC request for `tasks/get`, `tasks/update` or
 * `tasks/cancel`. No zod on the way: each check is a
 * plain test of the parsed body.
 *
 * The decoder is deliberately narrower than the SDK. It accepts a message
 * only when it is sure the SDK would classify it as a modern request, pass it
 * through its ladder, and hand the SDK handler of {@link TasksExtension}
 * exactly the values decoded here. Everything else — batches, notifications,
 * responses, extra top-level members, ids that are not a string or a safe
 * integer, a `requestState`, an `inputResponses` that is not an object,
 * unusual `_meta` — returns `undefined`: the SDK answers it, with its own
 * wording (one path for every error the decoder is unsure of).
 */
import { classifyInboundRequest, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import { jsonEqual, type JsonObject } from '../core/json.js';
import { clientCapabilitiesIn } from './envelope.js';
import { SUPPORTED_MODERN_VERSIONS } from './listenRequest.js';
import type { InputResponses, TaskMethod } from './TaskRequests.js';

/** One `tasks/*` request as the fast lane answers it. */
export interface DecodedTaskRequest {
  id: string | number;
  method: TaskMethod;
  taskId: string;
  /** The envelope's protocol version (one of the supported modern versions). */
  protocolVersion: string;
  /** This request's own `clientCapabilities` (T-33), as the SDK handler sees them. */
  capabilities: JsonObject | undefined;
  /** `tasks/update` only: the answers, partitioned as the SDK partitions them (P2). */
  inputResponses?: InputResponses;
}

/** The methods the fast lane answers. */
export const TASK_METHODS: ReadonlySet<string> = new Set<TaskMethod>(['tasks/get', 'tasks/update', 'tasks/cancel']);

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const ENVELOPE_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const TASK_PARAMS = new Set(['taskId', '_meta']);
const UPDATE_PARAMS = new Set(['taskId', '_meta', 'inputResponses']);

/**
 * The `_meta` envelopes already judged by the SDK's own classifier. A client
 * sends the same envelope on every request, so the SDK's schema check runs
 * once per distinct envelope instead of once per request; the map is
 * emptied when full, so varied envelopes cost the SDK's price, never memory.
 */
const judgedEnvelopes = new Map<string, boolean>();
const MAX_JUDGED_ENVELOPES = 1024;

/**
 * Whether `meta` is a valid 2026-07-28 envelope (T-38, §2.4: a malformed one
 * is -32602 from the SDK's ladder), judged by the SDK itself: a bare request
 * carrying it classifies as modern exactly when its envelope has no issue.
 */
export function validEnvelope(meta: Record<string, unknown>): boolean {
  // The envelope judged valid last: most requests carry one equal to it, found without serialising.
  if (lastValidEnvelope !== undefined && jsonEqual(meta, lastValidEnvelope)) return true;
  const key = JSON.stringify(meta);
  let valid = judgedEnvelopes.get(key);
  if (valid === undefined) {
    const outcome = classifyInboundRequest({
      httpMethod: 'POST',
      body: { jsonrpc: '2.0', id: 0, method: 'tasks/get', params: { _meta: meta } },
    });
    valid = outcome.kind === 'modern';
    if (judgedEnvelopes.size >= MAX_JUDGED_ENVELOPES) judgedEnvelopes.clear();
    judgedEnvelopes.set(key, valid);
  }
  if (valid) lastValidEnvelope = meta;
  return valid;
}

let lastValidEnvelope: Record<string, unknown> | undefined;

/** Keys of `object` all in `allowed`. */
export function onlyKeys(object: Record<string, unknown>, allowed: ReadonlySet<string>): boolean {
  for (const key in object) if (!allowed.has(key)) return false;
  return true;
}

/**
 * The SDK's split of `inputResponses` (its `partitionInputResponses`): bare
 * result objects are accepted, anything else (a `{method, result}` wrapper,
 * a scalar) is dropped by key (P2).
 */
function partition(inputResponses: Record<string, unknown>): InputResponses {
  const accepted: Record<string, unknown> = {};
  const dropped: string[] = [];
  for (const [key, entry] of Object.entries(inputResponses)) {
    if (!isPlainObject(entry) || 'method' in entry || 'result' in entry) {
      dropped.push(key);
      continue;
    }
    accepted[key] = entry;
  }
  return { accepted, dropped };
}

/** `body` as a fast-lane request, or `undefined` when the SDK must judge it. */
export function decodeTaskRequest(body: unknown): DecodedTaskRequest | undefined {
  // JSON-RPC 2.0: one request object (batches and notifications are the SDK's).
  if (!isPlainObject(body) || !onlyKeys(body, ENVELOPE_KEYS) || body.jsonrpc !== '2.0') return undefined;
  const { id, method, params } = body;
  if (typeof method !== 'string' || !TASK_METHODS.has(method)) return undefined;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  // The handlers' params schema: { taskId: string } (a non-string taskId is the SDK's -32602).
  if (!isPlainObject(params) || typeof params.taskId !== 'string') return undefined;
  if (!onlyKeys(params, method === 'tasks/update' ? UPDATE_PARAMS : TASK_PARAMS)) return undefined;
  // T-42, §2.4: the per-request envelope, naming a version this server serves (else -32022 / -32602 from the SDK).
  const meta = params._meta;
  if (!isPlainObject(meta)) return undefined;
  const protocolVersion = meta[PROTOCOL_VERSION_META_KEY];
  if (typeof protocolVersion !== 'string' || !SUPPORTED_MODERN_VERSIONS.includes(protocolVersion)) return undefined;
  if (!validEnvelope(meta)) return undefined;
  const decoded: DecodedTaskRequest = {
    id: id as string | number,
    method: method as TaskMethod,
    taskId: params.taskId,
    protocolVersion,
    capabilities: clientCapabilitiesIn(meta),
  };
  if (method === 'tasks/update') {
    // §1.6: a non-object inputResponses is refused before the SDK lifts it (inputResponsesShape.ts): left to that path.
    if (!('inputResponses' in params)) decoded.inputResponses = { accepted: undefined, dropped: [] };
    else if (isPlainObject(params.inputResponses)) decoded.inputResponses = partition(params.inputResponses);
    else return undefined;
  }
  return decoded;
}
