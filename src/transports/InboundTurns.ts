/**
 * How much connection input (WebSocket frames) is decoded and dispatched in
 * one turn of the event loop, over all the connections of a listener. A
 * socket read can complete several large frames at once. Decoded, checked and
 * dispatched where they are read, ten clients sending 1 MiB requests keep the
 * loop busy for over 100 ms a turn, and another client's call, which needs a
 * few turns, waits close to a second.
 *
 * Here the connections share `bytesPerTurn` of frames a turn (many small
 * frames, or at least one large one), taken round-robin. A frame past it
 * waits for a later turn, and its connection is not read meanwhile, so what
 * waits is at most what was already received; everything else the server
 * does (HTTP requests, timers) runs between turns.
 */
export interface InboundQueueOptions<T> {
  /** Decodes and dispatches one frame. */
  handle(item: T): void;
  /** Stop reading the connection: its frames wait for a later turn. */
  pause(): void;
  /** Nothing of it waits any more. */
  resume(): void;
}

/** What the turns see of a connection's queue. */
interface ServedQueue {
  /** Handles the next waiting frame; true when more wait. */
  handleOne(): boolean;
}

export class InboundTurns {
  /** Bytes handled in the current turn. */
  private spent = 0;
  private turn: NodeJS.Immediate | undefined;
  /** Connections with frames waiting, in the order they are served next. */
  private readonly ready = new Set<ServedQueue>();

  constructor(private readonly bytesPerTurn: number) {}

  /** The queue of one connection. */
  connection<T>(options: InboundQueueOptions<T>): InboundQueue<T> {
    return new InboundQueue<T>(this, options);
  }

  /** @internal Whether a frame may be handled now (nothing waits and the turn has room). */
  hasRoom(): boolean {
    return this.ready.size === 0 && this.spent < this.bytesPerTurn;
  }

  /** @internal */
  spend(bytes: number): void {
    this.spent += bytes;
    // The room is a turn's: it is given back once the loop has moved on.
    this.turn ??= setImmediate(this.nextTurn);
  }

  /** @internal */
  enqueue(queue: ServedQueue): void {
    this.ready.add(queue);
    this.turn ??= setImmediate(this.nextTurn);
  }

  /** @internal */
  dequeue(queue: ServedQueue): void {
    this.ready.delete(queue);
  }

  private readonly nextTurn = (): void => {
    this.turn = undefined;
    this.spent = 0;
    while (this.ready.size > 0 && this.spent < this.bytesPerTurn) {
      const queue = this.ready.values().next().value!;
      // Round-robin: served once, it goes to the back.
      this.ready.delete(queue);
      if (queue.handleOne()) this.ready.add(queue);
    }
    if (this.ready.size > 0) this.turn ??= setImmediate(this.nextTurn);
  };
}

export class InboundQueue<T> implements ServedQueue {
  private readonly waiting: { item: T; bytes: number }[] = [];
  private paused = false;
  private closed = false;

  constructor(
    private readonly turns: InboundTurns,
    private readonly options: InboundQueueOptions<T>,
  ) {}

  /** True while frames of this connection wait for a later turn. */
  get waitingFrames(): boolean {
    return this.waiting.length > 0;
  }

  /** A frame of `bytes` arrived. */
  push(item: T, bytes: number): void {
    if (this.closed) return;
    if (this.waiting.length === 0 && this.turns.hasRoom()) {
      this.turns.spend(bytes);
      this.options.handle(item);
      return;
    }
    this.waiting.push({ item, bytes });
    if (!this.paused) {
      this.paused = true;
      this.options.pause();
    }
    this.turns.enqueue(this);
  }

  /** The connection is gone: nothing waiting is handled. */
  close(): void {
    this.closed = true;
    this.waiting.length = 0;
    this.turns.dequeue(this);
  }

  /** @internal Handles the next waiting frame; true when more wait. */
  handleOne(): boolean {
    const next = this.waiting.shift();
    if (this.closed || !next) return false;
    this.turns.spend(next.bytes);
    this.options.handle(next.item);
    if (this.waiting.length > 0 && !this.closed) return true;
    if (this.paused && !this.closed) {
      this.paused = false;
      this.options.resume();
    }
    return false;
  }
}
