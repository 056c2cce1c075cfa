/**
 * Whom an upstream sees behind a forwarded call (config
 * `upstreams[].identity`, docs/aggregator.md "Identity"):
 *
 * - `static`: taskvisor itself, with the configured `headers`, over one
 *   shared connection (the default);
 * - `passthrough`: the caller, with the caller's own bearer token (for an
 *   upstream that trusts taskvisor's token issuer);
 * - `tokenExchange`: the caller, with a token exchanged for the upstream's
 *   audience at an RFC 8693 token endpoint.
 */

/** RFC 8693 client authentication to the token endpoint (RFC 6749 §2.3.1). */
export type TokenEndpointAuthMethod = 'client_secret_basic' | 'client_secret_post';

/** An RFC 8693 token exchange for one upstream. */
export interface TokenExchangeIdentity {
  mode: 'tokenExchange';
  /** The authorization server's token endpoint (`https://`, or `http://` on a loopback address). */
  tokenEndpoint: string;
  /** RFC 8693 `audience`: the upstream as the authorization server names it. */
  audience?: string;
  /** RFC 8693 `resource`: the upstream's URL as a resource indicator (RFC 8707). */
  resource?: string;
  /** Space-separated scopes to request. */
  scope?: string;
  /** Default `urn:ietf:params:oauth:token-type:access_token`. */
  requestedTokenType?: string;
  /** taskvisor's client id at the token endpoint. */
  clientId: string;
  /** taskvisor's client secret (the config takes it from an environment variable or a file, never inline). */
  clientSecret: string;
  /** Default `client_secret_basic`. */
  clientAuthMethod?: TokenEndpointAuthMethod;
}

/**
 * Each principal's own OAuth grant to the upstream (MCP authorization): its
 * settings live with the OAuth authority (upstreams/oauth), which the
 * runtime receives as the upstream's credential source.
 */
export interface OAuthIdentity {
  mode: 'oauth';
}

export type UpstreamIdentity = { mode: 'static' } | { mode: 'passthrough' } | TokenExchangeIdentity | OAuthIdentity;

export type UpstreamIdentityMode = UpstreamIdentity['mode'];

/** Whether calls to an upstream with `identity` carry the caller's own bearer token (passed on or exchanged). */
export function actsAsCaller(identity: UpstreamIdentity | undefined): boolean {
  return identity?.mode === 'passthrough' || identity?.mode === 'tokenExchange';
}
