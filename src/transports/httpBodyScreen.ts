/**
 * The HTTP body checks made before the SDK sees a POST: size (413, like the
 * SDK's own check, but also for `subscriptions/listen`, which taskvisor
 * serves itself) and the JSON's shape — nesting depth, keys, values, values
 * in `_meta` — in one pass over the text (400). The body is read once, from
 * a clone, and handed on parsed so nobody parses it again.
 */
import { readRequestBody } from '@modelcontextprotocol/server';
import { LIMIT_EXCEEDED, limitExceededError } from '../limits/Limits.js';
import { jsonShapeError, jsonTextOverLimit, jsonValueOverLimit, type JsonShapeLimits } from '../limits/jsonShape.js';

export interface BodyLimits extends JsonShapeLimits {
  maxBodyBytes: number;
}

/** A POST's parsed body (`undefined` when empty or not JSON: the SDK answers those), or the response refusing it. */
export async function screenHttpBody(request: Request, limits: BodyLimits): Promise<{ parsedBody: unknown } | Response> {
  let read: { tooLarge: boolean; text?: string };
  try {
    read = await readRequestBody(request.clone(), limits.maxBodyBytes);
  } catch {
    return refuse(400, { code: -32700, message: 'Parse error: the request body could not be read' });
  }
  if (read.tooLarge || read.text === undefined) {
    // 413 and -32000, as the SDK answers (HTTP bodies can't be accepted past the limit).
    return refuse(413, {
      ...limitExceededError('maxRequestBodyBytes', limits.maxBodyBytes, 'the request body is too large'),
      code: LIMIT_EXCEEDED,
    });
  }
  const over = jsonTextOverLimit(read.text, limits);
  if (over) return refuse(400, jsonShapeError(over, limits, 'the request body'));
  try {
    return { parsedBody: read.text.length === 0 ? undefined : (JSON.parse(read.text) as unknown) };
  } catch {
    return { parsedBody: undefined };
  }
}

/** Why a body the host framework already parsed is refused: the HTTP status and the JSON-RPC error. */
export interface ParsedBodyRefusal {
  status: number;
  error: { code: number; message: string; data?: unknown };
}

/**
 * The same limits for a body a host framework already parsed (`express.json()`, Fastify, Koa): nothing is read
 * again. Its shape is walked first — the walk stops at the first limit, so a hostile value costs no more than the
 * text scan, and nothing serializes a value nested past `maxJsonDepth`. Its size is the larger of the
 * `Content-Length` the client declared and the value serialized again: a parser that accepted more bytes than
 * ours would (a framework whose own limit is higher) cannot let a larger message through.
 */
export function screenParsedBody(
  parsedBody: unknown,
  declaredLength: string | null | undefined,
  limits: BodyLimits,
): ParsedBodyRefusal | undefined {
  const over = jsonValueOverLimit(parsedBody, limits);
  if (over) return { status: 400, error: jsonShapeError(over, limits, 'the request body') };
  const declared = Number(declaredLength ?? 0);
  let serialized: string | undefined;
  try {
    serialized = JSON.stringify(parsedBody);
  } catch {
    // A cycle or a BigInt: not what a JSON parser produces, so the host passed something else.
    return { status: 400, error: { code: -32700, message: 'Parse error: the parsed request body is not a JSON value' } };
  }
  const size = Math.max(Number.isFinite(declared) ? declared : 0, serialized === undefined ? 0 : Buffer.byteLength(serialized));
  if (size > limits.maxBodyBytes) {
    return {
      status: 413,
      error: { ...limitExceededError('maxRequestBodyBytes', limits.maxBodyBytes, 'the request body is too large'), code: LIMIT_EXCEEDED },
    };
  }
  return undefined;
}

/** A refusal as the JSON-RPC response a client reads. */
export function parsedBodyRefusalResponse(refusal: ParsedBodyRefusal): Response {
  return refuse(refusal.status, refusal.error);
}

function refuse(status: number, error: { code: number; message: string; data?: unknown }): Response {
  return Response.json({ jsonrpc: '2.0', id: null, error }, { status });
}
