/**
 * The HTTP body checks made before the SDK sees a POST: size (413, like the
 * SDK's own check, but also for `subscriptions/listen`, which taskvisor
 * serves itself) and the JSON's shape — nesting depth, keys, values, values
 * in `_meta` — in one pass over the text (400). The body is read once, from
 * a clone, and handed on parsed so nobody parses it again.
 */
import { readRequestBody } from '@modelcontextprotocol/server';
import { LIMIT_EXCEEDED, limitExceededError } from '../limits/Limits.js';
import { jsonShapeError, jsonTextOverLimit, type JsonShapeLimits } from '../limits/jsonShape.js';

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

function refuse(status: number, error: { code: number; message: string; data?: unknown }): Response {
  return Response.json({ jsonrpc: '2.0', id: null, error }, { status });
}
