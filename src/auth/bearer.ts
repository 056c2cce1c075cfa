/**
 * Bearer authentication for the network entries, following the MCP
 * authorization spec for resource servers: the token comes only from the
 * `Authorization: Bearer` header (never the query string); a request without
 * a usable token gets HTTP 401 with `WWW-Authenticate: Bearer
 * resource_metadata="…"` (RFC 6750 §3, RFC 9728 §5.1), a token lacking a
 * required scope gets 403 `insufficient_scope`, and the OAuth Protected
 * Resource Metadata document (RFC 9728) is served at
 * `/.well-known/oauth-protected-resource<path>` so clients can find the
 * authorization server.
 */
import type { Principal } from '../core/principal.js';
import type { Logger } from '../runtime/Logger.js';
import { InvalidTokenError, type TokenVerifier } from './TokenVerifier.js';
import { CredentialSessions } from './CredentialSessions.js';
import type { CallerCredentials } from './CallerCredentials.js';

/** Bearer authentication of an HTTP or WebSocket entry. */
export interface BearerAuthOptions {
  /** Turns a token into a principal: {@link tokenFileVerifier}, {@link jwtVerifier} or your own. */
  verifier: TokenVerifier;
  /**
   * The public URL of the MCP endpoint, as clients reach it (RFC 9728
   * `resource`, e.g. `https://mcp.example.com/mcp`). Default: the URL of each
   * request (its Host header and the entry's path) — set it behind a proxy.
   */
  resource?: string;
  /** Authorization servers to advertise in the metadata document (e.g. the JWT issuer). */
  authorizationServers?: string[];
  /** Scopes every token must carry; a token without them gets 403 `insufficient_scope`. */
  requiredScopes?: string[];
  /** Scopes to advertise in the metadata document. Default: `requiredScopes`. */
  scopesSupported?: string[];
  /**
   * Human-readable name in the metadata document (`resource_name`). Default:
   * the serving runtime's name (`createRuntime({ name })`, config
   * `server.name`; `taskvisor` when neither is given).
   */
  resourceName?: string;
}

/** What authentication reads of a request: its URL and headers (a web `Request`, or the HTTP fast lane's view of a Node request). */
export interface RequestHead {
  readonly url: string;
  readonly headers: { get(name: string): string | null };
}

/** The front-door half of bearer authentication, shared by every network entry. */
export interface BearerGate {
  /** The path of the metadata document for an entry served at `entryPath`. */
  metadataPath(entryPath: string): string;
  /** The metadata document (GET/HEAD), or 405. */
  metadataResponse(request: Request, entryPath: string): Response;
  /** The request's principal, or the 401/403/503 answer. */
  authenticate(request: RequestHead, entryPath: string): Promise<Principal | Response>;
  /**
   * Ties a long-lived session (a WebSocket connection, a listen stream) of a
   * principal this gate authenticated to its token: `end(reason)` is called
   * when the token expires or is revoked. Returns the untrack
   * function (a no-op for principals the gate did not authenticate).
   */
  trackSession(principal: Principal, end: (reason: string) => void): () => void;
  /** Stops watching sessions (the listener is closing). */
  close(): void;
}

const WELL_KNOWN = '/.well-known/oauth-protected-resource';
// RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** An RFC 7230 quoted-string: `\` and `"` escaped, anything unprintable replaced. */
const quoted = (value: string) => `"${value.replace(/[\\"]/g, '\\$&').replace(/[^\x20-\x7e]/g, ' ')}"`;

/** A JSON-RPC error body on an HTTP status (no request id is known at the door). */
const refusal = (status: number, code: number, message: string, headers: Record<string, string>) =>
  new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  });

/**
 * Builds the gate for `options`; `serverName` is the `resource_name` when
 * `options.resourceName` is absent. `callers`, when given, is told each
 * principal's accepted token (upstreams that act as the caller forward it or
 * exchange it) and rechecks them when the verifier's tokens change.
 */
