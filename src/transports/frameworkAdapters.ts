/**
 * The HTTP entry mounted in the Node web frameworks services already run
 * (docs/frameworks.md): Express 5 (and Connect), a Fastify 5 plugin, Koa.
 * Hono and any fetch-style host call `entry.fetch` directly. The shapes are
 * structural, so taskvisor depends on none of the frameworks: each helper
 * only hands the entry what the framework already did — the parsed body and,
 * when asked, the principal of the framework's own authentication — and
 * keeps the framework from answering a request the entry took.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../core/principal.js';
import { limitExceededError } from '../limits/Limits.js';
import type { HttpEntry } from './http.js';
import type { HostRequest } from './hostRequest.js';

/** How a framework helper learns the principal of a request from the framework's own authentication. */
export interface HostPrincipalOptions<R> {
  /**
   * The principal the framework's auth middleware established for `request` (`null`: nobody, refused with 401).
   * Omitted: the entry authenticates by itself (its `auth` or `authenticate`, else one anonymous principal).
   */
  principal?: (request: R) => Principal | null;
}

const hostOf = <R>(options: HostPrincipalOptions<R>, request: R): Pick<HostRequest, 'principal'> | undefined =>
  options.principal ? { principal: options.principal(request) } : undefined;

/** An Express (or Connect) request: a Node request with the body `express.json()` may have parsed. */
export type ExpressLikeRequest = IncomingMessage & { body?: unknown };

/**
 * Express 5 middleware serving the entry's path: `app.use(taskvisorExpress(entry))`, before or after
 * `express.json()` (a body it parsed is handed in and judged by the entry's limits). Other paths go to `next`.
 */
export function taskvisorExpress<R extends ExpressLikeRequest>(
  entry: HttpEntry,
  options: HostPrincipalOptions<R> = {},
): (req: R, res: ServerResponse, next: (error?: unknown) => void) => void {
  return (req, res, next) => {
    try {
      if (!entry.handleNode(req, res, req.body, hostOf(options, req))) next();
    } catch (error) {
      next(error);
    }
  };
}

/** What the Fastify plugin uses of a Fastify request. */
export interface FastifyLikeRequest {
  raw: IncomingMessage;
  body?: unknown;
}

/** What the Fastify plugin uses of a Fastify reply. */
export interface FastifyLikeReply {
  raw: ServerResponse;
  hijack(): unknown;
  code(status: number): FastifyLikeReply;
  send(payload?: unknown): unknown;
}

/** What the Fastify plugin uses of a Fastify instance: one route. */
export interface FastifyLikeInstance<Q extends FastifyLikeRequest, P extends FastifyLikeReply> {
  route(options: {
    method: string[];
    url: string;
    bodyLimit: number;
    handler: (request: Q, reply: P) => void;
    errorHandler: (error: { statusCode?: number }, request: Q, reply: P) => void;
  }): unknown;
}

/**
 * A Fastify 5 plugin serving the entry's path (GET, POST, DELETE): `await app.register(taskvisorFastify(entry))`.
 * Fastify parses the JSON body with the entry's `maxBodyBytes` as its `bodyLimit`; the entry judges the parsed
 * value and then owns the raw response (`reply.hijack()`). A body Fastify refuses gets the entry's own answers:
 * 413 with the `maxRequestBodyBytes` limit error, or a JSON-RPC parse error.
 */
export function taskvisorFastify<Q extends FastifyLikeRequest, P extends FastifyLikeReply>(
  entry: HttpEntry,
  options: HostPrincipalOptions<Q> = {},
): (fastify: FastifyLikeInstance<Q, P>) => Promise<void> {
  return (fastify) => {
    fastify.route({
      method: ['GET', 'POST', 'DELETE'],
      url: entry.path,
      bodyLimit: entry.maxBodyBytes,
      handler: (request, reply) => {
        // A wiring mistake throws before anything is written: Fastify's error handling (and log) then sees it.
        const handled = entry.handleNode(request.raw, reply.raw, request.body, hostOf(options, request));
        reply.hijack();
        if (!handled) reply.raw.writeHead(404).end();
      },
      errorHandler: (error, _request, reply) => {
        const status = error.statusCode === 400 || error.statusCode === 413 || error.statusCode === 415 ? error.statusCode : 500;
        reply.code(status).send({ jsonrpc: '2.0', id: null, error: fastifyRefusal(status, entry.maxBodyBytes) });
      },
    });
    return Promise.resolve();
  };
}

/** The entry's own answer to a body Fastify refused before the entry saw it. */
function fastifyRefusal(status: number, maxBodyBytes: number): { code: number; message: string; data?: unknown } {
  if (status === 413) return limitExceededError('maxRequestBodyBytes', maxBodyBytes, 'the request body is too large');
  if (status === 400) return { code: -32700, message: 'Parse error: the request body is not valid JSON' };
  if (status === 415) return { code: -32000, message: 'Unsupported Media Type: Content-Type must be application/json' };
  return { code: -32603, message: 'Internal error' };
}

/** What the Koa middleware uses of a Koa context (`ctx.request.body` is set by a body parser such as @koa/bodyparser). */
export interface KoaLikeContext {
  req: IncomingMessage;
  res: ServerResponse;
  respond?: boolean;
  request: { body?: unknown };
}

/**
 * Koa middleware serving the entry's path: `app.use(taskvisorKoa(entry))`, before or after a body parser. A
 * request the entry takes is its own (`ctx.respond = false`, so Koa does not answer it again); others go on.
 */
export function taskvisorKoa<C extends KoaLikeContext>(
  entry: HttpEntry,
  options: HostPrincipalOptions<C> = {},
): (ctx: C, next: () => Promise<unknown>) => Promise<void> {
  return async (ctx, next) => {
    if (entry.handleNode(ctx.req, ctx.res, ctx.request.body, hostOf(options, ctx))) {
      ctx.respond = false;
      return;
    }
    await next();
  };
}
