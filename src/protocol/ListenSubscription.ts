/**
 * One open `subscriptions/listen` stream, whatever carries it (an SSE
 * response, a stdio or WebSocket connection). It guarantees the base rules
 * of a listen stream: the acknowledgement goes first, every message carries
 * `_meta["io.modelcontextprotocol/subscriptionId"]` (T-31, D-07), and a
 * consumer that stops reading is cut off instead of holding memory (bounded
 * backlog). It is the runtime bus's subscriber for its stream: the changes
 * it watches arrive as bus changes and leave as listen frames.
 */
import { SERVER_INFO_META_KEY, SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import type { JsonObject } from '../core/json.js';
import { ErrorCode } from '../core/errors.js';
import { publish } from '../core/diagnostics.js';
import type { Change, ChangeSubscriber, ListKind } from '../runtime/ChangeBus.js';
import { changeFrame, ListenFrame } from './ListenFrame.js';

export type RequestId = string | number;

/** What a transport provides to carry one listen stream. */
export interface ListenSink {
  /**
   * Writes one JSON-RPC message on the stream: a message object, or its JSON
   * text already serialised (a change fanned out to many streams is
   * serialised once, see `ListenFrame`).
   */
  send(message: JsonObject | string): void;
  /**
   * Writes one fanned-out notification as its UTF-8 JSON bytes, where the
   * transport writes bytes (WebSocket): the frame's buffer for this stream's
   * id is built once per id, not per stream (see `ListenFrame.bytesFor`); it
   * is shared, so it must be written as is. Without it, `send` gets the text.
   */
  sendBytes?(json: Buffer): void;
  /** Messages (or bytes, consistently) written but not yet taken by the consumer. */
  backlog(): number;
  /** Ends the stream; `send` is not called afterwards. */
  end(): void;
}

/** The notification types a listen asked for and the server honours (§1.9, §4.6). */
export interface ListenFilter {
  toolsListChanged?: boolean;
  promptsListChanged?: boolean;
  resourcesListChanged?: boolean;
  /** Resource URIs whose `notifications/resources/updated` the stream wants (§4.6). */
  resourceSubscriptions?: string[];
  /** Task ids accepted for this stream: the caller's own, existing tasks only (T-10, D-11). */
  taskIds?: string[];
}

export interface ListenSubscriptionOptions {
  id: RequestId;
  principal: string;
  sink: ListenSink;
  /** Backlog above which the stream is closed as too slow. */
  maxBacklog: number;
  serverInfo: { name: string; version: string };
  onClosed: (subscription: ListenSubscription) => void;
}

export class ListenSubscription implements ChangeSubscriber {
  readonly id: RequestId;
  readonly principal: string;
  /** Task ids still reported on this stream (a terminal task leaves the set after its last frame). */
  readonly taskIds = new Set<string>();
  /** The list-changed kinds this stream asked for and was granted. */
  readonly lists = new Set<ListKind>();
  /** The resource URIs this stream watches. */
  readonly resourceUris = new Set<string>();
  private acknowledged = false;
  private readonly early: ListenFrame[] = [];
  /** Task ids a change arrived for while the stream was opening (until `endOpening`). */
  private changedWhileOpening: Set<string> | undefined = new Set();
  private closedValue = false;

  constructor(private readonly options: ListenSubscriptionOptions) {
    this.id = options.id;
    this.principal = options.principal;
  }

  get closed(): boolean {
    return this.closedValue;
  }

  /** Sends the acknowledgement with the honoured filter, then whatever was queued meanwhile (T-31: ack first). */
  acknowledge(honoured: ListenFilter): void {
    if (this.closedValue || this.acknowledged) return;
    this.acknowledged = true;
    this.write(new ListenFrame('notifications/subscriptions/acknowledged', { notifications: { ...honoured } }));
    for (const frame of this.early.splice(0)) this.write(frame);
  }

  /**
   * The task ids a change arrived for while the stream was opening, and stops
   * collecting them: their current state, read before, is older than what
   * went out (or waits behind the acknowledgement).
   */
  endOpening(): ReadonlySet<string> {
    const changed = this.changedWhileOpening ?? new Set<string>();
    this.changedWhileOpening = undefined;
    return changed;
  }

  /** A change this stream watches, from the runtime's bus. */
  receive(change: Change): void {
    if (change.kind === 'task') this.changedWhileOpening?.add(change.record.taskId);
    this.notifyFrame(changeFrame(change));
  }

  /** Sends a notification on the stream, stamped with the subscription id. */
  notify(method: string, params: JsonObject): void {
    this.notifyFrame(new ListenFrame(method, params));
  }

  /**
   * Sends a notification serialised once for many streams (the bus's fan-out),
   * stamped with this stream's own subscription id (T-31, D-07).
   */
  notifyFrame(frame: ListenFrame): void {
    if (this.closedValue) return;
    // T-31: nothing before the acknowledgement; queued frames count against the backlog bound.
    if (!this.acknowledged) {
      this.early.push(frame);
      if (this.early.length > this.options.maxBacklog) this.overflow();
      return;
    }
    this.write(frame);
  }

  /**
   * Ends the stream. Graceful: answers the listen request with its result
   * (§1.9); otherwise with `error` when given, or silently (the client went away).
   */
  close(how: { graceful: true } | { graceful: false; error?: { code: number; message: string } } = { graceful: true }): void {
    if (this.closedValue) return;
    if (how.graceful) {
      this.options.sink.send({
        jsonrpc: '2.0',
        id: this.id,
        result: {
          resultType: 'complete',
          _meta: { [SUBSCRIPTION_ID_META_KEY]: this.id, [SERVER_INFO_META_KEY]: this.options.serverInfo },
        },
      });
    } else if (how.error) {
      this.options.sink.send({ jsonrpc: '2.0', id: this.id, error: how.error });
    }
    this.closedValue = true;
    this.early.length = 0;
    this.options.sink.end();
    this.options.onClosed(this);
  }

  private write(frame: ListenFrame): void {
    // T-31, D-07: the shared text with this stream's own subscription id spliced in.
    const sink = this.options.sink;
    if (sink.sendBytes) sink.sendBytes(frame.bytesFor(this.id));
    else sink.send(frame.textFor(this.id));
    publish('taskvisor:listen.frame', () => ({ method: frame.method }));
    if (this.options.sink.backlog() > this.options.maxBacklog) this.overflow();
  }

  private overflow(): void {
    publish('taskvisor:backpressure.close', () => ({ stream: 'listen' }));
    this.close({
      graceful: false,
      error: {
        code: ErrorCode.InternalError,
        message: `Subscription closed: the client is not reading its listen stream (more than ${this.options.maxBacklog} messages pending)`,
      },
    });
  }
}
