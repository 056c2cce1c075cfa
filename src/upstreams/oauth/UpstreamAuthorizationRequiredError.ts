/**
 * `-32042` (MCP URL elicitation required): the calling principal has not
 * authorized this upstream yet (or its grant was revoked or no longer
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
 * the data of the principal it is bound to.
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode, TaskvisorError } from '../../core/errors.js';

export class UpstreamAuthorizationRequiredError extends TaskvisorError {
  constructor(
    readonly upstream: string,
    authorizationUrl: URL | undefined,
  ) {
    const message = `upstream ${upstream} needs your authorization: ${
      authorizationUrl ? 'open the URL in error.data.elicitations[0].url, then retry' : `run \`taskvisor upstreams auth ${upstream}\`, then retry`
    }`;
    super(
      ErrorCode.UrlElicitationRequired,
      message,
      authorizationUrl
        ? {
            upstream,
            elicitations: [
              { mode: 'url', elicitationId: randomUUID(), url: authorizationUrl.href, message: `Authorize taskvisor to call ${upstream} for you` },
            ],
          }
        : { upstream, elicitations: [], command: `taskvisor upstreams auth ${upstream}` },
    );
  }
}
