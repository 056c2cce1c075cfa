/**
 * Task traffic to an upstream goes through a raw path on the client's own
 * transport, since the SDK client cannot decode `resultType: "task"` (P5).
 * This is that path: requests framed with the 2026 `_meta` envelope, each
 * with the capabilities the caller chooses for it (T-01), matched with their
 * answers by id, and failed with a retryable {@link UpstreamUnavailableError}
 * when no answer comes. The HTTP transport derives `Mcp-Method` and
 * `Mcp-Name` (= `params.taskId` of `tasks/*`) from the framed body.
 */
import { performance } from 'node:perf_hooks';
import { ProtocolError, UnauthorizedError, type Transport } from '@modelcontextprotocol/client';
import type { JsonObject } from '../core/json.js';
import { publish } from '../core/diagnostics.js';
import { UpstreamUnavailableError } from './UpstreamUnavailableError.js';

/** An upstream's answer to one raw request. */
export type RawOutcome =
  { kind: 'result'; result: JsonObject } | { kind: 'error'; error: { code: number; message: string; data?: unknown } };

/** How one raw request is sent. */
export interface RawRequestOptions {
  signal?: AbortSignal;
  progressToken?: string;
  /** A request that blocks by design (2025-11-25 `tasks/result` until the task ends) has no deadline; closing ends it. */
  noDeadline?: boolean;
  /** This request's own deadline in ms, instead of the upstream's `timeout`. */
  timeoutMs?: number;
  /**
   * When `signal` fires, stop waiting as well as telling the upstream (the
   * promise rejects with the signal's reason): a held call's worker must end
   * even if the upstream never answers a cancelled request (spec: it need not).
   */
  abandonOnAbort?: boolean;
}

export const UPSTREAM_CLIENT_INFO = { name: 'taskvisor-aggregator', version: '0.1.0' };

interface Pending {
  resolve: (outcome: RawOutcome) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * `params` as sent: the progress token in `_meta`, and on 2026-07-28
 * (`protocolVersion` given) the envelope with what *this* request declares
 * upstream (`capabilities`, T-01).
 */
export function frameRequest(
  params: JsonObject,
  capabilities: JsonObject,
  progressToken: string | undefined,
  protocolVersion: string | undefined,
): JsonObject {
  const meta = {
    ...((params._meta as JsonObject | undefined) ?? {}),
    ...(progressToken !== undefined ? { progressToken } : {}),
  };
  if (protocolVersion !== undefined) {
    return {
      ...params,
      _meta: {
        ...meta,
        'io.modelcontextprotocol/protocolVersion': protocolVersion,
        'io.modelcontextprotocol/clientInfo': UPSTREAM_CLIENT_INFO,
        'io.modelcontextprotocol/clientCapabilities': capabilities,
      },
    };
  }
  return Object.keys(meta).length > 0 ? { ...params, _meta: meta } : params;
}

/** The raw requests of one upstream connection in flight. */
export class RawRequests {
  private readonly pending = new Map<string, Pending>();

  /** Requests awaiting their answer. */
  get size(): number {
    return this.pending.size;
  }

  constructor(private readonly upstream: string) {}

  /** Sends `framed` as request `id` on `transport`; settles with the answer, or rejects when none comes in `timeoutMs`. */
  send(
    transport: Transport,
    id: string,
    method: string,
    framed: JsonObject,
    timeoutMs: number,
    options: RawRequestOptions,
  ): Promise<RawOutcome> {
    const startedAt = performance.now();
    const name = this.upstream;
    const deadlineMs = Math.min(options.timeoutMs ?? timeoutMs, 2 ** 31 - 1);
    let onAbort: (() => void) | undefined;
    const answered = new Promise<RawOutcome>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          if (!this.pending.delete(id)) return;
          reject(
            new UpstreamUnavailableError(name, `upstream ${name} did not answer ${method} within ${deadlineMs} ms`, { timedOut: true }),
          );
        },
        options.noDeadline ? 2 ** 31 - 1 : deadlineMs,
      );
      timer.unref();
      this.pending.set(id, { resolve, reject, timer });
      onAbort = () => {
        // Only a request still waiting is abandoned: one already answered needs no notice upstream.
        if (!this.pending.has(id)) return;
        // Tell the upstream the request is abandoned (a synchronous call stops there too).
        void transport
          .send({
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: id, reason: 'The inbound request was cancelled' },
          })
          .catch(() => {});
        const pending = options.abandonOnAbort ? this.pending.get(id) : undefined;
        if (!pending) return;
        this.pending.delete(id);
        clearTimeout(pending.timer);
        reject(options.signal?.reason instanceof Error ? options.signal.reason : new Error('The request was cancelled'));
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      transport.send({ jsonrpc: '2.0', id, method, params: framed }).catch((error: unknown) => {
        const pending = this.pending.get(id);
        if (!pending) return;
        this.pending.delete(id);
        clearTimeout(pending.timer);
        if (error instanceof ProtocolError)
          return resolve({
            kind: 'error',
            error: { code: error.code, message: error.message, ...(error.data !== undefined ? { data: error.data } : {}) },
          });
        // A JSON-RPC error answered with an HTTP error status (400 -32021, 404 -32601) arrives as SdkHttpError.
        const text = (error as { data?: { text?: unknown } })?.data?.text;
        if (typeof text === 'string') {
          try {
            const body = JSON.parse(text) as { error?: { code: number; message: string } };
            if (body.error) return resolve({ kind: 'error', error: body.error });
          } catch {
            // not JSON: fall through
          }
        }
        reject(
          new UpstreamUnavailableError(name, `upstream ${name}: ${(error as Error)?.message ?? String(error)}`, {
            unauthorized: error instanceof UnauthorizedError || (error as { status?: unknown })?.status === 401,
          }),
        );
      });
    });
    // A held call sends several requests under one task signal: each one's listener goes when it settles.
    if (options.signal && onAbort) {
      const [signal, listener] = [options.signal, onAbort];
      const settled = () => signal.removeEventListener('abort', listener);
      void answered.then(settled, settled);
    }
    // Reported on taskvisor:upstream.call once settled (metrics, spans).
    const traceparent = ((framed._meta as JsonObject | undefined) ?? {}).traceparent;
    const report = (outcome: 'result' | 'error' | 'unavailable') =>
      publish('taskvisor:upstream.call', () => ({
        upstream: name,
        method,
        durationMs: performance.now() - startedAt,
        outcome,
        ...(typeof traceparent === 'string' ? { traceparent } : {}),
      }));
    answered.then(
      (settled) => report(settled.kind),
      () => report('unavailable'),
    );
    return answered;
  }

  /** Settles the request `id` answers with `inbound`; false when no request of ours waits for it. */
  settle(id: unknown, inbound: { error?: unknown; result?: unknown }): boolean {
    const pending = typeof id === 'string' ? this.pending.get(id) : undefined;
    if (!pending) return false;
    this.pending.delete(id as string);
    clearTimeout(pending.timer);
    pending.resolve(
      'error' in inbound
        ? { kind: 'error', error: inbound.error as { code: number; message: string; data?: unknown } }
        : { kind: 'result', result: inbound.result as JsonObject },
    );
    return true;
  }

  /** Fails every request in flight: the connection is gone (`detail` says why). */
  failAll(detail: string): void {
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(new UpstreamUnavailableError(this.upstream, `upstream ${this.upstream}: ${detail}`));
      this.pending.delete(id);
    }
  }
}
