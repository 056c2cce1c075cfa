/**
 * A `Transport` wrapper for connection transports (stdio, WebSocket) that
 * owns 2026-07-28 `subscriptions/listen` requests and hands everything else
 * to the SDK's `serveStdio` unchanged. The SDK's stdio listen router strips
 * `taskIds` and passes unsolicited notifications through (P8), so listens
 * are served from the runtime's `SubscriptionHub` instead.
 *
 * Closing: the client ends a subscription with `notifications/cancelled`
 * naming the listen id (§4.6); a closed connection ends all of its streams.
 *
 * Request ids: a request whose id is still in flight on this connection
 * (listens included) is answered -32600 and never reaches the SDK.
 *
 * Before the runtime serves, messages pass its {@link RecoveryGate} first
 * (given the runtime): `tasks/*` answered while it recovers, the rest held
 * until it serves — what Streamable HTTP does.
 */
import type { JSONRPCMessage, Transport, TransportSendOptions } from '@modelcontextprotocol/server';
import type { JsonObject } from '../core/json.js';
import { isModernListenRequest, parseListenRequest } from '../protocol/listenRequest.js';
import type { Logger } from '../runtime/Logger.js';
import { logTransportError } from './transportErrors.js';
import { clipErrorStrings } from '../core/clientText.js';
import { InflightRequests, requestIdOf, responseIdOf } from './InflightRequests.js';
import { RecoveryGate } from './RecoveryGate.js';
import { chargeRequests, rateLimitedMessage } from './rateGate.js';
import type { ServingRuntime } from './ServingRuntime.js';
import type { ListenSink, ListenSubscription, RequestId } from '../protocol/ListenSubscription.js';
import type { SubscriptionHub } from '../protocol/SubscriptionHub.js';

type OnMessage = NonNullable<Transport['onmessage']>;

/**
 * A transport that can also write a message already serialised: as JSON text
 * (ours: stdio lines, WebSocket), or as its UTF-8 bytes with one callback
 * shared by every write (WebSocket; see `WebSocketServerTransport.sendBytes`).
 */
type SerializingTransport = Transport & {
  sendSerialized?: (text: string) => Promise<void>;
  sendBytes?: (json: Buffer, written: (error?: Error) => void) => boolean;
};

