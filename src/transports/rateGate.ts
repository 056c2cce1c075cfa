/**
 * Rate limits at the transports (limits/RateLimiter.ts): every entry charges
 * each JSON-RPC request of a principal before handing it on, so a refused
 * request runs nothing. Over HTTP the refusal is HTTP 429 with
 * `Retry-After` (RFC 9110 §10.2.3, whole seconds, rounded up) and the
 * JSON-RPC error in the body; on connections (stdio, WebSocket) it is the
 * JSON-RPC error `-32029` with `data.retryAfterMs`, in answer to that request.
 */
import { CLIENT_CAPABILITIES_META_KEY, type JSONRPCMessage } from '@modelcontextprotocol/server';
import type { RateLimitedError } from '../core/errors.js';
import { declaresTasksExtension } from '../core/tasksExtension.js';
import type { RateCharge, RateLimiter } from '../limits/RateLimiter.js';

type RequestId = string | number;

/** What `message` costs; `undefined` for anything but a request (notifications and answers are free). */
export function rateChargeOf(message: unknown): RateCharge | undefined {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return undefined;
  const { method, id, params } = message as { method?: unknown; id?: unknown; params?: unknown };
  if (typeof method !== 'string' || id === undefined) return undefined;
  if (method !== 'tools/call') return {};
  const fields = (params ?? {}) as { name?: unknown; _meta?: Record<string, unknown> };
  return {
    ...(typeof fields.name === 'string' ? { tool: fields.name } : {}),
    mayCreateTask: declaresTasksExtension(fields._meta?.[CLIENT_CAPABILITIES_META_KEY]),
  };
}

/** The first request of `body` (one message, or a batch) a limit refuses, with its id; `undefined` when all pass. */
export function chargeRequests(
  limiter: RateLimiter | undefined,
  principal: string,
  body: unknown,
): { error: RateLimitedError; id: RequestId | null } | undefined {
  if (!limiter?.limits) return undefined;
  for (const message of Array.isArray(body) ? body : [body]) {
    const charge = rateChargeOf(message);
    if (!charge) continue;
    const error = limiter.charge(principal, charge);
    if (error) {
      const id = (message as { id?: unknown }).id;
      return { error, id: typeof id === 'string' || typeof id === 'number' ? id : null };
    }
  }
  return undefined;
}

/** The JSON-RPC error answering request `id`. */
export function rateLimitedMessage(error: RateLimitedError, id: RequestId | null): JSONRPCMessage {
  // Cast: an error response; `id: null` is JSON-RPC's own for a request whose id could not be read.
  return { jsonrpc: '2.0', id, error: { code: error.code, message: error.message, data: error.data } } as JSONRPCMessage;
}

/** `Retry-After` in whole seconds, at least 1. */
export const retryAfterSeconds = (error: RateLimitedError): string => String(Math.max(1, Math.ceil(error.data.retryAfterMs / 1000)));

/** The HTTP answer: 429, `Retry-After`, the JSON-RPC error. */
export function rateLimitedResponse(error: RateLimitedError, id: RequestId | null): Response {
  return new Response(JSON.stringify(rateLimitedMessage(error, id)), {
    status: 429,
    headers: { 'content-type': 'application/json', 'retry-after': retryAfterSeconds(error), 'cache-control': 'no-store' },
  });
}
