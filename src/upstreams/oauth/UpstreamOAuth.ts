/**
 * OAuth 2.1 to protected upstreams, per principal (docs/aggregator.md
 * "Upstreams that require OAuth"). taskvisor is the OAuth client the MCP
 * authorization spec describes, once per principal: each principal holds its
 * own grant for each upstream, sealed in the credential store.
 *
 * - {@link connectionAuth}: what a connection for a principal authenticates
 *   with (the SDK transport's `authProvider`), or "authorization required" with the URL that
 *   starts this principal's authorization;
 * - {@link startAuthorization} / {@link completeAuthorization}: the two legs of
 *   the authorization-code flow (the server's callback route or the CLI's
 *   loopback listener calls the second);
 * - {@link revoke}: forgets a principal's grant and asks the authorization
 *   server to revoke it (RFC 7009) when it offers revocation.
 */
import { auth, discoverOAuthServerInfo, type FetchLike, type OAuthDiscoveryState } from '@modelcontextprotocol/client';
import type { Principal } from '../../core/principal.js';
import type { OAuthRecords } from './OAuthRecords.js';
import { PrincipalOAuthProvider, type OAuthClientSettings } from './PrincipalOAuthProvider.js';
import type { UpstreamCredentialSource } from '../identity/UpstreamCredentialSource.js';
import { OAuthAuthorizationRequiredError } from './OAuthAuthorizationRequiredError.js';

/** An upstream whose config says `auth: { type: oauth }`. */
export interface OAuthUpstream extends OAuthClientSettings {
  name: string;
  /** The MCP endpoint (the protected resource). */
  url: string;
  /** Whose grant the shared connection (catalog, health) uses. Default `local` (the operator at the shell). */
  catalogPrincipal?: string | undefined;
}

/** The default catalog principal: the stdio principal, i.e. whoever runs `taskvisor upstreams auth NAME` without `--principal`. */
export const DEFAULT_CATALOG_PRINCIPAL = 'local';

export interface UpstreamOAuthOptions {
  records: OAuthRecords;
  upstreams: readonly OAuthUpstream[];
  /** taskvisor's public callback URL (`…/oauth/callback`); without it, callers are pointed at the CLI flow. */
  callbackUrl?: string | undefined;
  /** How long an authorization URL stays redeemable. Default 10 minutes. */
  pendingTtlMs?: number;
  /** Refresh a token expiring within this. Default 60 s. */
  refreshSkewMs?: number;
  now?: () => number;
  fetchFn?: FetchLike;
}

/** A callback that cannot be redeemed: unknown, already used, or expired state; the AS said no. */
export class AuthorizationCallbackError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthorizationCallbackError';
  }
}

export const DEFAULT_PENDING_TTL_MS = 10 * 60_000;
export const DEFAULT_REFRESH_SKEW_MS = 60_000;
/** Providers are a few hundred bytes; past this many the cache starts over (connections then reopen once). */
const MAX_CACHED_PROVIDERS = 10_000;

export class UpstreamOAuth implements UpstreamCredentialSource {
  readonly #upstreams: Map<string, OAuthUpstream>;
  readonly #now: () => number;
  /**
   * One provider per upstream, principal and registration: the pool keeps a connection while it gets the same
   * provider object back. Bounded: a principal's entry goes on revoke, and the map is cleared past the bound.
   */
  readonly #providers = new Map<string, PrincipalOAuthProvider>();

  constructor(private readonly options: UpstreamOAuthOptions) {
    this.#upstreams = new Map(options.upstreams.map((upstream) => [upstream.name, upstream]));
    this.#now = options.now ?? Date.now;
  }

  /** Whether `upstream` is one this authority authorizes (an OAuth upstream). */
  handles(upstream: string): boolean {
    return this.#upstreams.has(upstream);
  }

