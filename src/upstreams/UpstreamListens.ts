/**
 * Our `subscriptions/listen` streams on one upstream connection (declaring
 * the tasks extension, T-30): each hands its `notifications/tasks` frames to
 * its listener, and says when it ended. Closing one drops the stream: on HTTP
 * by aborting its response stream, elsewhere with `notifications/cancelled`
 * (§4.6).
 */
import type { Transport } from '@modelcontextprotocol/client';
import type { JsonObject } from '../core/json.js';
import { tasksCapability } from '../core/tasksExtension.js';
import { UPSTREAM_CLIENT_INFO } from './RawRequests.js';

const SUBSCRIPTION_ID_META_KEY = 'io.modelcontextprotocol/subscriptionId';

export class UpstreamListens {
  /** Open streams by request id: their frames and their end. */
  private readonly streams = new Map<string, { frame(params: JsonObject): void; ended(): void }>();

  /** Open streams. */
  get size(): number {
    return this.streams.size;
  }

  /** Opens stream `id` for `taskIds` on `transport`; the returned function closes it. */
  open(
    transport: Transport,
    id: string,
    protocolVersion: string,
    taskIds: string[],
    frame: (params: JsonObject) => void,
    ended: () => void,
  ): () => void {
    const abort = new AbortController();
    this.streams.set(id, { frame, ended });
    const params = {
      notifications: { taskIds },
      _meta: {
        'io.modelcontextprotocol/protocolVersion': protocolVersion,
        'io.modelcontextprotocol/clientInfo': UPSTREAM_CLIENT_INFO,
        'io.modelcontextprotocol/clientCapabilities': tasksCapability(),
      },
    };
    const end = () => {
      if (this.streams.delete(id)) ended();
    };
    transport.send({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params }, { requestSignal: abort.signal }).catch(end);
    return () => {
      if (!this.streams.delete(id)) return;
      if ((transport as { hasPerRequestStream?: boolean }).hasPerRequestStream) abort.abort();
      else
        void transport
          .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'no longer followed' } })
          .catch(() => {});
    };
  }

  /**
   * Takes an inbound message that belongs to one of the streams: a
   * notification stamped with its subscription id (a `notifications/tasks`
   * frame goes to its listener), or the answer that ends it. False for any other.
   */
  take(message: Record<string, unknown>, id: unknown): boolean {
    const subscription = ((message.params as JsonObject | undefined)?._meta as JsonObject | undefined)?.[SUBSCRIPTION_ID_META_KEY];
    if (typeof message.method === 'string' && typeof subscription === 'string' && this.streams.has(subscription)) {
      if (message.method === 'notifications/tasks') this.streams.get(subscription)!.frame(message.params as JsonObject);
      return true;
    }
    if (typeof id === 'string' && this.streams.has(id)) {
      const stream = this.streams.get(id)!;
      this.streams.delete(id);
      stream.ended();
      return true;
    }
    return false;
  }

  /** Ends every stream: the connection is gone. */
  endAll(): void {
    for (const [id, stream] of this.streams) {
      this.streams.delete(id);
      stream.ended();
    }
  }
}
