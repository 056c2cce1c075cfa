/**
 * The outbound side of the HTTP/1.1 connections of one entry: every reply
 * (JSON, SSE, the fast lane's, a 2025-11-25 session's) waits on its
 * connection until the client reads it, so a client that asks and never
 * reads would otherwise pin the server's memory, one reply per request.
 *
 * - Pipelining: a client may send many requests without waiting, and Node
 *   parses them ahead of their answers. At most `maxPipelinedRequests` of a
 *   connection are served at once; one more parsed stops the connection from
 *   being read, and it waits, unserved, until an earlier reply has gone out.
 *   The last one waiting is started with reading resumed, since the rest of
 *   its body may still be on the wire.
 * - Budget: the bytes queued for the connection (its socket's buffer, the
 *   replies waiting behind the one on the wire, SSE frames held back) count
 *   against `maxOutboundBufferBytes`, and towards its principal's
 *   `maxOutboundBytesPerPrincipal` (OutboundBudget, PrincipalOutbound):
 *   past either, the connection is no longer read; still past it after
 *   `outboundGraceMs`, it is closed, logged and counted
 *   (`taskvisor_backpressure_closes_total{stream="http"}`).
 *
 * A reply is produced without telling anyone, so a connection with replies
 * in progress is re-measured on the principal ledger's tick, and whenever a
 * request starts or a reply has gone out.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { publish } from '../core/diagnostics.js';
import type { Limits } from '../limits/Limits.js';
import type { Logger } from '../runtime/Logger.js';
import { OutboundBudget } from './OutboundBudget.js';
import type { OutboundShare, PrincipalOutbound } from './PrincipalOutbound.js';

type ConnectionLimits = Pick<Limits, 'maxOutboundBufferBytes' | 'outboundGraceMs' | 'maxPipelinedRequests'>;

interface Waiting {
  res: ServerResponse;
  serve: () => void;
}

/** The connections an HTTP entry serves, found by their socket. */
export class HttpConnections {
  private readonly bySocket = new WeakMap<Socket, HttpConnection>();

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly ledger: PrincipalOutbound,
    private readonly logger: Logger,
  ) {}

  /** Serves `req` with `serve` now, or once the requests ahead of it on its connection are answered. */
  dispatch(req: IncomingMessage, res: ServerResponse, serve: () => void): void {
    const connection = this.of(req.socket);
    if (connection) connection.dispatch(res, serve);
    else serve();
  }

  /** The connection of `res` serves `principal` (its bytes count towards that principal's budget). */
  bind(res: ServerResponse, principal: string): void {
    this.bySocket.get(res.req.socket)?.bind(principal);
  }

  /** Counts `queued` (bytes held back for the connection of `res`, e.g. SSE frames) in its budget; returns the removal. */
  count(res: ServerResponse, queued: () => number): () => void {
    const connection = this.bySocket.get(res.req.socket);
    return connection ? connection.count(queued) : () => {};
  }

  private of(socket: Socket | null): HttpConnection | undefined {
    if (!socket || socket.destroyed) return undefined;
    let connection = this.bySocket.get(socket);
    if (!connection) {
      connection = new HttpConnection(socket, this.limits, this.ledger, this.logger);
      this.bySocket.set(socket, connection);
    }
    return connection;
  }
}

class HttpConnection {
  /** Requests started and not yet answered in full. */
  private readonly started = new Set<ServerResponse>();
  private readonly waiting: Waiting[] = [];
  private readonly sources = new Set<() => number>();
  private readonly budget: OutboundBudget;
  private share: OutboundShare | undefined;
  private heldForPipeline = false;
  private heldForBudget = false;
  private pausedHere = false;
  private ended = false;

