/**
 * The JSON-RPC request ids in flight on one connection. JSON-RPC
 * lets a client pick ids, and a connection transport (WebSocket, stdio)
 * matches answers to requests by id alone: two requests with one id would
 * both run and both answers would carry it, so neither can be told apart.
 * The second is refused with -32600 instead; the id is free again once its
 * answer was sent or the client cancelled it.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { quoteClientValue } from '../core/clientText.js';
import type { RequestId } from '../protocol/ListenSubscription.js';

export class InflightRequests {
  private readonly ids = new Set<RequestId>();

  /** Claims `id`; false when a request with it is already in flight. */
  claim(id: RequestId): boolean {
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    return true;
  }

  release(id: RequestId): void {
    this.ids.delete(id);
  }

  get size(): number {
    return this.ids.size;
  }

  clear(): void {
    this.ids.clear();
  }

  /** The answer refusing a second request with `id`. */
  static duplicateAnswer(id: RequestId): JSONRPCMessage {
    return {
      jsonrpc: '2.0',
      id,
      error: {
        code: -32600,
        message: `Invalid Request: a request with id ${quoteClientValue(id)} is already in flight on this connection`,
      },
    };
  }
}

/** The id of `message` when it is a request (a method and an id), else undefined. */
export function requestIdOf(message: JSONRPCMessage): RequestId | undefined {
  const candidate = message as { method?: unknown; id?: unknown };
  if (typeof candidate.method !== 'string') return undefined;
  return typeof candidate.id === 'string' || typeof candidate.id === 'number' ? candidate.id : undefined;
}

/** The id `message` answers when it is a response (result or error, no method), else undefined. */
export function responseIdOf(message: JSONRPCMessage): RequestId | undefined {
  const candidate = message as { method?: unknown; id?: unknown; result?: unknown; error?: unknown };
  if (candidate.method !== undefined || !('result' in candidate || 'error' in candidate)) return undefined;
  return typeof candidate.id === 'string' || typeof candidate.id === 'number' ? candidate.id : undefined;
}
