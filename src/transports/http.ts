/**
 * Streamable HTTP: the SDK's `createMcpHandler` (modern serving, the SEP-2243
 * header ladder incl. `Mcp-Name` on `tasks/*`: T-60…T-63) and, for
 * 2025-11-25 clients, sessions (`LegacyHttpSessions`), behind a
 * front door that owns the path, the Host check and authentication (I-7).
 */
import { createServer, type IncomingMessage, type Server as NodeHttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { classifyInboundRequest, createMcpHandler, isJsonContentType, isLegacyRequest, type AuthInfo } from '@modelcontextprotocol/server';
import { admit, defaultAllowedOrigins, isLoopbackHost, LOOPBACK_HOSTS, untilServing } from './admission.js';
import { bearerGate, type BearerAuthOptions } from '../auth/bearer.js';
import { ANONYMOUS_PRINCIPAL, type Authenticate, type Principal } from '../core/principal.js';
import type { ServingRuntime } from './ServingRuntime.js';
import type { JsonObject } from '../core/json.js';
import { serveHttpListen } from './httpListen.js';
import { logTransportError } from './transportErrors.js';
import { clipErrorStrings } from '../core/clientText.js';
import { ErrorCode } from '../core/errors.js';
import { SUPPORTED_MODERN_VERSIONS } from '../protocol/listenRequest.js';
import { parsedBodyRefusalResponse, screenHttpBody, screenParsedBody } from './httpBodyScreen.js';
import { answerBodyReadByHost, answerNode, bodyReadByHost, hostPrincipalOf, type HostRequest } from './hostRequest.js';
import { clippedErrorResponse } from './clippedErrorResponse.js';
import { nodeRequestHandler } from './nodeAdapter.js';
import { ListenerGuard } from './listenerGuard.js';
import type { HttpRoutes } from './HttpRoutes.js';
import { LegacyHttpSessions } from './LegacyHttpSessions.js';
import { fastLaneDisabledByEnv, tasksFastLane } from './tasksFastLane.js';
import { HttpConnections } from './HttpConnections.js';
import { detachedReply } from './nodeReply.js';
import { publish } from '../core/diagnostics.js';
import { principalOutboundOf } from './PrincipalOutbound.js';
import { httpInboundGate } from './httpInboundGate.js';
import { inboundBudgetOf } from './InboundBudget.js';

export interface HttpEntryOptions {
  /** Path served; other paths get 404. Default `/mcp`. */
  path?: string;
  /**
   * Resolves each request's principal; `null` refuses it with 401. Default: one anonymous principal. Not with `auth`.
   * For a POST it is also called first with the head alone (no body), to charge the body to that principal before it
   * is read (`limits.maxInboundBodyBytesPerPrincipal`).
   */
  authenticate?: Authenticate;
  /**
   * Bearer-token authentication (MCP authorization, resource server side):
   * every request needs `Authorization: Bearer <token>` that `auth.verifier`
   * accepts, else HTTP 401 with `WWW-Authenticate`; the protected-resource
   * metadata document (RFC 9728) is served at
   * `/.well-known/oauth-protected-resource<path>`. Not with `authenticate`.
   */
  auth?: BearerAuthOptions;
  /**
   * Host header names accepted (DNS-rebinding protection). `listenHttp`
   * defaults to the loopback names when it binds to loopback; a mounted
   * `createHttpEntry` cannot see the bind address and checks nothing unless
   * given a list. `false` turns the check off.
   */
  allowedHosts?: string[] | false;
  /**
   * Origin host names accepted from browsers (a request without `Origin`,
   * i.e. a non-browser client, always passes); others get 403. `listenHttp`
   * defaults to the loopback names on loopback binds and to the
   * `allowedHosts` names (or none: every browser Origin refused) elsewhere;
   * a mounted entry checks nothing unless given a list.
   * `false` turns it off. No CORS headers are ever sent, wildcard or not.
   */
  allowedOrigins?: string[] | false;
  /**
   * The fast lane for `tasks/get|update|cancel` and task-creating
   * `tools/call`s (transports/tasksFastLane.ts): answered without
   * the SDK's per-request machinery, with the same answers. Default on (not with a custom `authenticate` hook);
   * `false`, or `TASKVISOR_HTTP_FAST_LANE=0`, sends every request through the SDK.
   */
  fastLane?: boolean;
  /** Largest request body in bytes. Default `runtime.limits.maxRequestBodyBytes`. */
  maxBodyBytes?: number;
  /** SSE keep-alive comment interval on listen streams, ms; 0 disables. Default 15 s. */
  keepAliveMs?: number;
  /**
   * Routes served next to MCP on the same listener (`/healthz`, `/readyz`,
   * `/metrics`, the dashboard: see `createOperations`); asked before the MCP
   * front door, they apply their own checks.
   */
  routes?: HttpRoutes;
}

/** A mounted HTTP entry: web-standard `fetch`, and a Node `(req, res)` handler. */
export interface HttpEntry {
  /** Serves a web-standard request (Hono, Next.js route handlers, Bun, Deno); `host` carries what the framework already did. */
  fetch(request: Request, host?: HostRequest): Promise<Response>;
  /**
   * Serves `req` when its path is ours and returns true; returns false (and leaves `res` alone) otherwise.
   * `parsedBody`: what a framework's parser already read (`req.body`), as in the SDK's `handleRequest(req, res,
   * parsedBody)`; `host.principal`: the host's own authentication (see HostRequest).
   */
  handleNode(req: IncomingMessage, res: ServerResponse, parsedBody?: unknown, host?: Pick<HostRequest, 'principal'>): boolean;
  /** The path served (`options.path`), for a framework route. */
  readonly path: string;
  /** The largest request body accepted, in bytes: give a framework's own body parser the same limit. */
  readonly maxBodyBytes: number;
  close(): Promise<void>;
}

/** Methods a recovering runtime answers instead of holding: from the store, or a retryable error. */
const ANSWERED_WHILE_RECOVERING: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

const optionalHeader = <K extends string>(key: K, value: string | null) =>
  (value === null ? {} : { [key]: value.trim() }) as Partial<Record<K, string>>;

/** Builds the HTTP entry of a runtime (requests wait until it is started). */
export function createHttpEntry(runtime: ServingRuntime, options: HttpEntryOptions = {}): HttpEntry {
  const path = options.path ?? '/mcp';
  if (options.auth && options.authenticate)
    throw new TypeError('createHttpEntry: give either auth (bearer tokens) or authenticate (a custom hook), not both');
  const authenticate: Authenticate = options.authenticate ?? (() => ANONYMOUS_PRINCIPAL);
  const bearer = options.auth ? bearerGate(options.auth, runtime.logger, runtime.serverInfo?.name, runtime.callerCredentials) : undefined;
  const principalOf = (authInfo: AuthInfo | undefined): Principal =>
    (authInfo?.extra?.principal as Principal | undefined) ?? ANONYMOUS_PRINCIPAL;
  const bodyLimits = {
    maxBodyBytes: options.maxBodyBytes ?? runtime.limits.maxRequestBodyBytes,
    maxJsonDepth: runtime.limits.maxJsonDepth,
    maxJsonKeys: runtime.limits.maxJsonKeys,
    maxJsonNodes: runtime.limits.maxJsonNodes,
    maxMetaNodes: runtime.limits.maxMetaNodes,
  };
  const factory = runtime.serverFactory((ctx) => principalOf(ctx.authInfo));
  const onerror = (error: Error) => logTransportError(runtime.logger, 'http', error);
  // 2025-era traffic never reaches this handler: it goes to the sessions below (routed with the SDK's own predicate).
  const handler = createMcpHandler(factory, { legacy: 'reject', maxRequestBodySize: bodyLimits.maxBodyBytes, onerror });
  const sessions = new LegacyHttpSessions({
    factory,
    // A session is a connection: it is told of list changes and subscribed resource updates.
    sessionFactory: runtime.serverFactory((ctx) => principalOf(ctx.authInfo), { connection: true }),
    limits: runtime.limits,
    logger: runtime.logger,
    onerror,
    maxBodyBytes: bodyLimits.maxBodyBytes,
    ...(bearer ? { trackSession: (principal: Principal, end: (reason: string) => void) => bearer.trackSession(principal, end) } : {}),
  });
  // Every reply of a Node request waits on its connection: pipelining bound and outbound budgets.
  const connections = new HttpConnections(runtime.limits, principalOutboundOf(runtime), runtime.logger);

  const entryAuthenticates = options.auth !== undefined || options.authenticate !== undefined;
  /** `fetch`, told the Node response if any (listen streams write to it), what the host did, and whether its body was judged. */
  const serve = async (request: Request, nodeResponse?: ServerResponse, host?: HostRequest, screened = false): Promise<Response> => {
    if (options.routes?.owns(new URL(request.url).pathname)) return options.routes.fetch(request);
    const hostPrincipal = hostPrincipalOf(host, entryAuthenticates);
    const admitted = await admit(request, {
      path,
      // The host's authentication answers in place of ours: the path, Host and Origin are still checked.
      authenticate: hostPrincipal === undefined ? authenticate : () => hostPrincipal,
      bearer: hostPrincipal === undefined ? bearer : undefined,
      allowedHosts: options.allowedHosts,
      allowedOrigins: options.allowedOrigins,
      logger: runtime.logger,
    });
    if (admitted instanceof Response) return admitted;
    if (nodeResponse) connections.bind(nodeResponse, admitted.id);
    // Bound before recovery: requests wait for the runtime to serve — except, while it
    // recovers, a 2026-07-28 tasks/get|update|cancel (named by its Mcp-Method header, T-60), answered from the
    // store or with a retryable error naming the state: recovery is not dark.
    if (!(runtime.recovering?.() === true && ANSWERED_WHILE_RECOVERING.has(request.headers.get('mcp-method')?.trim() ?? ''))) {
      const notServing = await untilServing(runtime);
      if (notServing) return notServing;
    }
    const principal = admitted;
    const authInfo: AuthInfo = { token: '', clientId: principal.id, scopes: [], extra: { principal } };
    // Size and nesting depth are refused before anything parses or validates the body (limits).
    let parsedBody: unknown;
    if (request.method === 'POST' && host?.parsedBody !== undefined) {
      // The framework read the stream: its value is judged instead, and the SDK is handed it (nothing reads again).
      const refused = screened ? undefined : screenParsedBody(host.parsedBody, request.headers.get('content-length'), bodyLimits);
      if (refused) return parsedBodyRefusalResponse(refused);
      parsedBody = host.parsedBody;
    } else if (request.method === 'POST') {
      const screened = await screenHttpBody(request, bodyLimits);
      if (screened instanceof Response) return screened;
      parsedBody = screened.parsedBody;
    }
    if (request.method === 'POST' && parsedBody !== undefined && request.headers.get('mcp-method')?.trim() === 'subscriptions/listen') {
      const listen = serveListen(request, principal, parsedBody, nodeResponse);
      if (listen) return listen;
    }
    // The SDK's refusals quote the client's values: cut them (core/clientText.ts).
    const response = await clippedErrorResponse(
      (await isLegacyRequest(request, parsedBody))
        ? await sessions.handle(request, principal, authInfo, parsedBody)
        : await handler.fetch(request, { authInfo, ...(parsedBody !== undefined ? { parsedBody } : {}) }),
    );
    // A JSON reply to a Node request goes out in one write: only its bytes wait for a client that does not read.
    return nodeResponse ? detachedReply(response, nodeResponse) : response;
  };

  /**
   * Owns modern `subscriptions/listen` (the SDK router strips `taskIds`, P8).
   * The request first passes the SDK's own inbound ladder, so headers,
   * envelope and era are judged exactly as for every other request (T-63).
   * Returns undefined to let the SDK answer (legacy traffic, unreadable bodies).
   */
  const serveListen = (request: Request, principal: Principal, body: unknown, nodeResponse?: ServerResponse): Response | undefined => {
    // Not JSON: the SDK answers 415 exactly as for any other POST.
    if (!isJsonContentType(request.headers.get('content-type'))) return undefined;
    const outcome = classifyInboundRequest({
      httpMethod: request.method,
      ...optionalHeader('protocolVersionHeader', request.headers.get('mcp-protocol-version')),
      ...optionalHeader('mcpMethodHeader', request.headers.get('mcp-method')),
      ...optionalHeader('mcpNameHeader', request.headers.get('mcp-name')),
      body,
    });
    const id = (body as { id?: unknown } | null)?.id;
    if (outcome.kind === 'reject') {
      return Response.json(
        {
          jsonrpc: '2.0',
          id: typeof id === 'string' || typeof id === 'number' ? id : null,
          error: clipErrorStrings({
            code: outcome.code,
            message: outcome.message,
            ...(outcome.data !== undefined ? { data: outcome.data } : {}),
          }),
        },
        { status: outcome.httpStatus },
      );
    }
    if (outcome.kind !== 'modern' || outcome.messageKind !== 'request' || outcome.message.method !== 'subscriptions/listen')
      return undefined;
    // T-63, §4.5: MCP-Protocol-Version is required on every modern request POST, listen included. The SDK's
    // presence rung (validateStandardRequestHeaders) is not exported, so its answer is mirrored here; an
    // unsupported version is left to parseListenRequest (-32022 first, as the SDK orders it).
    const claimed = outcome.classification.revision;
    if (request.headers.get('mcp-protocol-version') === null && claimed !== undefined && SUPPORTED_MODERN_VERSIONS.includes(claimed)) {
      const detail = `the body envelope names protocol version ${claimed} but the required MCP-Protocol-Version header is absent`;
      return Response.json(
        {
          jsonrpc: '2.0',
          id: outcome.message.id,
          error: {
            code: ErrorCode.HeaderMismatch,
            message: `Bad Request: the request headers and body disagree: ${detail}`,
            data: { mismatch: { header: '(missing)', body: detail } },
          },
        },
        { status: 400 },
      );
    }
    return serveHttpListen({
      hub: runtime.subscriptions,
      principal: principal.id,
      id: outcome.message.id,
      params: outcome.message.params,
      signal: request.signal,
      keepAliveMs: options.keepAliveMs ?? 15_000,
      maxOutboundBufferBytes: runtime.limits.maxOutboundBufferBytes,
      outboundGraceMs: runtime.limits.outboundGraceMs,
      onOverBudget: (reason) => {
        runtime.logger.info(`http: ending a listen stream of ${principal.id}: ${reason}`);
        publish('taskvisor:backpressure.close', () => ({ stream: 'sse' }));
      },
      ...(nodeResponse ? { countQueued: (queued: () => number) => connections.count(nodeResponse, queued) } : {}),
      // The stream ends when the token it was opened with expires or is revoked.
      ...(bearer ? { trackSession: (end: (reason: string) => void) => bearer.trackSession(principal, end) } : {}),
      direct: nodeResponse,
    });
  };
  const fetch = async (request: Request, host?: HostRequest): Promise<Response> => serve(request, undefined, host);

  // An adapter that knows its `res`: a listen stream's frames are written straight to it (no web stream between), and
  // the principal admitted is bound to the request's connection (outbound budget per principal).
  const node = (req: IncomingMessage, res: ServerResponse) =>
    nodeRequestHandler({ fetch: (request: Request) => serve(request, res) })(req, res);
  // Polls skip the Fetch conversion and the per-request SDK server; anything unusual still takes `node`.
  const lane =
    options.fastLane === false || fastLaneDisabledByEnv() || options.authenticate
      ? undefined
      : tasksFastLane(runtime, {
          bearer,
          path,
          allowedHosts: options.allowedHosts,
          allowedOrigins: options.allowedOrigins,
          ...bodyLimits,
          onAdmitted: (res, principal) => connections.bind(res, principal.id),
        });
  // Mounted in someone else's server too: the head check and failure containment travel with the entry.
  const guard = new ListenerGuard('http', runtime.logger);
  const detach = runtime.onClose(async () => {
    await sessions.close();
    await handler.close();
  });
  // Built once, not per request: the lane with the SDK path behind it.
  const laneNode = lane ? (req: IncomingMessage, res: ServerResponse) => lane(req, res, node) : undefined;
  // limits: maxInboundBodyBytes(PerPrincipal), requestBodyTimeoutMs — every POST body on the MCP path is paid for
  // before anything reads it (httpInboundGate.ts).
  const paid = httpInboundGate({
    budget: inboundBudgetOf(runtime, runtime.limits),
    limits: runtime.limits,
    maxBodyBytes: bodyLimits.maxBodyBytes,
    bearer,
    authenticate: options.authenticate,
    path,
    logger: runtime.logger,
  });
  const [paidNode, paidLane] = [paid(node), laneNode ? paid(laneNode) : undefined];
  /** The SDK path for a request the host framework already worked on (its parsed body was judged by the caller). */
  const hostNode = (host: HostRequest) => (req: IncomingMessage, res: ServerResponse) =>
    nodeRequestHandler({ fetch: (request: Request) => serve(request, res, host, true) })(req, res, host.parsedBody);
  return {
    fetch,
    path,
    maxBodyBytes: bodyLimits.maxBodyBytes,
    handleNode(req, res, parsedBody, host) {
      // A bad target or Host is answered here (400/414), before anything builds a URL from it.
      if (guard.refusedHead(req, res)) return true;
      // refusedHead left the target in origin form, `${pathname}${search}` of a parsed URL: its path is the part
      // before `?`, as `new URL` would give it again (no second parse per request).
      const target = req.url ?? '/';
      const query = target.indexOf('?');
      const pathname = query < 0 ? target : target.slice(0, query);
      const routes = options.routes;
      if (routes?.owns(pathname)) {
        // The routes learn the peer's address (operator access without auth is loopback only).
        const client = { remoteAddress: req.socket.remoteAddress };
        connections.dispatch(req, res, () =>
          guard.run(req, res, nodeRequestHandler({ fetch: (request: Request) => routes.fetch(request, client) })),
        );
        return true;
      }
      if (pathname !== path && pathname !== bearer?.metadataPath(path)) return false;
      // Express mounts handlers as (req, res, next): a function is its `next`, not a body. Only a POST has one.
      const body = typeof parsedBody === 'function' || req.method !== 'POST' ? undefined : parsedBody;
      if (body === undefined && bodyReadByHost(req)) {
        answerBodyReadByHost(res);
        return true;
      }
      if (body !== undefined || host !== undefined) {
        // A principal from the host on an entry with its own auth is a wiring mistake: thrown to the framework here.
        hostPrincipalOf(host, entryAuthenticates);
        // Judged before the adapter serializes it again: a value nested past the limit never reaches JSON.stringify.
        const refused = body === undefined ? undefined : screenParsedBody(body, req.headers['content-length'], bodyLimits);
        if (refused) answerNode(res, refused.status, refused.error);
        else
          connections.dispatch(req, res, () =>
            guard.run(req, res, hostNode({ ...host, ...(body !== undefined ? { parsedBody: body } : {}) })),
          );
        return true;
      }
      // A body the host has not read is paid for before it is (httpInboundGate.ts).
      connections.dispatch(req, res, () => guard.run(req, res, pathname !== path ? node : (paidLane ?? paidNode)));
      return true;
    },
    async close() {
      detach();
      bearer?.close();
      await sessions.close();
      await handler.close();
    },
  };
}