  constructor(
    private readonly socket: Socket,
    private readonly limits: ConnectionLimits,
    private readonly ledger: PrincipalOutbound,
    private readonly logger: Logger,
  ) {
    this.budget = new OutboundBudget({
      maxBytes: limits.maxOutboundBufferBytes,
      graceMs: limits.outboundGraceMs,
      queued: () => this.queued(),
      pause: () => {
        this.heldForBudget = true;
        this.hold();
      },
      resume: () => {
        this.heldForBudget = false;
        this.startWaiting();
        this.release();
      },
      close: (reason) => this.closeForBudget(reason),
      share: () => this.share,
    });
    // Node resumes a socket itself when a request body is read: a held connection is paused again at once
    // ('resume' is emitted on the next tick, before any read can happen).
    socket.on('resume', () => {
      if (this.held) socket.pause();
    });
    socket.once('close', () => this.end());
  }

  private get held(): boolean {
    return this.heldForPipeline || this.heldForBudget;
  }

  dispatch(res: ServerResponse, serve: () => void): void {
    if (this.ended) return;
    const done = () => this.done(res);
    res.once('finish', done);
    res.once('close', done);
    // Measured before the request starts: a connection over its budget (or holding unread bytes of a principal
    // over its own) gets no new answer to queue, whatever the ledger's tick has seen so far.
    this.budget.check();
    if (!this.heldForBudget && this.started.size < this.limits.maxPipelinedRequests && this.waiting.length === 0) this.start(res, serve);
    else {
      this.waiting.push({ res, serve });
      this.heldForPipeline = true;
      this.hold();
    }
    this.share?.setBusy(true);
  }

  bind(principal: string): void {
    if (this.ended || this.share?.principal === principal) return;
    this.share?.release();
    this.share = this.ledger.share(principal, () => this.budget.check());
    this.share.setBusy(this.started.size > 0);
    this.budget.check();
  }

  count(queued: () => number): () => void {
    this.sources.add(queued);
    return () => this.sources.delete(queued);
  }

  private start(res: ServerResponse, serve: () => void): void {
    this.started.add(res);
    serve();
  }

  private done(res: ServerResponse): void {
    // Called on 'finish' and again on 'close': only the first counts.
    if (!this.started.delete(res)) {
      const at = this.waiting.findIndex((waiting) => waiting.res === res);
      if (at < 0) return;
      this.waiting.splice(at, 1);
    }
    if (this.ended) return;
    this.budget.check();
    this.startWaiting();
    if (this.started.size === 0 && this.waiting.length === 0) this.share?.setBusy(false);
  }

  /** Starts the requests waiting their turn, as far as the bound and the budget let. */
  private startWaiting(): void {
    while (!this.ended && !this.heldForBudget && this.started.size < this.limits.maxPipelinedRequests && this.waiting.length > 0) {
      const next = this.waiting.shift()!;
      // The last request parsed may not have its whole body yet: reading resumes before it starts.
      if (this.waiting.length === 0) {
        this.heldForPipeline = false;
        this.release();
      }
      this.start(next.res, next.serve);
    }
  }

  /** Bytes written for the client and not yet taken by its connection. */
  private queued(): number {
    if (this.ended) return 0;
    let bytes = this.socket.writableLength;
    // A reply behind the one on the wire has no socket yet: its bytes wait in the response itself.
    for (const res of this.started) if (!res.socket) bytes += res.writableLength;
    for (const source of this.sources) bytes += source();
    return bytes;
  }

  private hold(): void {
    if (!this.held || this.ended) return;
    this.pausedHere = true;
    this.socket.pause();
  }

  private release(): void {
    if (this.held || this.ended || !this.pausedHere) return;
    this.pausedHere = false;
    this.socket.resume();
  }

  private closeForBudget(reason: string): void {
    this.logger.info(`http: closing a connection of ${this.share?.principal ?? 'an unauthenticated client'}: ${reason}`);
    publish('taskvisor:backpressure.close', () => ({ stream: 'http' }));
    this.socket.destroy();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.waiting.length = 0;
    this.started.clear();
    this.sources.clear();
    this.budget.dispose();
  }
}
