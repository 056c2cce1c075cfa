/**
 * The raw request path ext-tasks needs on a 2026-07-28 Tasks server
 * (sdk-v2-notes §3, P5): the SDK Client cannot decode `resultType: "task"`,
 * so task traffic (`tools/call` that may become a task, `tasks/*`) is sent on
 * the Client's own transport with ids of its own (`raw:N`) and its responses
 * are taken off the transport before the Client sees them (through
 * `protocol/transportTap.ts`, the one place an SDK transport is rewired).
 * Everything else still goes through the Client. It needs the Client
 * connected first (the SDK sets `onmessage` in `connect`).
 */
import { ProtocolError, type JSONRPCRequest, type Transport } from '@modelcontextprotocol/client';
import type { RawClientDispatch } from '@modelcontextprotocol/ext-tasks/client';
import { responseId, tapInbound } from '../protocol/transportTap.js';

type RawResponse = Awaited<ReturnType<RawClientDispatch>>;
type ErrorV2 = Extract<RawResponse, { kind: 'error' }>['error'];
type JsonValue = Extract<RawResponse, { kind: 'result' }>['result'];

export interface RawDispatchOptions {
  /** A request unanswered after this long is rejected (a stream that ended without a response). Default 60 s. */
  timeoutMs?: number;
  /**
   * Sees the JSON-RPC error response of a raw request that came as the body
   * of an HTTP error status (404 -32601, 400 -32021/-32020) rather than on the
   * transport's message stream, with the request's id: for a caller that
   * records every response (the message stream it can watch itself).
   */
  onHttpErrorResponse?: (response: Record<string, unknown>, id: string) => void;
}

/** Installs the raw path on a connected `transport` and returns its dispatch function. */
export function attachRawDispatch(transport: Transport, options: RawDispatchOptions = {}): RawClientDispatch {
  const pending = new Map<string, (response: RawResponse) => void>();
  let counter = 0;
  if (!transport.onmessage) throw new Error('attachRawDispatch: connect the Client to the transport first');
  tapInbound(transport, (message) => {
    const id = responseId(message);
    const settle = typeof id === 'string' ? pending.get(id) : undefined;
    if (!settle) return false;
    pending.delete(id as string);
    settle(
      'error' in message
        ? { kind: 'error', error: message.error as ErrorV2 }
        : { kind: 'result', result: (message as { result: JsonValue }).result },
    );
    return true;
  });

  const timeoutMs = options.timeoutMs ?? 60_000;
  return (request, dispatchOptions) =>
    new Promise((resolve, reject) => {
      const id = `raw:${++counter}`;
      const timer = setTimeout(() => {
        if (pending.delete(id)) reject(new Error(`no response to ${(request as { method?: string }).method} within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      pending.set(id, (response) => {
        clearTimeout(timer);
        resolve(response);
      });
      // ext-tasks hands a framed JSON-RPC request without an id: it gets one of ours.
      const message = { jsonrpc: '2.0', id, ...(request as object) } as JSONRPCRequest;
      transport.send(message, dispatchOptions?.signal ? { requestSignal: dispatchOptions.signal } : undefined).catch((error: unknown) => {
        if (!pending.delete(id)) return;
        clearTimeout(timer);
        if (error instanceof ProtocolError) return resolve({ kind: 'error', error: { code: error.code, message: error.message } });
        // A JSON-RPC error answered with an HTTP error status (404 -32601, 400 -32021/-32020) arrives as an SdkHttpError.
        const text = (error as { data?: { text?: unknown } } | undefined)?.data?.text;
        if (typeof text === 'string') {
          try {
            const body = JSON.parse(text) as { error?: ErrorV2 };
            if (body.error) {
              options.onHttpErrorResponse?.(body, id);
              return resolve({ kind: 'error', error: body.error });
            }
          } catch {
            // not JSON: the transport error stands
          }
        }
        reject(error);
      });
    });
}