  /**
   * The auth of `principal`'s connection to `upstream`: its provider when it
   * holds a grant (refreshed first when about to expire), else
   * {@link OAuthAuthorizationRequiredError} with a URL bound to it.
   */
  async connectionAuth(upstream: string, principal: Principal): Promise<{ authProvider: PrincipalOAuthProvider }> {
    const spec = this.#spec(upstream);
    const grant = await this.options.records.grant(upstream, principal.id);
    if (grant) {
      // The grant's own registration refreshes it (the CLI's loopback client differs from the server's callback client).
      const provider = this.#cachedProvider(spec, principal.id, grant.redirectUrl);
      const tokens = await provider.tokens().catch(() => undefined);
      if (tokens !== undefined) return { authProvider: provider };
    }
    throw await this.authorizationRequired(upstream, principal);
  }

  /**
   * The shared connection's credentials: the catalog principal's grant. Without one the upstream cannot even be
   * listed; the error (the upstream's last error in `taskvisor upstreams`) says how to make one.
   */
  async catalogAuth(upstream: string): Promise<{ authProvider: PrincipalOAuthProvider }> {
    const principal = this.#spec(upstream).catalogPrincipal ?? DEFAULT_CATALOG_PRINCIPAL;
    try {
      return await this.connectionAuth(upstream, { id: principal });
    } catch (error) {
      if (!(error instanceof OAuthAuthorizationRequiredError)) throw error;
      throw new Error(
        `no OAuth grant of its catalog principal ${JSON.stringify(principal)} yet: run \`taskvisor upstreams auth ${upstream} --principal ${principal}\``,
        { cause: error },
      );
    }
  }

  /** The "authorization required" of `principal`: with a fresh authorization URL when taskvisor serves a callback. */
  async authorizationRequired(upstream: string, principal: Principal): Promise<OAuthAuthorizationRequiredError> {
    if (this.options.callbackUrl === undefined) return new OAuthAuthorizationRequiredError(upstream, undefined);
    return new OAuthAuthorizationRequiredError(upstream, await this.startAuthorization(upstream, principal.id, this.options.callbackUrl));
  }

