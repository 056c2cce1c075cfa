/**
 * stdio as an SDK `Transport`: one JSON-RPC message per line, under the
 * runtime's limits. It replaces the SDK's `StdioServerTransport` because
 * that one skips a line that is not JSON without answering, answers nothing
 * for a malformed message, and closes the whole connection when one line
 * outgrows its buffer; here every such line gets its JSON-RPC error and the
 * connection carries on (`frames.ts`).
 *
 * A line longer than `maxLineBytes` is discarded up to its newline (never
 * held in memory) and answered with -32000 `maxRequestBodyBytes`.
 */
import type { Readable, Writable } from 'node:stream';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { DEFAULT_LIMITS, limitExceededError } from '../limits/Limits.js';
import type { JsonShapeLimits } from '../limits/jsonShape.js';
import { decodeFrame, frameShapeLimits, type FrameError } from './frames.js';
import { OutboundBudget } from './OutboundBudget.js';
import type { OutboundShare, PrincipalOutbound } from './PrincipalOutbound.js';

export interface StdioLineTransportOptions {
  stdin?: Readable;
  stdout?: Writable;
  /** Longest accepted line in bytes (without the newline). */
  maxLineBytes: number;
  /** Deepest accepted nesting of one message. */
  maxJsonDepth: number;
  /** Bytes that may wait for a client that does not read stdout (see OutboundBudget). Default `DEFAULT_LIMITS.maxOutboundBufferBytes`. */
  maxOutboundBufferBytes?: number;
  /** How long stdout may stay over that budget before the connection is closed, ms. Default `DEFAULT_LIMITS.outboundGraceMs`. */
  outboundGraceMs?: number;
  /** Told when the budget closes the connection (for the log). */
  onOverBudget?: (reason: string) => void;
  /** The principal's outbound total this connection counts towards (`maxOutboundBytesPerPrincipal`). */
  principalOutbound?: { ledger: PrincipalOutbound; principal: string };
  /** Most object keys in one message. Default `DEFAULT_LIMITS.maxJsonKeys`. */
  maxJsonKeys?: number;
  /** Most values in one message. Default `DEFAULT_LIMITS.maxJsonNodes`. */
  maxJsonNodes?: number;
  /** Most values in one `_meta`. Default `DEFAULT_LIMITS.maxMetaNodes`. */
  maxMetaNodes?: number;
}

const NEWLINE = 0x0a;

