/**
 * What a host web framework (Express, Fastify, Koa, Hono, a fetch-style
 * route) hands the HTTP entry along with a request: the body its parser
 * already read, and the principal its own authentication established. The
 * entry judges the first by its own body limits and never reads the stream
 * again; the second takes the place of the entry's authentication (I-7: the
 * task owner is still one principal per request, named by the host).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../core/principal.js';

/** What the host framework already did for one request (docs/frameworks.md). */
export interface HostRequest {
  /**
   * The JSON body the host's parser read (`req.body`). It is judged by the entry's limits (size: the larger of
   * its `Content-Length` and its re-serialized bytes; depth, keys, values) and nothing is read from the stream.
   * Only a POST's body is used; `undefined` means "not parsed": the entry reads the body itself.
   */
  parsedBody?: unknown;
  /**
   * The principal the host's own authentication established. When the property is present it replaces the
   * entry's authentication for this request; `null` (or anything that is not a principal with a non-empty `id`)
   * refuses it with 401, so a route whose auth middleware found nobody fails closed. An entry built with `auth`
   * or `authenticate` authenticates by itself and refuses a principal from the host (TypeError).
   */
  principal?: Principal | null;
}

/** The principal the host named, `null` to refuse, or `undefined` when the host named none (the entry authenticates). */
export function hostPrincipalOf(host: HostRequest | undefined, entryAuthenticates: boolean): Principal | null | undefined {
  if (host === undefined || !Object.hasOwn(host, 'principal')) return undefined;
  // Two sources of identity for one request would leave it unclear which one owns the task (I-7): refused loudly.
  if (entryAuthenticates)
    throw new TypeError('taskvisor HTTP entry: a principal from the host was given, but the entry has its own auth or authenticate');
  const principal: unknown = host.principal;
  return isPrincipal(principal) ? principal : null;
}

const isPrincipal = (value: unknown): value is Principal =>
  typeof value === 'object' && value !== null && typeof (value as { id?: unknown }).id === 'string' && (value as Principal).id.length > 0;

/**
 * Whether a POST's body was consumed before the entry saw it (a body parser in front of it) while no parsed
 * body was handed in: reading it again would wait for bytes that never come.
 */
export const bodyReadByHost = (req: IncomingMessage): boolean => req.method === 'POST' && req.readableDidRead;

/** The answer to such a request: the server is wired wrongly, and the operator learns how to fix it. */
export function answerBodyReadByHost(res: ServerResponse): void {
  answerNode(res, 500, {
    code: -32603,
    message: 'Internal error: a body parser in front of the MCP entry already read the request body; pass the parsed body to handleNode',
  });
}

/** A JSON-RPC error written straight to a Node response (no request id is known here). */
export function answerNode(res: ServerResponse, status: number, error: { code: number; message: string; data?: unknown }): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id: null, error });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}