  /** Starts `principal`'s authorization at `upstream` with `redirectUrl`; the URL to send its user agent to. */
  async startAuthorization(upstream: string, principal: string, redirectUrl: string): Promise<URL> {
    const spec = this.#spec(upstream);
    const provider = this.#provider(spec, principal, redirectUrl);
    // auth() discovers, registers if needed, and asks to redirect (PKCE S256, state); forced: an old grant is not refreshed.
    const result = await auth(provider, { serverUrl: new URL(spec.url), forceReauthorization: true, ...this.#fetch() });
    if (result !== 'REDIRECT' || provider.authorizationUrl === undefined)
      throw new Error(`upstream ${upstream}: the authorization server issued tokens without a user`);
    return provider.authorizationUrl;
  }

  /**
   * Redeems the callback `state` and `code` (and RFC 9207 `iss`): the grant
   * goes to the principal the state was issued to, whoever delivers it.
   * Single-use; refused after it expired.
   */
  async completeAuthorization(callback: {
    state: string;
    code: string;
    iss?: string | undefined;
  }): Promise<{ upstream: string; principal: string }> {
    const pending = await this.options.records.takePending(callback.state);
    if (!pending) throw new AuthorizationCallbackError('this authorization link is unknown or was already used; start again');
    if (pending.expiresAt <= this.#now()) throw new AuthorizationCallbackError('this authorization link expired; start again');
    const spec = this.#upstreams.get(pending.upstream);
    if (!spec) throw new AuthorizationCallbackError('the upstream of this authorization is no longer configured');
    const provider = this.#provider(spec, pending.principal, pending.redirectUrl, {
      codeVerifier: pending.codeVerifier,
      discoveryState: pending.discoveryState,
    });
    try {
      await auth(provider, {
        serverUrl: new URL(spec.url),
        authorizationCode: callback.code,
        ...(callback.iss !== undefined ? { iss: callback.iss } : {}),
        ...this.#fetch(),
      });
    } catch (error) {
      throw new AuthorizationCallbackError(`the authorization server refused the code: ${(error as Error).message}`);
    }
    return { upstream: pending.upstream, principal: pending.principal };
  }

  /** Forgets `principal`'s grant for `upstream`, revoking it at the AS first when it offers RFC 7009; whether there was one. */
  async revoke(upstream: string, principal: string): Promise<boolean> {
    const spec = this.#spec(upstream);
    const grant = await this.options.records.grant(upstream, principal);
    if (!grant) return false;
    const token = grant.tokens.refresh_token ?? grant.tokens.access_token;
    const hint = grant.tokens.refresh_token ? 'refresh_token' : 'access_token';
    this.forget(principal);
    // Best effort: the local grant goes regardless.
    await this.#revokeAtServer(spec, grant.redirectUrl, token, hint).catch(() => undefined);
    return this.options.records.deleteGrant(upstream, principal);
  }

  /** Drops the providers held for `principal` (its connections then reopen, asking for a grant). */
  forget(principal: string): void {
    for (const [key, provider] of this.#providers) if (provider.principal === principal) this.#providers.delete(key);
  }

  /** The principals holding a grant for `upstream`. */
  principalsOf(upstream: string): Promise<string[]> {
    return this.options.records.principalsOf(upstream);
  }

  /** Whether `principal` holds a grant for `upstream` (it may still fail to refresh). */
  async hasGrant(upstream: string, principal: string): Promise<boolean> {
    return (await this.options.records.grant(upstream, principal)) !== undefined;
  }

  async #revokeAtServer(spec: OAuthUpstream, redirectUrl: string, token: string, hint: string): Promise<void> {
    const fetchFn = this.options.fetchFn ?? fetch;
    const info = await discoverOAuthServerInfo(new URL(spec.url), { ...(this.options.fetchFn ? { fetchFn: this.options.fetchFn } : {}) });
    const endpoint = (info.authorizationServerMetadata as { revocation_endpoint?: string } | undefined)?.revocation_endpoint;
    if (!endpoint) return;
    const client =
      spec.clientId !== undefined
        ? { client_id: spec.clientId, client_secret: spec.clientSecret }
        : await this.options.records.client(spec.name, redirectUrl);
    const body = new URLSearchParams({ token, token_type_hint: hint });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (client?.client_secret)
      headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64')}`;
    else if (client) body.set('client_id', client.client_id);
    await fetchFn(endpoint, { method: 'POST', headers, body });
  }

  #spec(upstream: string): OAuthUpstream {
    const spec = this.#upstreams.get(upstream);
    if (!spec) throw new Error(`upstream ${upstream} does not use OAuth`);
    return spec;
  }

  #fetch(): { fetchFn?: FetchLike } {
    return this.options.fetchFn ? { fetchFn: this.options.fetchFn } : {};
  }

  #cachedProvider(spec: OAuthUpstream, principal: string, redirectUrl: string): PrincipalOAuthProvider {
    const key = JSON.stringify([spec.name, principal, redirectUrl]);
    let provider = this.#providers.get(key);
    if (!provider) {
      if (this.#providers.size >= MAX_CACHED_PROVIDERS) this.#providers.clear();
      provider = this.#provider(spec, principal, redirectUrl);
      this.#providers.set(key, provider);
    }
    return provider;
  }

  #provider(
    spec: OAuthUpstream,
    principal: string,
    redirectUrl: string,
    resume?: { codeVerifier: string; discoveryState: OAuthDiscoveryState | undefined },
  ): PrincipalOAuthProvider {
    return new PrincipalOAuthProvider({
      upstream: spec.name,
      principal,
      serverUrl: new URL(spec.url),
      redirectUrl,
      records: this.options.records,
      settings: spec,
      pendingTtlMs: this.options.pendingTtlMs ?? DEFAULT_PENDING_TTL_MS,
      refreshSkewMs: this.options.refreshSkewMs ?? DEFAULT_REFRESH_SKEW_MS,
      now: this.#now,
      ...(resume ? { resume } : {}),
    });
  }
}