export class StdioLineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private readonly stdin: Readable;
  private readonly stdout: Writable;
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Inside a line that was already refused as too long: drop bytes until its newline. */
  private discarding = false;
  private started = false;
  private closed = false;
  /** Past the budget stdin is no longer read; still past it after the grace period, the connection is closed. */
  private readonly budget: OutboundBudget;
  private readonly share: OutboundShare | undefined;

  private readonly shapeLimits: JsonShapeLimits;

  constructor(private readonly options: StdioLineTransportOptions) {
    this.shapeLimits = frameShapeLimits(options);
    this.stdin = options.stdin ?? process.stdin;
    this.stdout = options.stdout ?? process.stdout;
    const outbound = options.principalOutbound;
    this.share = outbound?.ledger.share(outbound.principal, () => this.budget.check());
    this.budget = new OutboundBudget({
      maxBytes: options.maxOutboundBufferBytes ?? DEFAULT_LIMITS.maxOutboundBufferBytes,
      graceMs: options.outboundGraceMs ?? DEFAULT_LIMITS.outboundGraceMs,
      queued: () => (this.closed ? 0 : this.stdout.writableLength),
      pause: () => this.stdin.pause(),
      resume: () => {
        if (!this.closed) this.stdin.resume();
      },
      close: (reason) => {
        options.onOverBudget?.(reason);
        void this.close();
      },
      share: () => this.share,
    });
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- SDK Transport port: a second start must reject, not throw synchronously
  async start(): Promise<void> {
    if (this.started) throw new Error('StdioLineTransport already started');
    this.started = true;
    this.stdin.on('data', this.onData);
    this.stdin.on('error', this.onStreamError);
    this.stdin.on('end', this.onEnd);
    this.stdin.on('close', this.onEnd);
    this.stdout.on('error', this.onStreamError);
    if (this.stdin.readableEnded || this.stdin.destroyed) setImmediate(this.onEnd);
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.sendSerialized(JSON.stringify(message));
  }

  /** Writes one message already serialised as JSON text (a listen frame fanned out to many streams). */
  sendSerialized(text: string): Promise<void> {
    if (this.closed) return Promise.reject(new Error('stdio is closed'));
    // Never queue past twice the budget for a client that does not read stdout.
    if (!this.budget.admit(Buffer.byteLength(text) + 1)) return Promise.reject(new Error('stdio closed: the client is not reading'));
    // Resolves once handed to the stream (at once, or after 'drain' under backpressure), as the SDK's own
    // stdio transport does: the SDK awaits each send, so waiting for the OS write would slow every answer.
    return new Promise((resolve, reject) => {
      let settled = false;
      const settle = (error?: Error) => {
        if (settled) return;
        settled = true;
        this.stdout.off('error', settle);
        this.stdout.off('drain', onDrain);
        if (error) reject(error);
        else resolve();
      };
      const onDrain = () => settle();
      this.stdout.once('error', settle);
      if (this.stdout.write(`${text}\n`)) settle();
      else this.stdout.once('drain', onDrain);
      this.budget.check();
    });
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- SDK Transport port: close() returns a promise the SDK awaits
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.budget.dispose();
    this.stdin.off('data', this.onData);
    this.stdin.off('error', this.onStreamError);
    this.stdin.off('end', this.onEnd);
    this.stdin.off('close', this.onEnd);
    // The stdout error listener stays: a write still in flight can fail with EPIPE after the client
    // went away, and an 'error' event without a listener would crash the process.
    if (this.stdin.listenerCount('data') === 0) this.stdin.pause();
    this.chunks = [];
    this.onclose?.();
  }

  private readonly onEnd = () => void this.close();

  private readonly onStreamError = (error: Error) => {
    if (!this.closed) this.onerror?.(error);
  };

  private readonly onData = (data: Buffer | string) => {
    let chunk = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    for (;;) {
      const newline = chunk.indexOf(NEWLINE);
      if (newline === -1) {
        this.append(chunk);
        return;
      }
      this.append(chunk.subarray(0, newline));
      this.endLine();
      chunk = chunk.subarray(newline + 1);
    }
  };

  private append(part: Buffer): void {
    if (this.discarding || part.length === 0) return;
    if (this.buffered + part.length > this.options.maxLineBytes) {
      // Refused now (not at the newline) so a line without end cannot fill memory.
      this.chunks = [];
      this.buffered = 0;
      this.discarding = true;
      this.answer({ id: null, error: limitExceededError('maxRequestBodyBytes', this.options.maxLineBytes, 'the line is too long') });
      return;
    }
    this.chunks.push(part);
    this.buffered += part.length;
  }

  private endLine(): void {
    const wasDiscarding = this.discarding;
    const text = Buffer.concat(this.chunks, this.buffered).toString('utf8').replace(/\r$/, '');
    this.chunks = [];
    this.buffered = 0;
    this.discarding = false;
    if (wasDiscarding || text.trim() === '') return;
    const decoded = decodeFrame(text, this.shapeLimits);
    if (!decoded.ok) return this.answer(decoded);
    try {
      this.onmessage?.(decoded.message);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private answer({ id, error }: FrameError): void {
    // Cast: JSON-RPC 2.0 §5 answers a frame whose id could not be read with `id: null`; the SDK's JSONRPCMessage has no such response.
    this.send({ jsonrpc: '2.0', id, error } as JSONRPCMessage).catch((failure: unknown) =>
      this.onerror?.(failure instanceof Error ? failure : new Error(String(failure))),
    );
  }
}
