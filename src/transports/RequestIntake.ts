/**
 * The requests of one connection (WebSocket) between their arrival and the
 * SDK. Pausing a socket stops it being read, but frames the `ws` library has
 * already received are still emitted, and each is dispatched at once: a
 * client sending large requests and never reading the answers had every one
 * of them run after its connection went over its outbound budget (the
 * bystander of such an attack waited up to 12 s). Here:
 *
 * - At most `maxInflight` requests are being served at once
 *   (limits: maxInflightRequestsPerConnection); later ones wait here in
 *   arrival order, and the connection is not read until one is answered.
 *   Listens are not counted (maxListenStreamsPerPrincipal bounds them; each
 *   holds its id until the stream ends). Other messages never wait: an answer
 *   to the server's own request may be what a running request waits for. For
 *   the same reason the connection may have to be read while requests wait
 *   (see `pause`): then at most `maxInflight` wait, and one more is refused.
 * - Once the connection is halted (over its outbound budget) requests that
 *   arrive or wait are not run: each is answered with a limit error. Other
 *   messages (notifications, answers to the server's own requests) still pass.
 * - Once it closes, whatever waits is dropped.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import type { RequestId } from '../protocol/ListenSubscription.js';
import { requestIdOf, responseIdOf } from './InflightRequests.js';

export interface RequestIntakeOptions {
  maxInflight: number;
  /** Hands a message on to the SDK side. */
  deliver(message: JSONRPCMessage): void;
  /** Answers a request that will not be run: the connection is halted (over its outbound budget), or too many wait. */
  refuse(id: RequestId, why: 'halted' | 'full'): void;
  /** Stop reading the connection if it may be (requests are waiting). */
  pause(): void;
  /** Read it again: nothing waits. */
  resume(): void;
}

const LISTEN = 'subscriptions/listen';

export class RequestIntake {
  /** Requests being served, by id: one entry per delivery (a duplicate id is delivered, then refused downstream). */
  private readonly served = new Map<RequestId, boolean[]>();
  /** How many of those count against `maxInflight` (not listens). */
  private counted = 0;
  private readonly waiting: JSONRPCMessage[] = [];
  private haltedValue = false;
  private closed = false;

  constructor(private readonly options: RequestIntakeOptions) {}

  /** True while messages wait here (the connection should not be read). */
  get backlogged(): boolean {
    return this.waiting.length > 0;
  }

  /** A message from the client. */
  receive(message: JSONRPCMessage): void {
    if (this.closed) return;
    const cancelled = cancelledRequestId(message);
    if (cancelled !== undefined) this.cancel(cancelled);
    const id = requestIdOf(message);
    if (id === undefined) return this.deliver(message);
    if (this.haltedValue) return this.options.refuse(id, 'halted');
    if (this.waiting.length > 0 || (!isListen(message) && this.counted >= this.options.maxInflight)) {
      if (this.waiting.length >= this.options.maxInflight) return this.options.refuse(id, 'full');
      this.waiting.push(message);
      this.options.pause();
      return;
    }
    this.deliver(message);
  }

  /** A message to the client: an answer frees its request's place. */
  sent(message: JSONRPCMessage): void {
    const id = responseIdOf(message);
    if (id === undefined || !this.release(id)) return;
    this.drain();
  }

  /** Over the outbound budget: waiting requests are answered with a limit error, and so is every new one until `resume`. */
  halt(): void {
    if (this.closed || this.haltedValue) return;
    this.haltedValue = true;
    for (const message of this.waiting.splice(0)) this.options.refuse(requestIdOf(message)!, 'halted');
  }

  /** Back under the budget: requests are served again. */
  unhalt(): void {
    this.haltedValue = false;
    this.drain();
  }

  /** The connection is gone: nothing waiting is run or answered. */
  close(): void {
    this.closed = true;
    this.waiting.length = 0;
    this.served.clear();
  }

  private deliver(message: JSONRPCMessage): void {
    const id = requestIdOf(message);
    if (id !== undefined) {
      const counts = !isListen(message);
      const entry = this.served.get(id);
      if (entry) entry.push(counts);
      else this.served.set(id, [counts]);
      if (counts) this.counted += 1;
    }
    this.options.deliver(message);
  }

  private drain(): void {
    while (!this.closed && !this.haltedValue && this.waiting.length > 0) {
      const next = this.waiting[0]!;
      if (!isListen(next) && this.counted >= this.options.maxInflight) return;
      this.waiting.shift();
      this.deliver(next);
    }
    if (!this.closed && this.waiting.length === 0) this.options.resume();
  }

  /** Frees one place of `id`; false when none was held. */
  private release(id: RequestId): boolean {
    const entry = this.served.get(id);
    if (!entry) return false;
    // The latest delivery first: a duplicate id is refused at once, while the first one still runs.
    if (entry.pop()) this.counted -= 1;
    if (entry.length === 0) this.served.delete(id);
    return true;
  }

  /** A cancelled request may never be answered (MCP cancellation): a waiting one is never run, a served one frees its place. */
  private cancel(id: RequestId): void {
    const waiting = this.waiting.findIndex((message) => requestIdOf(message) === id);
    if (waiting >= 0) this.waiting.splice(waiting, 1);
    else if (this.served.get(id)?.[0] === true && this.release(id)) this.drain();
  }
}

function isListen(message: JSONRPCMessage): boolean {
  return (message as { method?: unknown }).method === LISTEN;
}

/** The request id a `notifications/cancelled` names, if `message` is one. */
function cancelledRequestId(message: JSONRPCMessage): RequestId | undefined {
  const candidate = message as { method?: unknown; params?: { requestId?: unknown } };
  if (candidate.method !== 'notifications/cancelled') return undefined;
  const id = candidate.params?.requestId;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}
