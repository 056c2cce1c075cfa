/**
 * `subscriptions/listen` over Streamable HTTP: an SSE response whose first
 * event is the acknowledgement (T-63), then task and tool-list frames, with
 * keep-alive comments. The client ends it by dropping the stream; a graceful
 * server close answers the listen request with its result (§1.9).
 *
 * The request has already passed the SDK's own inbound ladder
 * (`classifyInboundRequest`: headers, envelope, era), so only the filter is
 * checked here.
 */
import type { JsonObject } from '../../machines/task/index.js';
import { parseListenRequest } from '../protocol/listenRequest.js';
import type { RequestId } from '../subscriptions/ListenSubscription.js';
import type { SubscriptionHub } from '../subscriptions/SubscriptionHub.js';

export interface HttpListenOptions {
  hub: SubscriptionHub;
  principal: string;
  id: RequestId;
  params: JsonObject | undefined;
  /** Fires when the client goes away. */
  signal: AbortSignal;
  /** Interval of SSE keep-alive comments; 0 disables. */
  keepAliveMs: number;
}

const encoder = new TextEncoder();

/** Serves one listen request; resolves the HTTP response (an SSE stream, or a JSON-RPC error). */
export function serveHttpListen(options: HttpListenOptions): Response {
  const parsed = parseListenRequest(options.params, options.hub.maxTaskIdsPerListen);
  if (!parsed.ok) {
    return Response.json({ jsonrpc: '2.0', id: options.id, error: parsed.error }, { status: parsed.httpStatus });
  }
  // 429: the principal holds too many streams; other principals' streams are untouched.
  const refused = options.hub.refusal(options.principal);
  if (refused) return Response.json({ jsonrpc: '2.0', id: options.id, error: refused }, { status: 429 });
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let ended = false;
  let keepAlive: NodeJS.Timeout | undefined;
  let onAbort: () => void = () => {};
  const write = (text: string) => {
    if (ended) return;
    try {
      controller.enqueue(encoder.encode(text));
    } catch {
      ended = true;
    }
  };
  const end = () => {
    if (ended) return;
    ended = true;
    clearInterval(keepAlive);
    options.signal.removeEventListener('abort', onAbort);
    try {
      controller.close();
    } catch {
      // already closed by the consumer
    }
  };
  const sink = {
    send: (message: JsonObject) => write(`event: message\ndata: ${JSON.stringify(message)}\n\n`),
    // A count strategy with highWaterMark 0 makes -desiredSize the number of frames the client has not taken.
    backlog: () => (ended ? 0 : -(controller.desiredSize ?? 0)),
    end,
  };
  const opened = options.hub.openListen({ id: options.id, principal: options.principal, requested: parsed.filter, sink });
  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      cancel() {
        void opened.then((subscription) => subscription.close({ graceful: false }));
      },
    },
    new CountQueuingStrategy({ highWaterMark: 0 }),
  );
  onAbort = () => void opened.then((subscription) => subscription.close({ graceful: false }));
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener('abort', onAbort, { once: true });
  if (options.keepAliveMs > 0) {
    keepAlive = setInterval(() => write(': keepalive\n\n'), options.keepAliveMs);
    keepAlive.unref();
  }
  return new Response(stream, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    },
  });
}
