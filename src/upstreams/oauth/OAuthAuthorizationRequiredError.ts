/**
 * The calling principal has not authorized this OAuth upstream yet (or its
 * grant was revoked or no longer refreshes). Clients get the identity
 * layer's stable error (identityErrors.ts: `-32600`,
 * `data.authorizationRequired: true`) and, when taskvisor serves an OAuth
 * callback, `data.authorizeUrl`: a URL that starts an authorization bound to
 * this principal (state, single-use, expiring). The user opens it, consents,
 * the callback stores the grant, and the same call succeeds when retried.
 * Without a callback the message names the local flow
 * (`taskvisor upstreams auth`).
 *
 * Not `-32042` (URL elicitation required): the SDK refuses it on revision
 * 2026-07-28, where URL elicitation is an input request instead.
 *
 * The message never holds a URL (clients log messages); the URL is only in
 * the data of the principal it is bound to.
 */
import { UpstreamAuthorizationRequiredError } from '../identity/UpstreamCredentialSource.js';

export class OAuthAuthorizationRequiredError extends UpstreamAuthorizationRequiredError {
  constructor(upstream: string, authorizationUrl: URL | undefined) {
    super(
      upstream,
      `Upstream ${upstream} needs your authorization: ${
        authorizationUrl
          ? 'open the URL in error.data.authorizeUrl, then retry'
          : `run \`taskvisor upstreams auth ${upstream}\`, then retry`
      }`,
      authorizationUrl?.href,
    );
    this.name = 'OAuthAuthorizationRequiredError';
  }
}