export function bearerGate(options: BearerAuthOptions, logger: Logger, serverName?: string, callers?: CallerCredentials): BearerGate {
  const resourceName = options.resourceName ?? serverName;
  const configuredResource = options.resource === undefined ? undefined : new URL(options.resource);
  const resourceOf = (request: RequestHead, entryPath: string): URL =>
    configuredResource ?? new URL(entryPath, new URL(request.url).origin);
  const metadataPath = (entryPath: string) => {
    const resourcePath = (configuredResource?.pathname ?? entryPath).replace(/\/+$/, '');
    return `${WELL_KNOWN}${resourcePath}`;
  };
  const metadataUrl = (request: RequestHead, entryPath: string) =>
    new URL(metadataPath(entryPath), resourceOf(request, entryPath).origin).href;
  const required = options.requiredScopes ?? [];
  // The credential behind each principal object this gate handed out (one fresh object per request).
  const credentials = new WeakMap<Principal, { token: string; expiresAt?: number }>();
  const sessions = new CredentialSessions(options.verifier, logger);
  const unwatchCallers = callers ? options.verifier.onChange?.(() => void callers.recheck(options.verifier)) : undefined;

  const challenge = (request: RequestHead, entryPath: string, error?: { code: string; description: string }) => {
    const parts = [
      ...(error ? [`error=${quoted(error.code)}`, `error_description=${quoted(error.description)}`] : []),
      ...(required.length ? [`scope=${quoted(required.join(' '))}`] : []),
      `resource_metadata=${quoted(metadataUrl(request, entryPath))}`,
    ];
    return { 'www-authenticate': `Bearer ${parts.join(', ')}` };
  };

  return {
    metadataPath,
    metadataResponse(request, entryPath) {
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return refusal(405, -32600, `Method ${request.method} not allowed here`, { allow: 'GET, HEAD' });
      }
      const scopes = options.scopesSupported ?? required;
      const document = {
        resource: resourceOf(request, entryPath).href,
        ...(options.authorizationServers?.length ? { authorization_servers: options.authorizationServers } : {}),
        bearer_methods_supported: ['header'],
        ...(scopes.length ? { scopes_supported: scopes } : {}),
        ...(resourceName ? { resource_name: resourceName } : {}),
      };
      // No CORS headers: taskvisor never answers with a wildcard Access-Control-Allow-Origin.
      return new Response(request.method === 'HEAD' ? null : JSON.stringify(document), {
        status: 200,
        headers: { 'content-type': 'application/json', 'cache-control': 'max-age=300' },
      });
    },
    async authenticate(request, entryPath) {
      const header = request.headers.get('authorization');
      if (header === null || header.trim() === '') {
        // MCP authorization: access tokens MUST NOT travel in the query string; say so instead of a bare challenge.
        if (new URL(request.url).searchParams.has('access_token')) {
          return refusal(
            401,
            -32600,
            'Unauthorized: access tokens are accepted only in the Authorization header',
            challenge(request, entryPath, {
              code: 'invalid_request',
              description: 'Access tokens are accepted only in the Authorization header',
            }),
          );
        }
        // RFC 6750 §3.1: no error code when the request carried no credentials.
        return refusal(401, -32600, 'Unauthorized: this endpoint requires a bearer token', challenge(request, entryPath));
      }
      const token = BEARER.exec(header)?.[1];
      if (token === undefined) {
        return refusal(
          401,
          -32600,
          'Unauthorized: expected Authorization: Bearer <token>',
          challenge(request, entryPath, {
            code: 'invalid_request',
            description: 'Expected Authorization: Bearer <token>',
          }),
        );
      }
      let verified;
      try {
        verified = await options.verifier.verify(token);
      } catch (error) {
        if (error instanceof InvalidTokenError) {
          return refusal(
            401,
            -32600,
            `Unauthorized: ${error.message}`,
            challenge(request, entryPath, { code: 'invalid_token', description: error.message }),
          );
        }
        // The verifier could not decide (identity provider unreachable): not the client's fault. Logged without the token.
        logger.error('token verification unavailable', error instanceof Error ? `${error.name}: ${error.message}` : 'unknown error');
        return refusal(503, -32603, 'Authentication is temporarily unavailable', { 'retry-after': '5' });
      }
      const granted = new Set(verified.scopes ?? []);
      const missing = required.filter((scope) => !granted.has(scope));
      if (missing.length > 0) {
        return refusal(
          403,
          -32600,
          `Forbidden: the access token lacks the scope ${missing.join(' ')}`,
          challenge(request, entryPath, {
            code: 'insufficient_scope',
            description: `The access token lacks the scope ${missing.join(' ')}`,
          }),
        );
      }
      const principal: Principal = { ...verified.principal };
      const credential = { token, ...(verified.expiresAt !== undefined ? { expiresAt: verified.expiresAt } : {}) };
      credentials.set(principal, credential);
      callers?.remember(principal.id, credential);
      return principal;
    },
    trackSession(principal, end) {
      const credential = credentials.get(principal);
      return credential ? sessions.track(principal.id, credential, end) : () => {};
    },
    close: () => {
      unwatchCallers?.();
      sessions.close();
    },
  };
}
