/**
 * How the forwarder talks to its upstreams: the open connection of one (or,
 * retryably, why there is none), one request sent on it, and an upstream's
 * answer to `tasks/*` made ours. Every way an upstream fails becomes one of
 * our errors here: never an invented task status.
 */
import { ProtocolError } from '@modelcontextprotocol/server';
import type { JsonObject } from '../core/json.js';
import type { Logger } from '../runtime/Logger.js';
import { ErrorCode, taskNotFound } from '../core/errors.js';
import { protocolError } from './forwardedShapes.js';
import type { RawOutcome, UpstreamConnection } from './UpstreamConnection.js';
import { UpstreamUnavailableError } from './UpstreamUnavailableError.js';
import { identityProtocolError, upstreamRefusedCaller } from './identity/identityErrors.js';

/** What the forwarder needs from the upstream manager. */
export interface UpstreamDirectory {
  /** The open connection of `name`, or `undefined` while it is down. */
  connection(name: string): UpstreamConnection | undefined;
  /**
   * The connection `principal`'s requests to `name` go over: the shared one,
   * or for an upstream that acts as the caller the principal's own (opened
   * now if need be; throws the identity errors). `undefined` while it is down.
   */
  connectionFor(name: string, principal: string): Promise<UpstreamConnection | undefined>;
  /** Like {@link connectionFor}, without opening anything. */
  openConnectionOf(name: string, principal: string): UpstreamConnection | undefined;
  /** Whether `name` is a configured upstream (known, perhaps down). */
  has(name: string): boolean;
  /** One line on why `name` is down and when it is retried. */
  describeDown(name: string): { state: string; lastError: string | null; retryAt: number | null };
}

/**
 * The error for an upstream that cannot be reached now: retryable, never an
 * invented task status. Clients get a stable message: the upstream's last
 * error (stderr lines, URLs, paths) stays in the log and `taskvisor upstreams`.
 */
export function upstreamUnavailable(name: string, down: { state: string; retryAt: number | null }): ProtocolError {
  const retry = down.retryAt !== null ? `; next connection attempt at ${new Date(down.retryAt).toISOString()}` : '';
  // A call cut off mid-flight may come before the upstream's machine has left `ready`.
  const why = down.state === 'ready' || down.state === 'degraded' ? 'the connection was lost' : down.state;
  return new ProtocolError(ErrorCode.InternalError, `Upstream ${name} is unavailable (${why})${retry}; retry later`, {
    upstream: name,
    retryable: true,
    state: down.state,
    ...(down.retryAt !== null ? { retryAt: new Date(down.retryAt).toISOString() } : {}),
  });
}

export class UpstreamChannel {
  constructor(
    private readonly directory: UpstreamDirectory,
    private readonly logger?: Logger,
  ) {}

  /**
   * The open connection `principal`'s requests to `upstream` go over; a
   * retryable error while it is down, the stable identity errors when the
   * principal cannot act there (identityErrors.ts).
   */
  async open(upstream: string, principal: string): Promise<UpstreamConnection> {
    let connection: UpstreamConnection | undefined;
    try {
      connection = await this.directory.connectionFor(upstream, principal);
    } catch (error) {
      const identity = identityProtocolError(error);
      if (identity) throw identity;
      // Opening the principal's own connection failed: the details (URLs, statuses) stay in the log.
      this.logger?.error(`upstream ${upstream}: cannot open a connection for a principal`, error);
      throw upstreamUnavailable(upstream, { state: 'unreachable for this principal', retryAt: null });
    }
    if (!connection || !connection.isOpen) throw upstreamUnavailable(upstream, this.directory.describeDown(upstream));
    return connection;
  }

  async send(
    connection: UpstreamConnection,
    method: string,
    params: JsonObject,
    capabilities: JsonObject,
    options: { signal?: AbortSignal; progressToken?: string } = {},
  ): Promise<RawOutcome> {
    try {
      return await connection.request(method, params, capabilities, options);
    } catch (error) {
      if (error instanceof UpstreamUnavailableError && error.unauthorized && connection.actsAsPrincipal) {
        // The upstream refused the caller's own credential: the caller's to fix, not a retryable outage.
        throw identityProtocolError(upstreamRefusedCaller(error.upstream));
      }
      if (error instanceof UpstreamUnavailableError) {
        const down = this.directory.describeDown(error.upstream);
        throw upstreamUnavailable(error.upstream, down);
      }
      throw error;
    }
  }

  /** A `tasks/*` answer, with the upstream's unknown-id error made ours word for word. */
  answer(outcome: RawOutcome): JsonObject {
    if (outcome.kind === 'result') return outcome.result;
    // Only the upstream's "no such task" becomes ours word for word; other -32602s (bad inputResponses…) pass as they are.
    if (outcome.error.code === ErrorCode.InvalidParams && /task not found|task has expired|unknown task/i.test(outcome.error.message))
      throw taskNotFound();
    throw protocolError(outcome.error);
  }
}
