/**
 * The bytes of one SSE listen stream on their way to the client.
 * Two carriers, one contract:
 *
 * - {@link NodeSseOutput}: served by a Node listener, frames are written
 *   straight to the `ServerResponse`. A change watched by 1,000 streams used
 *   to cross a web `ReadableStream` 1,000 times (enqueue, a read promise, the
 *   adapter's loop) before reaching the same `res.write`; the fan-out profile
 *   put ~10% of the server's busy time there.
 * - {@link WebSseOutput}: a mounted web-standard `fetch` caller has no Node
 *   response; the frames go through the `ReadableStream` it returns.
 *
 * Either way "queued" means what it always meant for the outbound budget
 * and the backlog bound: frames the client's connection has not
 * taken yet — held here while the response refuses more (`res.write` returned
 * false until `drain`; for the web stream, chunks its reader has not pulled).
 * A failed stream drops what is still queued, and the response ends.
 *
 * Writes are not coalesced here: Node corks a response's socket from its
 * first write in a tick until the next tick, so all of a stream's frames of
 * one tick already leave in one `writev`. Only frames held back by a full
 * connection are joined into one write when it drains.
 */
import type { ServerResponse } from 'node:http';

export interface SseOutput {
  /** The body of the HTTP response that carries the stream. */
  readonly body: ReadableStream<Uint8Array>;
  /** Writes (or queues) `text`, `bytes` long in UTF-8. */
  write(text: string, bytes: number): void;
  /** Bytes queued, not yet taken by the connection. */
  queuedBytes(): number;
  /** Frames queued, not yet taken by the connection (each `write` is one). */
  queuedFrames(): number;
  /** Ends the stream after everything written so far. */
  close(): void;
  /** Ends the stream at once: what is still queued is dropped. */
  fail(reason: string): void;
}

const encoder = new TextEncoder();

/** The stream as a web `ReadableStream` (a mounted `fetch` entry). */
export class WebSseOutput implements SseOutput {
  readonly body: ReadableStream<Uint8Array>;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  /** The sizes of the chunks still queued, oldest first: the reader takes them in order. */
  private readonly queuedSizes: number[] = [];
  private queuedTotal = 0;
  private ended = false;

  constructor(onCancel: () => void) {
    // The queue is sized in bytes: desiredSize = -bytes not yet pulled by the reader.
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.controller = controller;
        },
        cancel: () => {
          this.ended = true;
          onCancel();
        },
      },
      { highWaterMark: 0, size: (chunk: Uint8Array) => chunk.byteLength },
    );
  }

  write(text: string): void {
    if (this.ended) return;
    const bytes = encoder.encode(text);
    try {
      this.controller.enqueue(bytes);
    } catch {
      this.ended = true;
      return;
    }
    this.queuedSizes.push(bytes.byteLength);
    this.queuedTotal += bytes.byteLength;
  }

  queuedBytes(): number {
    return this.ended ? 0 : -(this.controller.desiredSize ?? 0);
  }

  queuedFrames(): number {
    const queued = this.queuedBytes();
    while (this.queuedTotal > queued && this.queuedSizes.length > 0) this.queuedTotal -= this.queuedSizes.shift()!;
    return this.queuedSizes.length;
  }

  close(): void {
    if (this.ended) return;
    this.ended = true;
    try {
      this.controller.close();
    } catch {
      // already closed by the consumer
    }
  }

  fail(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    try {
      this.controller.error(new Error(reason));
    } catch {
      // already closed
    }
  }
}

/**
 * The stream written straight to a Node `ServerResponse`.
 *
 * The response's head and end stay with the SDK's Node adapter
 * (`toNodeHandler`), exactly as for a web stream: it writes the status and
 * headers of the returned `Response`, then reads its `body`, which never
 * carries a byte here — its first `pull` says the head is out, so frames
 * may follow on `res`; closing it (or failing it) makes the adapter end the
 * response after the last frame.
 */
export class NodeSseOutput implements SseOutput {
  readonly body: ReadableStream<Uint8Array>;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  /** Frames held back: before the head is out, or while the connection is full. */
  private pending: string[] = [];
  private pendingBytes = 0;
  private headSent = false;
  /** `res.write` returned false: hold frames until `drain`. */
  private blocked = false;
  private closing = false;
  private ended = false;

  constructor(
    private readonly res: ServerResponse,
    onCancel: () => void,
  ) {
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.controller = controller;
        },
        pull: () => {
          // The adapter wrote the head and now waits on the body: frames may go to `res`.
          if (this.headSent) return;
          this.headSent = true;
          this.flush();
          if (this.closing) this.finish();
        },
        cancel: () => {
          this.ended = true;
          onCancel();
        },
      },
      { highWaterMark: 0 },
    );
    res.on('drain', () => {
      this.blocked = false;
      this.flush();
    });
    // The client went away. Told by the response itself: the web Request's abort signal, which the adapter
    // aborts on the same event, did not reach every stream (1000-listener runs left 1–4% of them open).
    res.on('close', () => {
      if (this.ended) return;
      this.ended = true;
      this.pending = [];
      this.pendingBytes = 0;
      onCancel();
    });
  }

  write(text: string, bytes: number): void {
    if (this.ended || this.closing) return;
    if (this.headSent && !this.blocked && this.pending.length === 0) {
      this.blocked = !this.res.write(text);
      return;
    }
    this.pending.push(text);
    this.pendingBytes += bytes;
  }

  queuedBytes(): number {
    return this.ended ? 0 : this.pendingBytes;
  }

  queuedFrames(): number {
    return this.ended ? 0 : this.pending.length;
  }

  close(): void {
    if (this.ended || this.closing) return;
    this.closing = true;
    if (this.headSent) this.finish();
  }

  fail(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.pending = [];
    this.pendingBytes = 0;
    try {
      this.controller.error(new Error(reason));
    } catch {
      // already closed
    }
  }

  /** Writes what is held back, in one write (the connection took everything before it). */
  private flush(): void {
    if (this.ended || !this.headSent || this.blocked || this.pending.length === 0) return;
    this.writeHeld();
  }

  private writeHeld(): void {
    const text = this.pending.length === 1 ? this.pending[0]! : this.pending.join('');
    this.pending = [];
    this.pendingBytes = 0;
    this.blocked = !this.res.write(text);
  }

  /** The last frames go whether or not the connection is full (as a closed web stream still yields its queue). */
  private finish(): void {
    if (this.ended) return;
    if (this.pending.length > 0) this.writeHeld();
    this.ended = true;
    try {
      this.controller.close();
    } catch {
      // already closed by the consumer
    }
  }
}
