/**
 * Identity `tokenExchange`: the caller's bearer token (the subject) is
 * exchanged at an RFC 8693 token endpoint for a token of the upstream's
 * audience, and that token goes upstream. Exchanged tokens are cached per
 * principal, in memory only, until shortly before they expire and only
 * while the subject they came from is still the principal's valid token
 * (a revoked or expired caller token stops its exchanged token being used).
 *
 * Clients get stable messages; what the token endpoint said goes to the log.
 */
import { createHash } from 'node:crypto';
import type { CallerCredentials } from '../../auth/CallerCredentials.js';
import type { Principal } from '../../core/principal.js';
import type { Logger } from '../../runtime/Logger.js';
import { CallerTokenProviders, callerTokenMissing } from './PassthroughCredentials.js';
import {
  UpstreamAuthorizationRequiredError,
  type UpstreamConnectionAuth,
  type UpstreamCredentialSource,
} from './UpstreamCredentialSource.js';
import type { TokenExchangeIdentity } from './UpstreamIdentity.js';

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** An exchanged token is renewed this long before it expires. */
const EXPIRY_SKEW_MS = 30_000;
/** Cached this long when the endpoint gives no `expires_in`. */
const DEFAULT_LIFETIME_MS = 60_000;
/** Token endpoint errors that are about taskvisor's client or the service, not the caller's token (RFC 6749 §5.2). */
const SERVER_SIDE_ERRORS = new Set(['invalid_client', 'unauthorized_client', 'unsupported_grant_type', 'temporarily_unavailable']);
/** The largest token endpoint answer read. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** The token endpoint could not be reached or answered nonsense: retryable, not the caller's fault. */
export class IdentityServiceUnavailableError extends Error {
  constructor(readonly upstream: string) {
    super(`Upstream ${upstream}: the identity service that issues its tokens is unavailable; retry later`);
    this.name = 'IdentityServiceUnavailableError';
  }
}

interface Exchanged {
  /** SHA-256 of the subject it was exchanged for: only that subject may use it. */
  subject: string;
  token: string;
  expiresAt: number;
}

export interface TokenExchangeOptions {
  upstream: string;
  identity: TokenExchangeIdentity;
  callers: CallerCredentials;
  logger: Logger;
  /** Per exchange request, ms. Default 10 000. */
  timeoutMs?: number;
  now?: () => number;
}

export class TokenExchangeCredentials implements UpstreamCredentialSource {
  private readonly cache = new Map<string, Exchanged>();
  private readonly inFlight = new Map<string, Promise<Exchanged>>();
  private readonly providers: CallerTokenProviders;
  private readonly now: () => number;

  constructor(private readonly options: TokenExchangeOptions) {
    this.now = options.now ?? Date.now;
    options.callers.onForget((principal) => this.forget(principal));
    this.providers = new CallerTokenProviders(options.callers, async (principal) => (await this.tokenOf(principal)).token);
  }

  /** Exchanged tokens held (at most one per principal the caller credentials hold). */
  get size(): number {
    return this.cache.size;
  }

  async connectionAuth(upstream: string, principal: Principal): Promise<UpstreamConnectionAuth> {
    await this.tokenOf(principal.id);
    return { authProvider: this.providers.of(principal.id) };
  }

  forget(principal: string): void {
    this.cache.delete(principal);
    this.inFlight.delete(principal);
  }

  /** The principal's exchanged token: cached while valid for its current subject, else exchanged now. */
  private async tokenOf(principal: string): Promise<Exchanged> {
    const upstream = this.options.upstream;
    const subject = this.options.callers.current(principal);
    if (!subject) throw callerTokenMissing(upstream);
    const subjectHash = createHash('sha256').update(subject.token).digest('base64url');
    const cached = this.cache.get(principal);
    if (cached && cached.subject === subjectHash && cached.expiresAt - EXPIRY_SKEW_MS > this.now()) return cached;
    const pending = this.inFlight.get(principal);
    if (pending) return pending;
    const exchanging = this.exchange(subject.token, subjectHash, subject.expiresAt).then(
      (exchanged) => {
        if (this.inFlight.get(principal) === exchanging) {
          this.inFlight.delete(principal);
          // Cached only while the principal is still held (not forgotten meanwhile).
          if (this.options.callers.current(principal)) this.cache.set(principal, exchanged);
        }
        return exchanged;
      },
      (error: unknown) => {
        if (this.inFlight.get(principal) === exchanging) this.inFlight.delete(principal);
        throw error;
      },
    );
    this.inFlight.set(principal, exchanging);
    return exchanging;
  }

