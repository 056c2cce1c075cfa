/**
 * Decoding one inbound JSON-RPC frame (a WebSocket text frame, a stdio
 * line) under the runtime's limits. Every frame gets an outcome: a message
 * to dispatch, or the JSON-RPC error to answer — never an exception, never
 * silence for something that is not a valid notification.
 *
 * Answers (JSON-RPC 2.0 §4.1, §5): not JSON → -32700 (id null); a batch,
 * or JSON that is not a JSON-RPC message → -32600 (its id when readable,
 * else null); nested deeper than `maxJsonDepth` → -32000 `maxJsonDepth`;
 * more keys or values than `maxJsonKeys`, `maxJsonNodes`, `maxMetaNodes`
 * → -32600 naming the limit (all judged in one pass before `JSON.parse`).
 * A valid notification is dispatched and, as JSON-RPC requires, never
 * answered (an unknown notification is ignored).
 */
import { parseJSONRPCMessage, type JSONRPCMessage } from '@modelcontextprotocol/server';
import { DEFAULT_LIMITS } from '../limits/Limits.js';
import { jsonShapeError, jsonTextOverLimit, type JsonShapeLimits } from '../limits/jsonShape.js';

export interface FrameError {
  id: string | number | null;
  error: { code: number; message: string; data?: unknown };
}

export type DecodedFrame = { ok: true; message: JSONRPCMessage } | ({ ok: false } & FrameError);

/** The shape limits of a transport's options, the defaults for those not given. */
export function frameShapeLimits(options: Partial<JsonShapeLimits>): JsonShapeLimits {
  return {
    maxJsonDepth: options.maxJsonDepth ?? DEFAULT_LIMITS.maxJsonDepth,
    maxJsonKeys: options.maxJsonKeys ?? DEFAULT_LIMITS.maxJsonKeys,
    maxJsonNodes: options.maxJsonNodes ?? DEFAULT_LIMITS.maxJsonNodes,
    maxMetaNodes: options.maxMetaNodes ?? DEFAULT_LIMITS.maxMetaNodes,
  };
}

/** Decodes one frame's text. */
export function decodeFrame(text: string, limits: JsonShapeLimits): DecodedFrame {
  // Before JSON.parse: deep values break JSON.stringify (the store write) and recursive validators; many keys
  // or values cost schema validation time per key, whatever the bytes.
  const over = jsonTextOverLimit(text, limits);
  if (over) return { ok: false, id: null, error: jsonShapeError(over, limits, 'the message') };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, id: null, error: { code: -32700, message: 'Parse error: the frame is not valid JSON' } };
  }
  if (Array.isArray(value)) {
    return {
      ok: false,
      id: null,
      error: { code: -32600, message: 'Invalid Request: JSON-RPC batches are not supported; send one message per frame' },
    };
  }
  try {
    return { ok: true, message: parseJSONRPCMessage(value) };
  } catch {
    return { ok: false, id: readableId(value), error: { code: -32600, message: 'Invalid Request: not a JSON-RPC 2.0 message' } };
  }
}

/** The frame's id when it is a valid JSON-RPC id, else null. */
function readableId(value: unknown): string | number | null {
  const id = (value as { id?: unknown } | null)?.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}
