/**
 * Identity `passthrough`: the caller's own bearer token goes to the upstream
 * (one that trusts the issuer of taskvisor's tokens). The token is the one
 * the principal last authenticated with here ({@link CallerCredentials}),
 * read before every request of the connection, so a renewed token is used
 * without reconnecting and an expired or revoked one is never sent.
 */
import type { AuthProvider } from '@modelcontextprotocol/client';
import type { CallerCredentials } from '../../auth/CallerCredentials.js';
import type { Principal } from '../../core/principal.js';
import {
  UpstreamAuthorizationRequiredError,
  type UpstreamConnectionAuth,
  type UpstreamCredentialSource,
} from './UpstreamCredentialSource.js';

/** The stable refusal when the caller's token is not held (any more). */
export function callerTokenMissing(upstream: string): UpstreamAuthorizationRequiredError {
  return new UpstreamAuthorizationRequiredError(
    upstream,
    `Upstream ${upstream} acts as the caller and needs a valid bearer token of yours, which this server does not hold ` +
      '(it expired or was revoked, or none was sent to this server since it started); send your request with a valid token and retry',
  );
}

/** Per principal: one provider object, so the pool keeps the principal's connection (sameAuth). */
export class CallerTokenProviders {
  private readonly providers = new Map<string, AuthProvider>();

  constructor(
    callers: CallerCredentials,
    private readonly token: (principal: string) => Promise<string | undefined>,
  ) {
    callers.onForget((principal) => this.providers.delete(principal));
  }

  of(principal: string): AuthProvider {
    let provider = this.providers.get(principal);
    if (!provider) {
      provider = { token: () => this.token(principal) };
      this.providers.set(principal, provider);
    }
    return provider;
  }
}

export class PassthroughCredentials implements UpstreamCredentialSource {
  private readonly providers: CallerTokenProviders;

  constructor(private readonly callers: CallerCredentials) {
    this.providers = new CallerTokenProviders(callers, (principal) => Promise.resolve(callers.current(principal)?.token));
  }

  connectionAuth(upstream: string, principal: Principal): Promise<UpstreamConnectionAuth> {
    if (!this.callers.current(principal.id)) return Promise.reject(callerTokenMissing(upstream));
    return Promise.resolve({ authProvider: this.providers.of(principal.id) });
  }
}
