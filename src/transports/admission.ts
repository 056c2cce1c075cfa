/**
 * The front-door checks every network entry (Streamable HTTP, WebSocket
 * upgrade) makes before any MCP processing: the path, the Host header
 * (DNS-rebinding protection), the Origin header, then authentication (I-7,
 * T-10): bearer tokens through a `BearerGate`, or a custom `Authenticate`.
 */
import { hostHeaderValidationResponse, originValidationResponse } from '@modelcontextprotocol/server';
import type { BearerGate } from '../auth/bearer.js';
import type { Authenticate, Principal } from '../core/principal.js';
import type { Logger } from '../runtime/Logger.js';
import { scrubErrorText } from './transportErrors.js';
import type { ServingRuntime } from './ServingRuntime.js';

/** Host and Origin names accepted by default on loopback binds. */
export { LOOPBACK_HOSTS } from '../core/constants.js';
import { LOOPBACK_HOSTS as LOOPBACK_HOST_NAMES } from '../core/constants.js';

/** Whether `host` is a loopback bind address. */
export const isLoopbackHost = (host: string): boolean => host === '127.0.0.1' || host === 'localhost' || host === '::1';

/**
 * The Origin names a listener accepts when none are configured:
 * the loopback names on a loopback bind; elsewhere the configured Host names,
 * or none at all — a browser request (it carries `Origin`) is then refused
 * unless listed, so no web page can drive the server through a visitor's
 * browser (cross-site WebSocket hijacking). Clients without `Origin` pass.
 */
export function defaultAllowedOrigins(isLoopback: boolean, allowedHosts: string[] | false | undefined): string[] {
  if (isLoopback) return [...LOOPBACK_HOST_NAMES];
  return Array.isArray(allowedHosts) ? allowedHosts.map((host) => host.replace(/:\d+$/, '')) : [];
}

/** A JSON-RPC error as a plain HTTP response (no request id is known at the door). */
export const jsonError = (status: number, code: number, message: string, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

export interface AdmissionOptions {
  path: string;
  authenticate: Authenticate;
  /** Bearer authentication; when present it replaces `authenticate` and its metadata document is served. */
  bearer?: BearerGate | undefined;
  /** What `bearer` already answered for this request's head (the inbound-body gate's outcome): used instead of verifying again. */
  bearerOutcome?: Principal | Response | undefined;
  allowedHosts?: string[] | false | undefined;
  allowedOrigins?: string[] | false | undefined;
  logger: Logger;
}

/** The principal of `request`, or the HTTP response refusing it. */
export async function admit(request: Request, options: AdmissionOptions): Promise<Principal | Response> {
  const pathname = new URL(request.url).pathname;
  const isMetadata = options.bearer !== undefined && pathname === options.bearer.metadataPath(options.path);
  if (pathname !== options.path && !isMetadata) {
    return jsonError(404, -32601, `Not found: MCP is served at ${options.path}`);
  }
  if (options.allowedHosts) {
    const rejected = hostHeaderValidationResponse(request, options.allowedHosts);
    if (rejected) return rejected;
  }
  if (options.allowedOrigins) {
    const rejected = originValidationResponse(request, options.allowedOrigins);
    if (rejected) return rejected;
  }
  if (options.bearer) {
    // The metadata document is public (it is how a client learns where to get a token).
    if (isMetadata) return options.bearer.metadataResponse(request, options.path);
    return options.bearerOutcome ?? options.bearer.authenticate(request, options.path);
  }
  let principal: Principal | null;
  try {
    principal = await options.authenticate(request);
  } catch (error) {
    // A hook's error may quote the credentials it was given: only a scrubbed line reaches the log.
    options.logger.error('authenticate failed', scrubErrorText(error));
    principal = null;
  }
  // -32600, not -32001: that number was HeaderMismatch in drafts (D-01/D-14) and would mislead clients.
  if (!principal) return jsonError(401, -32600, 'Unauthorized: this endpoint requires authentication', { 'www-authenticate': 'Bearer' });
  return principal;
}

/**
 * `undefined` once the runtime serves; otherwise the answer to give when it
 * never will (it closed, or its store failed to open). Listeners bound before
 * recovery hold each request here until recovery is done.
 */
export async function untilServing(runtime: Pick<ServingRuntime, 'ready'>): Promise<Response | undefined> {
  try {
    await runtime.ready?.();
    return undefined;
  } catch {
    return jsonError(503, -32603, 'The server is not serving: it is stopping or failed to start');
  }
}
