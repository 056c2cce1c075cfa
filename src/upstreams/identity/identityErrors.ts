/**
 * Why a principal's connection to an upstream could not be had, as the
 * client sees it: stable messages, never a token, a URL of an internal
 * endpoint or a path (those stay in the log).
 */
import { ProtocolError } from '@modelcontextprotocol/server';
import { ErrorCode } from '../../core/errors.js';
import { IdentityServiceUnavailableError } from './TokenExchangeCredentials.js';
import { UpstreamAuthorizationRequiredError } from './UpstreamCredentialSource.js';
import { UpstreamPoolFullError } from './UpstreamConnectionPool.js';

/**
 * The client's error for `error` (thrown getting `upstream`'s connection for
 * a principal), or `undefined` when it is none of the identity errors.
 *
 * - authorization required: `-32600`, `data.authorizationRequired: true`
 *   (and `data.authorizeUrl` where the principal can authorize), not retryable as is;
 * - pool full, identity service down: `-32603`, `data.retryable: true`.
 */
export function identityProtocolError(error: unknown): ProtocolError | undefined {
  if (error instanceof UpstreamAuthorizationRequiredError) {
    return new ProtocolError(ErrorCode.InvalidRequest, error.message, {
      upstream: error.upstream,
      authorizationRequired: true,
      ...(error.authorizeUrl !== undefined ? { authorizeUrl: error.authorizeUrl } : {}),
    });
  }
  if (error instanceof UpstreamPoolFullError || error instanceof IdentityServiceUnavailableError) {
    return new ProtocolError(ErrorCode.InternalError, error.message, { upstream: error.upstream, retryable: true });
  }
  return undefined;
}

/** The upstream answered 401 to a request made with the caller's own (passed-through or exchanged) credential. */
export function upstreamRefusedCaller(upstream: string): UpstreamAuthorizationRequiredError {
  return new UpstreamAuthorizationRequiredError(
    upstream,
    `Upstream ${upstream} acts as the caller and did not accept your credentials; ask its administrator for access`,
  );
}
