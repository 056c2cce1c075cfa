/**
 * What a connection transport (stdio, WebSocket) does with a message that
 * arrives before the runtime serves — the same as Streamable HTTP
 * (http.ts, tasksFastLane.ts), in one place for both:
 *
 * - while the runtime recovers its unfinished tasks, a 2026-07-28
 *   `tasks/get`, `tasks/update` or `tasks/cancel` is answered at once by the
 *   same {@link TaskRequests} the SDK handlers call: `tasks/get` from the
 *   store, update/cancel of a task recovery has not taken over yet with the
 *   retryable -32603 naming the state (`RecoveringError`). A deliberate,
 *   documented departure from T-20 while recovering (docs/operations.md).
 * - every other message (tools/call, listen, initialize, …) is held, in
 *   order, and handed on once the runtime serves; when it never will (it
 *   closed, or its store failed to open) each held request is answered the
 *   -32603 HTTP answers with a 503.
 *
 * Early answers go only to modern requests the fast lane's decoder is sure
 * of (protocol/taskRequestDecoder.ts) on a connection that has not opened a
 * 2025-11-25 session (`initialize`): anything else waits for the SDK, which
 * then answers exactly as it always did. At most {@link MAX_HELD} messages
 * wait per connection; a request past that is answered the retryable
 * recovering error instead of growing the queue.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { ErrorCode, RecoveringError } from '../core/errors.js';
import { answerTaskRequest } from '../protocol/taskAnswer.js';
import { decodeTaskRequest } from '../protocol/taskRequestDecoder.js';
import { logTransportError } from './transportErrors.js';
import { requestIdOf } from './InflightRequests.js';
import type { ServingRuntime } from './ServingRuntime.js';

/** Messages one connection may have waiting for the runtime to serve. */
export const MAX_HELD = 1_000;

type Phase = 'waiting' | 'serving' | 'failed';

export class RecoveryGate {
  #phase: Phase;
  #held: Array<() => void> = [];
  /** The connection opened a 2025-11-25 session: nothing is answered ahead of the SDK. */
  #legacy = false;

  /**
   * @param send writes a response on the connection (it frees the request's id there).
   */
  constructor(
    private readonly runtime: ServingRuntime,
    private readonly principal: string,
    private readonly send: (message: JSONRPCMessage) => Promise<void>,
  ) {
    const ready = runtime.ready?.();
    if (ready === undefined) {
      this.#phase = 'serving';
      return;
    }
    this.#phase = 'waiting';
    ready.then(
      () => {
        this.#phase = 'serving';
        // In arrival order, before anything that comes later (this runs before the next message is read).
        for (const deliver of this.#held.splice(0)) deliver();
      },
      () => {
        this.#phase = 'failed';
        this.#held = [];
      },
    );
  }

  /**
   * `false` when `message` goes on now (`deliver` is not called); `true` when
   * the gate took it: answered it, or holds it and calls `deliver` once the
   * runtime serves.
   */
  take(message: JSONRPCMessage, deliver: () => void): boolean {
    if (this.#phase === 'serving') return false;
    const id = requestIdOf(message);
    if (this.#phase === 'failed') {
      if (id !== undefined) this.#answerError(id, ErrorCode.InternalError, 'The server is not serving: it is stopping or failed to start');
      return true;
    }
    if ((message as { method?: unknown }).method === 'initialize') this.#legacy = true;
    if (this.#answerEarly(message)) return true;
    if (this.#held.length >= MAX_HELD) {
      const refusal = new RecoveringError();
      if (id !== undefined) this.#answerError(id, refusal.code, refusal.message, refusal.data);
      return true;
    }
    this.#held.push(deliver);
    return true;
  }

  /** Answers a decodable `tasks/*` request while the runtime recovers; `false` when it must wait. */
  #answerEarly(message: JSONRPCMessage): boolean {
    const { runtime } = this;
    const requests = runtime.taskRequests;
    const serverInfo = runtime.serverInfo;
    if (this.#legacy || !requests || !serverInfo || runtime.recovering?.() !== true) return false;
    const request = decodeTaskRequest(message);
    // Tasks of an upstream server (the aggregator) are the SDK path's.
    if (!request || requests.forwards(request.taskId)) return false;
    void answerTaskRequest(requests, request, this.principal, serverInfo, runtime.logger)
      .then((answer) => this.send(answer.message as JSONRPCMessage))
      .catch((error: unknown) => logTransportError(runtime.logger, 'answer while recovering', error));
    return true;
  }

  #answerError(id: string | number, code: number, message: string, data?: unknown): void {
    this.send({ jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined ? { data } : {}) } }).catch((error: unknown) =>
      logTransportError(this.runtime.logger, 'answer while not serving', error),
    );
  }
}
