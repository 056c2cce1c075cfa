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
import { OutboundBudget } from './OutboundBudget.js';
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
  /** Bytes that may wait for a client not reading the stream, and for how long, ms (issue 12.3). */
  maxOutboundBufferBytes: number;
  outboundGraceMs: number;
  /** Told when the budget ends the stream (for the log). */
  onOverBudget?: (reason: string) => void;
  /** Ties the stream to its credentials: `end(reason)` when they expire or are revoked; returns the untrack function (issue 12.4). */
  trackSession?: (end: (reason: string) => void) => () => void;
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
  // The queue is sized in bytes (desiredSize = -bytes not yet taken by the client); the sizes of the frames
  // still queued, oldest first, give the backlog in frames the hub counts (the client takes them in order).
  const queuedSizes: number[] = [];
  let queuedTotal = 0;
  const queuedBytes = () => (ended ? 0 : -(controller.desiredSize ?? 0));
  const backlogFrames = () => {
    const queued = queuedBytes();
    while (queuedTotal > queued && queuedSizes.length > 0) queuedTotal -= queuedSizes.shift()!;
    return queuedSizes.length;
  };
  let closeForBudget: (reason: string) => void = () => {};
  const budget = new OutboundBudget({
    maxBytes: options.maxOutboundBufferBytes,
    graceMs: options.outboundGraceMs,
    queued: queuedBytes,
    // An SSE stream has nothing to read from the client: only the grace period applies.
    pause: () => {},
    resume: () => {},
    close: (reason) => closeForBudget(reason),
  });
  const write = (text: string) => {
    if (ended) return;
    const bytes = encoder.encode(text);
    if (!budget.admit(bytes.byteLength)) return;
    try {
      controller.enqueue(bytes);
      queuedSizes.push(bytes.byteLength);
      queuedTotal += bytes.byteLength;
      budget.check();
    } catch {
      ended = true;
    }
  };
  let untrackSession: () => void = () => {};
  const end = () => {
    if (ended) return;
    ended = true;
    untrackSession();
    budget.dispose();
    clearInterval(keepAlive);
    options.signal.removeEventListener('abort', onAbort);
    try {
      controller.close();
    } catch {
      // already closed by the consumer
    }
  };
  const sink = {
    // A fanned-out frame arrives already serialised (ListenFrame): written as is, not serialised again per stream.
    send: (message: JsonObject | string) =>
      write(`event: message\ndata: ${typeof message === 'string' ? message : JSON.stringify(message)}\n\n`),
    backlog: () => (ended ? 0 : backlogFrames()),
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
    { highWaterMark: 0, size: (chunk: Uint8Array) => chunk.byteLength },
  );
  // Issue 12.3: a client that leaves the stream unread past the budget loses it (not gracefully: it is not reading).
  closeForBudget = (reason) => {
    options.onOverBudget?.(reason);
    void opened.then((subscription) => subscription.close({ graceful: false }));
    if (!ended) {
      ended = true;
      untrackSession();
      budget.dispose();
      clearInterval(keepAlive);
      try {
        controller.error(new Error(reason));
      } catch {
        // already closed
      }
    }
  };
  if (options.trackSession) {
    untrackSession = options.trackSession((reason) => {
      void opened.then((subscription) =>
        subscription.close({ graceful: false, error: { code: -32600, message: `Unauthorized: subscription closed: ${reason}` } }),
      );
    });
  }
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
