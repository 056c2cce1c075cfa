/**
 * The SDK's `OAuthClientProvider` for one principal at one upstream: the SDK
 * (`auth()`, the Streamable HTTP transport's `authProvider`) runs discovery
 * (RFC 9728, RFC 8414), dynamic registration (RFC 7591), PKCE S256, the code
 * exchange and refresh; this class only says where each piece lives — tokens
 * per principal and client registrations per upstream in the sealed store,
 * the PKCE verifier and discovery state in the pending authorization the
 * callback redeems.
 *
 * Refresh before expiry: the transport reads the token before every request
 * (`tokens()` without a context); when the token expires within the skew, the
 * provider refreshes first, once per principal and upstream however many
 * requests ask at the same moment.
 */
import { randomBytes } from 'node:crypto';
import {
  auth,
  type OAuthClientMetadata,
  type OAuthClientInformationContext,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import type { OAuthRecords, StoredGrant } from './OAuthRecords.js';

/** What the provider knows of its upstream's OAuth configuration. */
export interface OAuthClientSettings {
  /** Scope to ask for; default: what the upstream's protected-resource metadata lists. */
  scope?: string | undefined;
  /** A client registered by hand with the authorization server; without it taskvisor registers itself (RFC 7591). */
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  /** `client_name` in the registration. Default `taskvisor`. */
  clientName?: string | undefined;
}

export interface PrincipalOAuthProviderOptions {
  upstream: string;
  principal: string;
  serverUrl: URL;
  redirectUrl: string;
  records: OAuthRecords;
  settings: OAuthClientSettings;
  /** How long a started authorization may be redeemed. */
  pendingTtlMs: number;
  /** Refresh when the access token expires within this. */
  refreshSkewMs: number;
  now: () => number;
  /** The callback leg: the verifier and discovery state recorded when the authorization started. */
  resume?: { codeVerifier: string; discoveryState: OAuthDiscoveryState | undefined };
}

/** Refreshes in flight in this process, by upstream and principal. */
const refreshing = new Map<string, Promise<void>>();

export class PrincipalOAuthProvider implements OAuthClientProvider {
  /** Set when `auth()` asked to send the user agent to the authorization server. */
  authorizationUrl: URL | undefined;
  #state: string | undefined;
  #codeVerifier: string | undefined;
  #discoveryState: OAuthDiscoveryState | undefined;
  /** The access token last read from the store: a failed refresh deletes the grant only if nobody replaced it since. */
  #seenAccessToken: string | undefined;

  constructor(private readonly options: PrincipalOAuthProviderOptions) {
    this.#codeVerifier = options.resume?.codeVerifier;
    this.#discoveryState = options.resume?.discoveryState;
  }

  /** The principal whose grant this provider reads and writes. */
  get principal(): string {
    return this.options.principal;
  }

  get redirectUrl(): string {
    return this.options.redirectUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    const { settings } = this.options;
    return {
      redirect_uris: [this.options.redirectUrl],
      client_name: settings.clientName ?? 'taskvisor',
      response_types: ['code'],
      grant_types: ['authorization_code', 'refresh_token'],
      ...(settings.scope !== undefined ? { scope: settings.scope } : {}),
    };
  }

  state(): string {
    this.#state = randomBytes(32).toString('base64url');
    return this.#state;
  }

  async clientInformation(): Promise<StoredOAuthClientInformation | undefined> {
    const { settings } = this.options;
    if (settings.clientId !== undefined) {
      return { client_id: settings.clientId, ...(settings.clientSecret !== undefined ? { client_secret: settings.clientSecret } : {}) };
    }
    return this.options.records.client(this.options.upstream, this.options.redirectUrl);
  }

  async saveClientInformation(information: StoredOAuthClientInformation): Promise<void> {
    if (this.options.settings.clientId !== undefined) return;
    await this.options.records.saveClient(this.options.upstream, this.options.redirectUrl, information);
  }

  async tokens(ctx?: OAuthClientInformationContext): Promise<StoredOAuthTokens | undefined> {
    let grant = await this.#grant();
    // Without a context it is the transport's read before a request: refresh first when about to expire.
    if (ctx === undefined && grant?.tokens.refresh_token !== undefined && this.#expiresSoon(grant)) {
      await this.refresh();
      grant = await this.#grant();
    }
    return grant?.tokens;
  }

  async saveTokens(tokens: StoredOAuthTokens): Promise<void> {
    this.#seenAccessToken = tokens.access_token;
    await this.options.records.saveGrant(this.options.upstream, this.options.principal, {
      tokens,
      obtainedAt: this.options.now(),
      redirectUrl: this.options.redirectUrl,
    });
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    if (this.#state === undefined || this.#codeVerifier === undefined)
      throw new Error('authorization started without state or PKCE verifier');
    this.authorizationUrl = authorizationUrl;
    await this.options.records.savePending(this.#state, {
      upstream: this.options.upstream,
      principal: this.options.principal,
      redirectUrl: this.options.redirectUrl,
      codeVerifier: this.#codeVerifier,
      discoveryState: this.#discoveryState,
      expiresAt: this.options.now() + this.options.pendingTtlMs,
    });
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.#codeVerifier = codeVerifier;
  }

  codeVerifier(): string {
    if (this.#codeVerifier === undefined) throw new Error('no PKCE verifier for this authorization');
    return this.#codeVerifier;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.#discoveryState = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.#discoveryState;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    const { records, upstream, principal, redirectUrl } = this.options;
    if (scope === 'all' || scope === 'tokens') {
      // Another instance may have refreshed meanwhile (a rotated refresh token makes ours invalid_grant): keep its grant.
      const stored = await records.grant(upstream, principal);
      if (stored && stored.tokens.access_token === this.#seenAccessToken) await records.deleteGrant(upstream, principal);
    }
    if ((scope === 'all' || scope === 'client') && this.options.settings.clientId === undefined)
      await records.deleteClient(upstream, redirectUrl);
    if (scope === 'all' || scope === 'verifier') this.#codeVerifier = undefined;
    if (scope === 'all' || scope === 'discovery') this.#discoveryState = undefined;
  }

  /** Refreshes the grant now (once per upstream and principal in this process at a time). */
  refresh(): Promise<void> {
    const key = `${this.options.upstream}\0${this.options.principal}`;
    let running = refreshing.get(key);
    if (!running) {
      running = auth(this, { serverUrl: this.options.serverUrl })
        .then(() => undefined)
        .finally(() => refreshing.delete(key));
      refreshing.set(key, running);
    }
    return running;
  }

  async #grant(): Promise<StoredGrant | undefined> {
    const grant = await this.options.records.grant(this.options.upstream, this.options.principal);
    this.#seenAccessToken = grant?.tokens.access_token;
    return grant;
  }

  #expiresSoon(grant: StoredGrant): boolean {
    const expiresIn = grant.tokens.expires_in;
    if (expiresIn === undefined) return false;
    return grant.obtainedAt + expiresIn * 1000 - this.options.refreshSkewMs <= this.options.now();
  }
}
