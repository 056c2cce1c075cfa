/**
 * One WebSocket connection as an SDK `Transport`, so the SDK's
 * `serveStdio(factory, { transport })` can serve it: era chosen by the
 * opening message, one pinned server instance per connection (sdk-v2-notes
 * §5; the v2 SDK has no WebSocket transport of its own).
 *
 * Framing: one JSON-RPC message per text frame, no batches. A text frame that
 * is not JSON is answered with a `-32700` parse error (id null); a binary
 * frame, a batch or JSON that is not a JSON-RPC message with `-32600`. The
 * connection stays open after any of these.
 */
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { DEFAULT_LIMITS, limitExceededError } from '../limits/Limits.js';
import type { JsonShapeLimits } from '../limits/jsonShape.js';
import { decodeFrame, frameShapeLimits } from './frames.js';
import { OutboundBudget } from './OutboundBudget.js';
import type { OutboundShare, PrincipalOutbound } from './PrincipalOutbound.js';
import { RequestIntake } from './RequestIntake.js';
import { requestIdOf, responseIdOf } from './InflightRequests.js';
import { InboundTurns, type InboundQueue } from './InboundTurns.js';
import { WebSocket, type RawData } from 'ws';

/** Normal closure (RFC 6455 §7.4.1). */
export const WS_CLOSE_NORMAL = 1000;
/** The endpoint is going away (server shutdown). */
export const WS_CLOSE_GOING_AWAY = 1001;
/** Policy violation: used for a client that does not read what it asked for and for revoked credentials. */
export const WS_CLOSE_POLICY_VIOLATION = 1008;

export interface WebSocketServerTransportOptions {
  /** How long `close()` waits for the peer's close frame before dropping the socket. Default 2 s. */
  closeTimeoutMs?: number;
  /** Deepest accepted nesting of one message. Default `DEFAULT_LIMITS.maxJsonDepth`. */
  maxJsonDepth?: number;
  /** Most object keys in one message. Default `DEFAULT_LIMITS.maxJsonKeys`. */
  maxJsonKeys?: number;
  /** Most values in one message. Default `DEFAULT_LIMITS.maxJsonNodes`. */
  maxJsonNodes?: number;
  /** Most values in one `_meta`. Default `DEFAULT_LIMITS.maxMetaNodes`. */
  maxMetaNodes?: number;
  /** Bytes that may wait for a client that does not read (see OutboundBudget). Default `DEFAULT_LIMITS.maxOutboundBufferBytes`. */
  maxOutboundBufferBytes?: number;
  /** How long the connection may stay over that budget, ms. Default `DEFAULT_LIMITS.outboundGraceMs`. */
  outboundGraceMs?: number;
  /** Told when the budget closes the connection (for the log). */
  onOverBudget?: (reason: string) => void;
  /** The principal's outbound total this connection counts towards (`maxOutboundBytesPerPrincipal`). */
  principalOutbound?: { ledger: PrincipalOutbound; principal: string };
  /** Requests served at once; later ones wait unread (RequestIntake). Default `DEFAULT_LIMITS.maxInflightRequestsPerConnection`. */
  maxInflightRequests?: number;
  /** Shared by the connections of a listener: how much of their input is decoded per event-loop turn. Default one of its own. */
  inboundTurns?: InboundTurns;
}

type OnMessage = NonNullable<Transport['onmessage']>;

/** Frame bytes decoded in one event-loop turn (InboundTurns): many small messages, or one large one. */
export const FRAME_BYTES_PER_TURN = 64 * 1024;

/** `ws` sends a Buffer as a binary frame unless told otherwise; MCP messages are text frames. One object for every send. */
const TEXT_FRAME = Object.freeze({ binary: false });

