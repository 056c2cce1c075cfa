/**
 * The seam between per-principal upstream connections
 * ({@link UpstreamConnectionPool}) and whatever knows a principal's
 * credentials for an upstream: the caller's own bearer token passed through,
 * a token exchanged for the upstream's audience (RFC 8693), or the
 * principal's own OAuth grant to that upstream (an SDK `OAuthClientProvider`).
 */
import type { AuthProvider, OAuthClientProvider } from '@modelcontextprotocol/client';
import type { Principal } from '../../core/principal.js';

/** What a transport to one upstream needs to act as one principal. */
export interface UpstreamConnectionAuth {
  /** Headers added to every request of the connection (after the upstream's configured `headers`). */
  headers?: Record<string, string>;
  /**
   * Streamable HTTP's auth provider: an SDK `OAuthClientProvider` (the
   * principal's OAuth grant: discovery, PKCE, refresh) or a minimal
   * `AuthProvider` (`token()` asked before every request, so a refreshed
   * credential is used without reconnecting).
   */
  authProvider?: OAuthClientProvider | AuthProvider;
}

/**
 * Where per-principal connections get their credentials. The pool calls
 * `connectionAuth` before every use of a principal's connection (so an
 * unauthorized principal is refused before anything is sent upstream); a
 * connection is reused while the answer has the same headers and the same
 * `authProvider` object, and replaced when either changes.
 */
export interface UpstreamCredentialSource {
  /**
   * Transport options for a connection to `upstream` acting as `principal`:
   * headers to add, and/or an SDK OAuthClientProvider (authProvider) for
   * Streamable HTTP. Throws {@link UpstreamAuthorizationRequiredError}
   * (stable message, optional authorizeUrl for clients that can follow it)
   * when the principal has not authorized.
   */
  connectionAuth(upstream: string, principal: Principal): Promise<UpstreamConnectionAuth>;
  /** Forgets what is held for `principal` (revoked, signed out). Optional. */
  forget?(principal: string): void;
  /**
   * Credentials of the upstream's one shared connection (the one that reads
   * its catalog and health), for an upstream that answers nobody without
   * them (an OAuth upstream: the grant of its catalog principal). Optional:
   * without it the shared connection uses the configured headers only.
   */
  catalogAuth?(upstream: string): Promise<UpstreamConnectionAuth>;
}

/**
 * The principal cannot act on `upstream` yet: it has not authorized it, its
 * credential expired, or the credential cannot be exchanged. The message is
 * stable and safe for clients (no token, URL of an internal endpoint or
 * path); details go to the log. `authorizeUrl` is where a client that can
 * follow it sends its user (OAuth upstreams only).
 */
export class UpstreamAuthorizationRequiredError extends Error {
  constructor(
    readonly upstream: string,
    message: string,
    readonly authorizeUrl?: string,
  ) {
    super(message);
    this.name = 'UpstreamAuthorizationRequiredError';
  }
}