export class ListenInterceptingTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private sdkOnMessage: OnMessage | undefined;
  private readonly streams = new Map<RequestId, ListenSubscription>();
  private pendingSends = 0;
  /** Told by the transport when a listen frame written with `sendBytes` is out: one function for every write. */
  private readonly listenFrameWritten = (): void => {
    this.pendingSends--;
  };
  private readonly inflight = new InflightRequests();
  private readonly gate: RecoveryGate | undefined;

  /** @param runtime the runtime served, when it may not serve yet (bound before recovery): messages pass its gate. */
  constructor(
    private readonly inner: SerializingTransport,
    private readonly hub: SubscriptionHub,
    private readonly principal: string,
    private readonly logger: Logger,
    private readonly runtime?: ServingRuntime,
  ) {
    this.gate = runtime ? new RecoveryGate(runtime, principal, (message) => this.send(message)) : undefined;
    inner.onmessage = (message: JSONRPCMessage, extra?: unknown) => this.receive(message, extra);
    inner.onclose = () => {
      this.endAll();
      this.inflight.clear();
      this.onclose?.();
    };
    inner.onerror = (error) => this.onerror?.(error);
  }

  get onmessage(): OnMessage | undefined {
    return this.sdkOnMessage;
  }

  set onmessage(handler: OnMessage | undefined) {
    this.sdkOnMessage = handler;
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    // The SDK's answer frees its id.
    const answered = responseIdOf(message);
    if (answered !== undefined) this.inflight.release(answered);
    return this.inner.send(clippedEnvelopeError(message), options);
  }

  async close(): Promise<void> {
    // Graceful: each open stream gets its listen result before the connection goes (§1.9).
    for (const stream of [...this.streams.values()]) stream.close({ graceful: true });
    await this.inner.close();
  }

  /** Ends every listen stream of this connection with `error` (revoked credentials). */
  endStreams(error: { code: number; message: string }): void {
    for (const stream of [...this.streams.values()]) stream.close({ graceful: false, error });
  }

  /** Open listen streams on this connection. */
  get openStreams(): number {
    return this.streams.size;
  }

  private receive(message: JSONRPCMessage, extra?: unknown): void {
    // Rate limits per principal: a refused request is answered -32029 here and runs nothing.
    const limited = chargeRequests(this.runtime?.rateLimiter, this.principal, message);
    if (limited) {
      this.inner
        .send(rateLimitedMessage(limited.error, limited.id))
        .catch((error: unknown) => logTransportError(this.logger, 'rate limit answer', error));
      return;
    }
    const requestId = requestIdOf(message);
    if (requestId !== undefined && !this.inflight.claim(requestId)) {
      this.inner
        .send(InflightRequests.duplicateAnswer(requestId))
        .catch((error: unknown) => logTransportError(this.logger, 'duplicate request id', error));
      return;
    }
    // Not serving yet: answered now (tasks/* while recovering) or held until the runtime serves.
    if (this.gate?.take(message, () => this.route(message, extra))) return;
    this.route(message, extra);
  }

  /** A message past the id check and the gate: a listen is ours, the rest the SDK's. */
  private route(message: JSONRPCMessage, extra?: unknown): void {
    if (isModernListenRequest(message)) {
      void this.openListen(message.id, message.params).catch((error) => {
        this.inflight.release(message.id);
        logTransportError(this.logger, 'listen failed', error);
      });
      return;
    }
    const cancelled = cancelledRequestId(message);
    // A cancelled request may never be answered (MCP cancellation): its id is the client's to reuse.
    if (cancelled !== undefined && !this.streams.has(cancelled)) this.inflight.release(cancelled);
    if (cancelled !== undefined && this.streams.has(cancelled)) {
      this.streams.get(cancelled)!.close({ graceful: false });
      return;
    }
    (this.sdkOnMessage as ((m: JSONRPCMessage, e?: unknown) => void) | undefined)?.(message, extra);
  }

  private async openListen(id: RequestId, params: JsonObject | undefined): Promise<void> {
    const parsed = parseListenRequest(params, this.hub.maxTaskIdsPerListen, this.hub.uriLimits);
    if (!parsed.ok) {
      this.inflight.release(id);
      await this.inner.send({ jsonrpc: '2.0', id, error: parsed.error });
      return;
    }
    // (A second listen with an open stream's id never gets here: its id is in flight.)
    const refused = this.hub.refusal(this.principal, parsed.filter);
    if (refused) {
      this.inflight.release(id);
      await this.inner.send({ jsonrpc: '2.0', id, error: refused });
      return;
    }
    let stream: ListenSubscription | undefined;
    const sink: ListenSink = {
      send: (frame: JsonObject | string) => {
        this.pendingSends++;
        // A fanned-out frame comes serialised once for all streams (ListenFrame): written as is where the transport can.
        const sent =
          typeof frame !== 'string'
            ? this.inner.send(frame as JSONRPCMessage)
            : this.inner.sendSerialized
              ? this.inner.sendSerialized(frame)
              : this.inner.send(JSON.parse(frame) as JSONRPCMessage);
        sent.catch(() => stream?.close({ graceful: false })).finally(() => this.pendingSends--);
      },
      backlog: () => this.pendingSends,
      end: () => {
        this.streams.delete(id);
        this.inflight.release(id);
      },
    };
    const inner = this.inner;
    if (inner.sendBytes) {
      // The fan-out's path (WebSocket): the frame's shared bytes, no promise or closure per write. A write that fails
      // closes the socket, which ends every stream of the connection (inner.onclose), so the callback only counts.
      sink.sendBytes = (json: Buffer) => {
        this.pendingSends++;
        if (inner.sendBytes!(json, this.listenFrameWritten)) return;
        this.pendingSends--;
        stream?.close({ graceful: false });
      };
    }
    const opening = this.hub.openListen({ id, principal: this.principal, requested: parsed.filter, sink });
    stream = await opening;
    if (!stream.closed) this.streams.set(id, stream);
  }

  private endAll(): void {
    for (const stream of [...this.streams.values()]) stream.close({ graceful: false });
    this.streams.clear();
  }
}

/** The request id a `notifications/cancelled` names, if `message` is one. */
function cancelledRequestId(message: JSONRPCMessage): RequestId | undefined {
  const candidate = message as { method?: unknown; params?: { requestId?: unknown } };
  if (candidate.method !== 'notifications/cancelled') return undefined;
  const id = candidate.params?.requestId;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

/**
 * The SDK's envelope refusals (version, capabilities, malformed requests)
 * quote the client's values: a 3 MB protocol version came back twice. Their
 * strings are cut (core/clientText.ts); a tool's own errors pass untouched.
 */
const ENVELOPE_ERROR_CODES: ReadonlySet<number> = new Set([-32700, -32600, -32601, -32020, -32021, -32022]);

function clippedEnvelopeError(message: JSONRPCMessage): JSONRPCMessage {
  if (!('error' in message) || !ENVELOPE_ERROR_CODES.has(message.error.code)) return message;
  const error = clipErrorStrings(message.error);
  return error === message.error ? message : { ...message, error };
}
