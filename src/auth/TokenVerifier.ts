/**
 * The seam between the network entries (Streamable HTTP, WebSocket) and an
 * identity source: a bearer token in, a principal out (I-7, T-10). Built-in
 * verifiers: {@link tokenFileVerifier} (a static token file) and
 * {@link jwtVerifier} (JWTs checked with `jose`); any object with `verify`
 * plugs in the same way.
 */
import type { Principal } from '../core/principal.js';

/** What a verifier learned from an accepted token. */
export interface VerifiedToken {
  /** Who the token speaks for; tasks created with it are bound to `principal.id`. */
  principal: Principal;
  /** OAuth scopes the token grants (checked against `requiredScopes`). */
  scopes?: readonly string[];
  /** When the token stops being valid (epoch ms), e.g. a JWT's `exp`; open connections authenticated with it end then. */
  expiresAt?: number;
}

/**
 * Turns a bearer token into a principal. `verify` resolves the
 * {@link VerifiedToken} or rejects with {@link InvalidTokenError} (HTTP 401
 * `invalid_token`); any other rejection is treated as a server fault (HTTP
 * 503, logged without the token) — e.g. an identity provider that cannot be
 * reached.
 */
export interface TokenVerifier {
  verify(token: string): Promise<VerifiedToken>;
  /**
   * Subscribes to changes of the set of valid tokens (a token file reloaded):
   * open sessions are then verified again and revoked ones end.
   * Returns the unsubscribe function. Optional.
   */
  onChange?(listener: () => void): () => void;
  /** Releases what the verifier holds (timers, caches). Optional. */
  close?(): void | Promise<void>;
}

/**
 * A token the verifier refuses. The message goes to the client in the
 * `WWW-Authenticate` `error_description`, so it must never contain the token
 * or anything secret.
 */
export class InvalidTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidTokenError';
  }
}
