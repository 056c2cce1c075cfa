/**
 * `-32042` (MCP URL elicitation required): the calling principal has not
 * authorized this OAuth upstream yet (or its grant was revoked or no longer
 * refreshes). Stable for every such call, with or without a URL:
 *
 * - when taskvisor serves an OAuth callback, `data.elicitations[0]` is a
 *   `mode: "url"` elicitation whose URL starts an authorization bound to this
 *   principal (state, single-use, expiring) — a client that follows URL
 *   elicitations opens it, the user consents, the callback stores the grant,
 *   and the same call succeeds when retried;
 * - otherwise `data.command` names the local flow (`taskvisor upstreams auth`).
 *
 * The message never holds a URL (clients log messages); the URL is only in
 * the data of the principal it is bound to. It carries `code` and `data`, so
 * the wire boundary (`protocol/errors.ts`) answers exactly them.
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../../core/errors.js';
import { UpstreamAuthorizationRequiredError } from '../identity/UpstreamCredentialSource.js';

export class OAuthAuthorizationRequiredError extends UpstreamAuthorizationRequiredError {
  readonly code = ErrorCode.UrlElicitationRequired;
  readonly data: Record<string, unknown>;

  constructor(upstream: string, authorizationUrl: URL | undefined) {
    super(
      upstream,
      `upstream ${upstream} needs your authorization: ${
        authorizationUrl
          ? 'open the URL in error.data.elicitations[0].url, then retry'
          : `run \`taskvisor upstreams auth ${upstream}\`, then retry`
      }`,
      authorizationUrl?.href,
    );
    this.name = 'OAuthAuthorizationRequiredError';
    this.data = authorizationUrl
      ? {
          upstream,
          authorizationRequired: true,
          authorizeUrl: authorizationUrl.href,
          elicitations: [
            {
              mode: 'url',
              elicitationId: randomUUID(),
              url: authorizationUrl.href,
              message: `Authorize taskvisor to call ${upstream} for you`,
            },
          ],
        }
      : { upstream, authorizationRequired: true, elicitations: [], command: `taskvisor upstreams auth ${upstream}` };
  }
}
