/**
 * One open `subscriptions/listen` stream, whatever carries it (an SSE
 * response, a stdio or WebSocket connection). It guarantees the base rules
 * of a listen stream: the acknowledgement goes first, every message carries
 * `_meta["io.modelcontextprotocol/subscriptionId"]` (T-31, D-07), and a
 * consumer that stops reading is cut off instead of holding memory (bounded
 * backlog).
 */
import { SERVER_INFO_META_KEY, SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import type { JsonObject } from '../../machines/task/index.js';
import { ErrorCode } from '../core/errors.js';
import { publish } from '../core/diagnostics.js';

export type RequestId = string | number;

/** The lists whose changes a listen can ask for (§4.6): each has a `<kind>ListChanged` filter flag. */
export type ListKind = 'tools' | 'prompts' | 'resources';
export const LIST_KINDS: readonly ListKind[] = ['tools', 'prompts', 'resources'];

/** What a transport provides to carry one listen stream. */
export interface ListenSink {
  /** Writes one JSON-RPC message on the stream. */
  send(message: JsonObject): void;
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

export class ListenSubscription {
  readonly id: RequestId;
  readonly principal: string;
  /** Task ids still reported on this stream (a terminal task leaves the set after its last frame). */
  readonly taskIds = new Set<string>();
  /** The list-changed kinds this stream asked for and was granted. */
  readonly lists = new Set<ListKind>();
  /** The resource URIs this stream watches. */
  readonly resourceUris = new Set<string>();
  private acknowledged = false;
  private readonly early: Array<{ jsonrpc: string; method: string; params: JsonObject }> = [];
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
    this.write({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { ...honoured } } });
    for (const message of this.early.splice(0)) this.write(message);
  }

  /** Sends a notification on the stream, stamped with the subscription id. */
  notify(method: string, params: JsonObject): void {
    if (this.closedValue) return;
    const message = { jsonrpc: '2.0', method, params };
    if (!this.acknowledged) {
      this.early.push(message);
      if (this.early.length > this.options.maxBacklog) this.overflow();
      return;
    }
    this.write(message);
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

  private write(message: { jsonrpc: string; method: string; params: JsonObject }): void {
    const params = message.params;
    const meta = (params._meta as JsonObject | undefined) ?? {};
    this.options.sink.send({ ...message, params: { ...params, _meta: { ...meta, [SUBSCRIPTION_ID_META_KEY]: this.id } } });
    publish('taskvisor:listen.frame', () => ({ method: message.method }));
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