  private async exchange(subjectToken: string, subjectHash: string, subjectExpiresAt: number | undefined): Promise<Exchanged> {
    const { identity, upstream, logger } = this.options;
    const form = new URLSearchParams({
      grant_type: TOKEN_EXCHANGE_GRANT,
      subject_token: subjectToken,
      subject_token_type: ACCESS_TOKEN_TYPE,
      requested_token_type: identity.requestedTokenType ?? ACCESS_TOKEN_TYPE,
    });
    if (identity.audience !== undefined) form.set('audience', identity.audience);
    if (identity.resource !== undefined) form.set('resource', identity.resource);
    if (identity.scope !== undefined) form.set('scope', identity.scope);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if ((identity.clientAuthMethod ?? 'client_secret_basic') === 'client_secret_basic') {
      // RFC 6749 §2.3.1: id and secret form-urlencoded before base64.
      const pair = `${formEncode(identity.clientId)}:${formEncode(identity.clientSecret)}`;
      headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
    } else {
      form.set('client_id', identity.clientId);
      form.set('client_secret', identity.clientSecret);
    }
    let response: Response;
    let text: string;
    try {
      response = await fetch(identity.tokenEndpoint, {
        method: 'POST',
        headers,
        body: form,
        redirect: 'error',
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
      const length = Number(response.headers.get('content-length') ?? 0);
      if (length > MAX_RESPONSE_BYTES) throw new Error(`the answer is ${length} bytes, more than ${MAX_RESPONSE_BYTES}`);
      text = await response.text();
      if (text.length > MAX_RESPONSE_BYTES) throw new Error(`the answer is more than ${MAX_RESPONSE_BYTES} bytes`);
    } catch (error) {
      logger.error(`upstream ${upstream}: token exchange failed`, error);
      throw new IdentityServiceUnavailableError(upstream);
    }
    const body = parseObject(text);
    if (!response.ok) {
      const code = typeof body?.error === 'string' ? body.error : 'no error code';
      const description = typeof body?.error_description === 'string' ? `: ${body.error_description.slice(0, 200)}` : '';
      logger.error(`upstream ${upstream}: token exchange refused (HTTP ${response.status}, ${code}${description})`);
      // 4xx: this caller's token cannot be exchanged (invalid_grant, invalid_target...); 5xx, or taskvisor's own
      // client refused (a wrong secret, a grant not allowed): not the caller's to fix.
      if (response.status >= 500 || SERVER_SIDE_ERRORS.has(code)) throw new IdentityServiceUnavailableError(upstream);
      throw new UpstreamAuthorizationRequiredError(
        upstream,
        `Upstream ${upstream} acts as the caller, and your token could not be exchanged for one it accepts; ` +
          'an administrator can find the reason in the server log',
      );
    }
    const token = body?.access_token;
    const tokenType = typeof body?.token_type === 'string' ? body.token_type.toLowerCase() : '';
    if (typeof token !== 'string' || token.length === 0 || (tokenType !== 'bearer' && tokenType !== 'n_a')) {
      logger.error(`upstream ${upstream}: token exchange answered without a bearer access_token (token_type ${JSON.stringify(tokenType)})`);
      throw new IdentityServiceUnavailableError(upstream);
    }
    const expiresIn = typeof body?.expires_in === 'number' && body.expires_in > 0 ? body.expires_in * 1000 : DEFAULT_LIFETIME_MS;
    // Never trusted past the subject's own expiry: the caller's rights end then.
    const expiresAt = Math.min(this.now() + expiresIn, subjectExpiresAt ?? Number.POSITIVE_INFINITY);
    return { subject: subjectHash, token, expiresAt };
  }
}

/** application/x-www-form-urlencoded encoding of one value (RFC 6749 Appendix B). */
function formEncode(value: string): string {
  return encodeURIComponent(value).replace(/%20/g, '+');
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