export class WebSocketServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Close code and reason the next `close()` sends (the listener sets 1001 on shutdown). */
  closeCode = WS_CLOSE_NORMAL;
  closeReason = '';

  private started = false;
  private closedValue = false;
  /** Messages that arrived before `start()`: delivered by it, in order. */
  private readonly early: JSONRPCMessage[] = [];
  private readonly socketClosed: Promise<void>;
  /** Past the budget the socket is paused, then closed 1008 if it does not drain. */
  private readonly budget: OutboundBudget;
  private readonly share: OutboundShare | undefined;
  private readonly shapeLimits: JsonShapeLimits;
  /** Requests between arrival and the SDK: bounded in flight, not run once the budget is exceeded. */
  private readonly intake: RequestIntake;
  /** Ids of the server's own requests awaiting the client's answer. */
  private readonly askedClient = new Set<string | number>();
  /** Frames decoded a turn's worth at a time, so one connection's large frames do not hold the loop. */
  private readonly turns: InboundQueue<{ data: RawData; isBinary: boolean }>;

  constructor(
    readonly socket: WebSocket,
    private readonly options: WebSocketServerTransportOptions = {},
  ) {
    const outbound = options.principalOutbound;
    this.share = outbound?.ledger.share(outbound.principal, () => this.budget.check());
    this.shapeLimits = frameShapeLimits(options);
    const maxOutbound = options.maxOutboundBufferBytes ?? DEFAULT_LIMITS.maxOutboundBufferBytes;
    const maxInflight = options.maxInflightRequests ?? DEFAULT_LIMITS.maxInflightRequestsPerConnection;
    this.intake = new RequestIntake({
      maxInflight,
      deliver: (message) => (this.started ? this.deliver(message) : this.early.push(message)),
      refuse: (id, why) => {
        const error =
          why === 'halted'
            ? limitExceededError('maxOutboundBufferBytes', maxOutbound, 'the client does not read its answers; this request was not run')
            : limitExceededError('maxInflightRequestsPerConnection', maxInflight, 'too many requests in flight on this connection');
        this.reject(error.code, error.message, id, error.data);
      },
      // Not while the server waits for an answer of the client's: a running request may need it to finish.
      pause: () => (this.askedClient.size === 0 ? socket.pause() : undefined),
      resume: () => this.resumeReading(),
    });
    this.turns = (options.inboundTurns ?? new InboundTurns(FRAME_BYTES_PER_TURN)).connection({
      handle: ({ data, isBinary }) => this.receive(data, isBinary),
      pause: () => socket.pause(),
      resume: () => this.resumeReading(),
    });
    this.budget = new OutboundBudget({
      maxBytes: maxOutbound,
      graceMs: options.outboundGraceMs ?? DEFAULT_LIMITS.outboundGraceMs,
      queued: () => socket.bufferedAmount,
      // Frames ws already received are still emitted after a pause: the intake answers them instead of running them.
      pause: () => (socket.pause(), this.intake.halt()),
      // Reading resumes once nothing waits in the intake.
      resume: () => (this.intake.unhalt(), this.resumeReading()),
      close: (reason) => {
        options.onOverBudget?.(reason);
        this.closeCode = WS_CLOSE_POLICY_VIOLATION;
        this.closeReason = reason;
        void this.close();
      },
      share: () => this.share,
    });
    this.socketClosed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.once('close', () => this.budget.dispose());
    socket.on('message', (data, isBinary) => this.turns.push({ data, isBinary }, rawLength(data)));
    socket.on('error', (error) => this.onerror?.(error));
    socket.once('close', () => this.markClosed());
  }

  /** True once the socket is closing or closed (or `close()` was called). */
  get closed(): boolean {
    return this.closedValue;
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- SDK Transport port: a second start must reject, not throw synchronously
  async start(): Promise<void> {
    if (this.started) throw new Error('WebSocketServerTransport already started');
    this.started = true;
    for (const message of this.early.splice(0)) this.deliver(message);
  }

  /** Sends one message as one text frame; resolves once ws has written it, rejects when the socket is closed. */
  send(message: JSONRPCMessage): Promise<void> {
    const asked = requestIdOf(message);
    if (asked !== undefined) {
      // A request of the server's (2025-11-25 connections): the connection must be read for its answer.
      this.askedClient.add(asked);
      this.resumeReading();
    }
    const sent = this.sendSerialized(JSON.stringify(message));
    // After the budget saw this answer: a waiting request runs only if the connection is still under it.
    this.intake.sent(message);
    return sent;
  }

  /** Sends one message already serialised as JSON text (a listen frame fanned out to many streams). */
  sendSerialized(text: string): Promise<void> {
    if (this.closedValue || this.socket.readyState !== WebSocket.OPEN) {
      return Promise.reject(new Error('WebSocket is closed'));
    }
    // Never queue past twice the budget for a client that is not reading.
    if (!this.budget.admit(Buffer.byteLength(text))) return Promise.reject(new Error('WebSocket closed: the client is not reading'));
    return new Promise((resolve, reject) => {
      this.socket.send(text, (error) => (error ? reject(error) : resolve()));
      this.budget.check();
    });
  }

  /**
   * Writes one message already encoded as UTF-8 JSON as one text frame, for
   * the listen fan-out (one change to many streams): no promise and no
   * closure per write, the buffer handed to `ws` as is (it may be shared by
   * other sockets: a server frame is not masked). `written` is called once
   * when ws has written it (with the error if the write failed; a failed write
   * also closes the socket, which ends its streams). Returns false when the
   * message was not queued (the socket is closed, or the budget closed it):
   * `written` is then never called.
   */
  sendBytes(json: Buffer, written: (error?: Error) => void): boolean {
    if (this.closedValue || this.socket.readyState !== WebSocket.OPEN) return false;
    // Never queue past twice the budget for a client that is not reading.
    if (!this.budget.admit(json.length)) return false;
    this.socket.send(json, TEXT_FRAME, written);
    this.budget.check();
    return true;
  }

  /** Closes the socket with `closeCode`, waits (bounded) for the close handshake, then fires `onclose` once. */
  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CONNECTING || this.socket.readyState === WebSocket.OPEN) {
      this.socket.close(this.closeCode, this.closeReason);
    }
    this.markClosed();
    if (this.socket.readyState !== WebSocket.CLOSED) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), this.options.closeTimeoutMs ?? 2_000);
        timer.unref();
      });
      if ((await Promise.race([this.socketClosed, timeout])) === 'timeout') this.socket.terminate();
      clearTimeout(timer);
    }
  }

  /** Reads the socket again unless the outbound budget, the intake or the turns still hold it. */
  private resumeReading(): void {
    if (this.budget.over || this.turns.waitingFrames) return;
    if (!this.intake.backlogged || this.askedClient.size > 0) this.socket.resume();
  }

  private markClosed(): void {
    if (this.closedValue) return;
    this.closedValue = true;
    this.intake.close();
    this.turns.close();
    this.onclose?.();
  }

  private receive(data: RawData, isBinary: boolean): void {
    if (this.closedValue) return;
    if (isBinary) {
      this.reject(-32600, 'Invalid Request: binary frames are not accepted; send one JSON-RPC message per text frame');
      return;
    }
    // Parse errors, batches, malformed messages and too-deep nesting get their JSON-RPC error (frames.ts).
    const decoded = decodeFrame(rawText(data), this.shapeLimits);
    if (!decoded.ok) {
      this.reject(decoded.error.code, decoded.error.message, decoded.id, decoded.error.data);
      return;
    }
    const answered = responseIdOf(decoded.message);
    if (answered !== undefined) this.askedClient.delete(answered);
    this.intake.receive(decoded.message);
  }

  private deliver(message: JSONRPCMessage): void {
    try {
      (this.onmessage as OnMessage | undefined)?.(message);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private reject(code: number, message: string, id: string | number | null = null, data?: unknown): void {
    // JSON-RPC 2.0 §5 answers a request whose id could not be read with `id: null`. Not through `send`: an answer the SDK did not give frees no place in the intake.
    this.sendSerialized(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined ? { data } : {}) } })).catch(
      (error: unknown) => this.onerror?.(error instanceof Error ? error : new Error(String(error))),
    );
  }
}

function rawLength(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, part) => sum + part.length, 0);
  return data instanceof ArrayBuffer ? data.byteLength : data.length;
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}
