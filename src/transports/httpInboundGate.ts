/**
 * The HTTP side of the inbound budget (InboundBudget.ts), in front of every
 * handler that reads a POST body (the fast lane, the SDK's Node adapter,
 * listens, 2025-11-25 sessions): the principal is resolved from the request
 * head, the body's declared size is reserved against that principal's budget
 * and the server's, and only then is the body read. A request past either
 * budget is refused without reading it (429 with `Retry-After` for the
 * principal's own, 503 for the server's) and its connection is closed. A body
 * that has not fully arrived within `requestBodyTimeoutMs` is dropped with its
 * connection, and its bytes are freed.
 *
 * With a bearer gate, the outcome reached here is handed on with the request
 * (headAuthentication.ts): the fast lane and admission use it instead of
 * verifying the token again (one verification per request). A custom
 * `authenticate` hook is called here with the head only and again, with the
 * whole request, by admission. The principal here decides whose budget pays;
 * a request that fails authentication pays from one budget shared by all
 * unauthenticated requests.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BearerGate } from '../auth/bearer.js';
import { ANONYMOUS_PRINCIPAL, type Authenticate } from '../core/principal.js';
import { limitExceededError, type Limits } from '../limits/Limits.js';
import type { Logger } from '../runtime/Logger.js';
import { rememberHeadAuthentication } from './headAuthentication.js';
import { InboundBudget } from './InboundBudget.js';
import type { RequestHandler } from './listenerGuard.js';

/** The budget key of requests whose head does not authenticate (no principal id can be this: ids are printable). */
const UNAUTHENTICATED = '\u0000unauthenticated';
/** What a refused client is told to wait, seconds. */
const RETRY_AFTER_SECONDS = '1';

export interface HttpInboundGateOptions {
  limits: Pick<Limits, 'maxInboundBodyBytesPerPrincipal' | 'maxInboundBodyBytes' | 'requestBodyTimeoutMs'>;
  /** Largest body read at all; a longer declared one is refused by the handlers behind before any byte is read. */
  maxBodyBytes: number;
  /** The entry's authentication: a bearer gate, a custom hook (called with the head only), or neither (anonymous). */
  bearer?: BearerGate | undefined;
  authenticate?: Authenticate | undefined;
  /** The entry's path (bearer challenges name it). */
  path: string;
  logger: Logger;
  /** Shared by every entry of a runtime; default one of its own. */
  budget?: InboundBudget;
}

/** Wraps request handlers so that each POST body is paid for before it is read. */
export function httpInboundGate(options: HttpInboundGateOptions): (next: RequestHandler) => RequestHandler {
  const budget = options.budget ?? new InboundBudget(options.limits);
  const principalOf = headPrincipal(options);
  return (next) => (req, res) => {
    const bytes = bodyBytes(req, options.maxBodyBytes);
    if (bytes === 0) return next(req, res);
    watchBodyDeadline(req, res, options.limits.requestBodyTimeoutMs, options.logger);
    const principal = principalOf(req);
    if (typeof principal === 'string') return admitBody(req, res, next, principal, bytes);
    return principal.then((id) => admitBody(req, res, next, id, bytes));
  };

  function admitBody(req: IncomingMessage, res: ServerResponse, next: RequestHandler, principal: string, bytes: number) {
    if (res.destroyed) return;
    const reserved = budget.reserve(principal, bytes);
    if (typeof reserved === 'function') {
      // Given back once the answer is out or the connection is gone (the body lives until then).
      res.once('close', reserved);
      return next(req, res);
    }
    const [status, limit, max] =
      reserved === 'principal'
        ? ([429, 'maxInboundBodyBytesPerPrincipal', options.limits.maxInboundBodyBytesPerPrincipal] as const)
        : ([503, 'maxInboundBodyBytes', options.limits.maxInboundBodyBytes] as const);
    const error = limitExceededError(limit, max, 'too many request-body bytes are being received; retry later');
    const body = JSON.stringify({ jsonrpc: '2.0', id: null, error });
    // Connection: close — the body is never read, so the connection cannot carry another request.
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'retry-after': RETRY_AFTER_SECONDS,
      connection: 'close',
    });
    res.end(body);
  }
}

/** The bytes a POST's body may make the server hold: its declared length, or the largest accepted body when chunked. */
function bodyBytes(req: IncomingMessage, maxBodyBytes: number): number {
  if (req.method !== 'POST') return 0;
  const declared = req.headers['content-length'];
  if (declared === undefined) return req.headers['transfer-encoding'] === undefined ? 0 : maxBodyBytes;
  const length = Number(declared);
  // Past the largest body nothing is read (413 from the handlers behind); a bad length is the parser's to refuse.
  return Number.isSafeInteger(length) && length > 0 && length <= maxBodyBytes ? length : 0;
}

/** Drops the connection of a request whose body has not all arrived within `timeoutMs`. */
function watchBodyDeadline(req: IncomingMessage, res: ServerResponse, timeoutMs: number, logger: Logger): void {
  const timer = setTimeout(() => {
    if (req.complete || req.socket.destroyed) return;
    logger.info(`http: dropped a request whose body did not arrive within ${timeoutMs} ms (requestBodyTimeoutMs)`);
    req.socket.destroy();
  }, timeoutMs);
  timer.unref();
  res.once('close', () => clearTimeout(timer));
  req.once('end', () => clearTimeout(timer));
}

/** The budget key of a request from its head alone (sync when no promise is needed). */
function headPrincipal(options: HttpInboundGateOptions): (req: IncomingMessage) => string | Promise<string> {
  const { bearer, authenticate, path } = options;
  if (bearer) {
    return async (req) => {
      const outcome = await bearer.authenticate(
        { url: `http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, headers: { get: (name) => headerValue(req, name) } },
        path,
      );
      rememberHeadAuthentication(req, outcome);
      return outcome instanceof Response ? UNAUTHENTICATED : outcome.id;
    };
  }
  if (!authenticate) return () => ANONYMOUS_PRINCIPAL.id;
  return async (req) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
    }
    try {
      const principal = await authenticate(
        new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, { method: 'POST', headers }),
      );
      return principal?.id ?? UNAUTHENTICATED;
    } catch {
      // The handler behind calls the hook again and logs its failure; here it only decides the budget.
      return UNAUTHENTICATED;
    }
  };
}

function headerValue(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}
