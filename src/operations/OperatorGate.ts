/**
 * Who may read the operator surfaces (`/metrics`, the dashboard's API).
 * Operators see every principal's tasks, so ordinary MCP credentials
 * are never enough:
 *
 * - with bearer auth configured: a token carrying the operator scope
 *   (`operatorScope`, default `taskvisor:operator`); a valid token without it
 *   gets 403 `insufficient_scope`;
 * - without auth: loopback clients only (the peer address, and a loopback
 *   Host so a DNS-rebinding page cannot reach it either).
 *
 * Host and Origin are checked as on the MCP entry (DNS-rebinding
 * protection); a browser request from another origin gets 403.
 */
import { hostHeaderValidationResponse, originValidationResponse } from '@modelcontextprotocol/server';
import { bearerGate, type BearerAuthOptions, type BearerGate } from '../auth/bearer.js';
import { LOOPBACK_HOSTS } from '../core/constants.js';
import type { Principal } from '../core/principal.js';
import type { Logger } from '../runtime/Logger.js';
import type { HttpClientInfo } from '../transports/HttpRoutes.js';
import { json } from './httpResponses.js';

/** The scope an operator's token must carry by default. */
export const DEFAULT_OPERATOR_SCOPE = 'taskvisor:operator';

export interface OperatorGateOptions {
  /** The bearer auth of the MCP entry; operators then need a token with `operatorScope`. Absent: loopback only. */
  auth?: BearerAuthOptions | undefined;
  /** Default {@link DEFAULT_OPERATOR_SCOPE}. */
  operatorScope?: string | undefined;
  /** Host names accepted; default: the loopback names without auth, no check with auth. `false`: no check. */
  allowedHosts?: string[] | false | undefined;
  /** Browser Origin host names accepted; defaults as `allowedHosts`. */
  allowedOrigins?: string[] | false | undefined;
  /** The MCP path (its protected-resource metadata is named in 401 challenges). Default `/mcp`. */
  mcpPath?: string | undefined;
  logger: Logger;
}

/** The operator principal a request was admitted as. */
export const LOOPBACK_OPERATOR: Principal = { id: 'operator@loopback' };

/** Whether `address` is a loopback peer address (IPv4, IPv6, IPv4-mapped). */
export const isLoopbackAddress = (address: string | undefined): boolean =>
  address !== undefined && (/^127\./.test(address) || address === '::1' || /^::ffff:127\./i.test(address));

export class OperatorGate {
  readonly scope: string;
  readonly #bearer: BearerGate | undefined;
  readonly #options: OperatorGateOptions;

  constructor(options: OperatorGateOptions) {
    this.#options = options;
    this.scope = options.operatorScope ?? DEFAULT_OPERATOR_SCOPE;
    this.#bearer = options.auth ? bearerGate({ ...options.auth, requiredScopes: [this.scope] }, options.logger) : undefined;
  }

  /** Whether the gate relies on bearer tokens (else: loopback only). */
  get usesTokens(): boolean {
    return this.#bearer !== undefined;
  }

  /**
   * Ties a long-lived answer (the event stream) of `operator`, as admitted by
   * {@link admit}, to its token: `end(reason)` when the token is revoked or
   * expires. Returns the untrack function. A loopback operator has no token:
   * nothing to track.
   */
  trackSession(operator: Principal, end: (reason: string) => void): () => void {
    return this.#bearer ? this.#bearer.trackSession(operator, end) : () => {};
  }

  /** The operator admitted, or the response refusing the request. */
  async admit(request: Request, client: HttpClientInfo | undefined): Promise<Principal | Response> {
    const loopbackDefault = this.#bearer ? false : LOOPBACK_HOSTS;
    const allowedHosts = this.#options.allowedHosts ?? loopbackDefault;
    const allowedOrigins = this.#options.allowedOrigins ?? loopbackDefault;
    if (allowedHosts) {
      const refused = hostHeaderValidationResponse(request, allowedHosts);
      if (refused) return refused;
    }
    if (allowedOrigins) {
      const refused = originValidationResponse(request, allowedOrigins);
      if (refused) return refused;
    }
    if (this.#bearer) return this.#bearer.authenticate(request, this.#options.mcpPath ?? '/mcp');
    if (!isLoopbackAddress(client?.remoteAddress)) {
      return json(403, { error: 'forbidden: without auth configured, the operator endpoints answer loopback clients only' });
    }
    return LOOPBACK_OPERATOR;
  }
}
