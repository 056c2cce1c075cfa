/**
 * A hand decoder for the `tools/call` the fast lane answers:
 * a single 2026-07-28 JSON-RPC request whose params are a tool
 * name, optional arguments (an object) and a valid `_meta` envelope — the
 * shape a client creating a task sends. No zod on the way.
 *
 * Narrower than the SDK, like the `tasks/*` decoder: an MRTR retry
 * (`requestState`, `inputResponses`), a legacy `task` field, any other
 * member, arguments that are not an object, an id that is not a string or a
 * safe integer, an envelope the SDK would refuse — all `undefined`: the SDK
 * path judges them.
 */
import { PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import type { JsonObject } from '../core/json.js';
import { clientCapabilitiesIn } from './envelope.js';
import { SUPPORTED_MODERN_VERSIONS } from './listenRequest.js';
import { isPlainObject, onlyKeys, validEnvelope } from './taskRequestDecoder.js';

/** One `tools/call` as the fast lane answers it. */
export interface DecodedToolCall {
  id: string | number;
  name: string;
  /** `undefined` when the request sent none (the SDK handler sees the same). */
  args: Record<string, unknown> | undefined;
  /** The envelope's protocol version (one of the supported modern versions). */
  protocolVersion: string;
  /** This request's own `clientCapabilities` (T-01, T-33). */
  capabilities: JsonObject | undefined;
  /** The request's `_meta` (trace context). */
  meta: Record<string, unknown>;
}

const ENVELOPE_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const CALL_PARAMS = new Set(['name', 'arguments', '_meta']);

/** `body` as a fast-lane `tools/call`, or `undefined` when the SDK must judge it. */
export function decodeToolCall(body: unknown): DecodedToolCall | undefined {
  // JSON-RPC 2.0: one request object (batches and notifications are the SDK's).
  if (!isPlainObject(body) || !onlyKeys(body, ENVELOPE_KEYS) || body.jsonrpc !== '2.0' || body.method !== 'tools/call') return undefined;
  const { id, params } = body;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  // The SDK's CallToolRequest params: { name: string, arguments?: object }.
  if (!isPlainObject(params) || typeof params.name !== 'string' || !onlyKeys(params, CALL_PARAMS)) return undefined;
  const args = params.arguments;
  if (args !== undefined && !isPlainObject(args)) return undefined;
  // T-42, §2.4: the per-request envelope, naming a version this server serves (else -32022 / -32602 from the SDK).
  const meta = params._meta;
  if (!isPlainObject(meta)) return undefined;
  const protocolVersion = meta[PROTOCOL_VERSION_META_KEY];
  if (typeof protocolVersion !== 'string' || !SUPPORTED_MODERN_VERSIONS.includes(protocolVersion)) return undefined;
  if (!validEnvelope(meta)) return undefined;
  return { id: id as string | number, name: params.name, args, protocolVersion, capabilities: clientCapabilitiesIn(meta), meta };
}
