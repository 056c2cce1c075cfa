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
import type { ServerResponse } from 'node:http';
import type { JsonObject } from '../core/json.js';
import { parseListenRequest } from '../protocol/listenRequest.js';
import { OutboundBudget } from './OutboundBudget.js';
import { NodeSseOutput, WebSseOutput, type SseOutput } from './SseOutput.js';
import type { ListenSubscription, RequestId } from '../protocol/ListenSubscription.js';
import type { SubscriptionHub } from '../protocol/SubscriptionHub.js';

export interface HttpListenOptions {
  hub: SubscriptionHub;
  principal: string;
  id: RequestId;
  params: JsonObject | undefined;
  /** Fires when the client goes away. */
  signal: AbortSignal;
  /** Interval of SSE keep-alive comments; 0 disables. */
  keepAliveMs: number;
  /** Bytes that may wait for a client not reading the stream, and for how long, ms. */
  maxOutboundBufferBytes: number;
  outboundGraceMs: number;
  /** Told when the budget ends the stream (for the log). */
  onOverBudget?: (reason: string) => void;
  /** Counts the frames held back for the client in its connection's budget too; returns the removal. */
  countQueued?: (queued: () => number) => () => void;
  /** Ties the stream to its credentials: `end(reason)` when they expire or are revoked; returns the untrack function. */
  trackSession?: (end: (reason: string) => void) => () => void;
  /**
   * The Node response the returned `Response` will be written to by the SDK's
   * Node adapter: frames then go to it directly instead of through the web
   * stream. Absent for a web-standard `fetch` caller.
   */
  direct?: ServerResponse | undefined;
}

/** Serves one listen request; resolves the HTTP response (an SSE stream, or a JSON-RPC error). */
export function serveHttpListen(options: HttpListenOptions): Response {
  const parsed = parseListenRequest(options.params, options.hub.maxTaskIdsPerListen, options.hub.uriLimits);
  if (!parsed.ok) {
    return Response.json({ jsonrpc: '2.0', id: options.id, error: parsed.error }, { status: parsed.httpStatus });
  }
  // 429: the principal holds too many streams (or URIs); other principals' streams are untouched. Retry-After as the sessions' 429.
  const refused = options.hub.refusal(options.principal, parsed.filter);
  if (refused) return Response.json({ jsonrpc: '2.0', id: options.id, error: refused }, { status: 429, headers: { 'retry-after': '5' } });
  let ended = false;
  let keepAlive: NodeJS.Timeout | undefined;
  let onAbort: () => void = () => {};
  // Set once the hub registered the stream (below); the client may drop the body before.
  let opened: Promise<ListenSubscription> | undefined;
  const dropped = () => void opened?.then((subscription) => subscription.close({ graceful: false }));
  const output: SseOutput = options.direct ? new NodeSseOutput(options.direct, dropped) : new WebSseOutput(dropped);
  let closeForBudget: (reason: string) => void = () => {};
  const budget = new OutboundBudget({
    maxBytes: options.maxOutboundBufferBytes,
    graceMs: options.outboundGraceMs,
    queued: () => (ended ? 0 : output.queuedBytes()),
    // An SSE stream has nothing to read from the client: only the grace period applies.
    pause: () => {},
    resume: () => {},
    close: (reason) => closeForBudget(reason),
  });
  const write = (text: string) => {
    if (ended) return;
    const bytes = Buffer.byteLength(text);
    if (!budget.admit(bytes)) return;
    output.write(text, bytes);
    budget.check();
  };
  let untrackSession: () => void = () => {};
  const uncount = options.countQueued?.(() => (ended ? 0 : output.queuedBytes()));
  const stop = () => {
    ended = true;
    untrackSession();
    uncount?.();
    budget.dispose();
    clearInterval(keepAlive);
    options.signal.removeEventListener('abort', onAbort);
  };
  const sink = {
    // A fanned-out frame arrives already serialised (ListenFrame): written as is, not serialised again per stream.
    send: (message: JsonObject | string) =>
      write(`event: message\ndata: ${typeof message === 'string' ? message : JSON.stringify(message)}\n\n`),
    backlog: () => (ended ? 0 : output.queuedFrames()),
    end: () => {
      if (ended) return;
      stop();
      output.close();
    },
  };
  opened = options.hub.openListen({ id: options.id, principal: options.principal, requested: parsed.filter, sink });
  // A client that leaves the stream unread past the budget loses it (not gracefully: it is not reading).
  closeForBudget = (reason) => {
    options.onOverBudget?.(reason);
    dropped();
    if (!ended) {
      stop();
      output.fail(reason);
    }
  };
  if (options.trackSession) {
    untrackSession = options.trackSession((reason) => {
      void opened?.then((subscription) =>
        subscription.close({ graceful: false, error: { code: -32600, message: `Unauthorized: subscription closed: ${reason}` } }),
      );
    });
  }
  onAbort = dropped;
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener('abort', onAbort, { once: true });
  if (options.keepAliveMs > 0) {
    keepAlive = setInterval(() => write(': keepalive\n\n'), options.keepAliveMs);
    keepAlive.unref();
  }
  return new Response(output.body, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    },
  });
}
