/**
 * Stateful Streamable HTTP for 2025-11-25 clients. That era
 * serves server-to-client requests (elicitation, sampling, roots),
 * notifications and `notifications/cancelled` on a session: `initialize`
 * opens one and the answer names it in `Mcp-Session-Id`; every later request
 * carries it, GET opens the session's own SSE stream, DELETE ends it
 * (2025-11-25 Streamable HTTP, "Session Management"). Per-request serving
 * could do none of that (a fresh server per request has no client to ask).
 *
 * Each session is one SDK server instance on its own
 * `WebStandardStreamableHTTPServerTransport`, bound to the principal that
 * opened it: another principal's use of the id is answered exactly like an
 * unknown id (404, I-7). Sessions are bounded in number (overall and per
 * principal) and end after `httpSessionIdleMs` without a request. A session
 * lives in one process: behind a load balancer, pin by `Mcp-Session-Id`
 * (docs/scaling.md). 2026-07-28 clients never get here: they stay stateless.
 *
 * A legacy request without a session id that is not an `initialize` is
 * served statelessly as before (the SDK's `legacyStatelessFallback`).
 */
import { randomUUID } from 'node:crypto';
import {
  isInitializeRequest,
  legacyStatelessFallback,
  WebStandardStreamableHTTPServerTransport,
  type AuthInfo,
  type LegacyHttpHandler,
  type McpServerFactory,
} from '@modelcontextprotocol/server';
import type { Principal } from '../core/principal.js';
import { limitExceededError, type Limits } from '../limits/Limits.js';
import type { Logger } from '../runtime/Logger.js';

/** The 2025-11-25 SDK's code for an unknown session (its transport answers the same). */
const SESSION_NOT_FOUND = -32001;

export interface LegacyHttpSessionsOptions {
  /** The runtime's server factory (the principal comes from the `authInfo` each request is served with). */
  factory: McpServerFactory;
  /** The factory of session instances (default: `factory`). */
  sessionFactory?: McpServerFactory;
  limits: Pick<Limits, 'maxHttpSessions' | 'maxHttpSessionsPerPrincipal' | 'httpSessionIdleMs'>;
  logger: Logger;
  onerror: (error: Error) => void;
  maxBodyBytes: number;
  /** Ends the session when the credentials it was opened with expire or are revoked; returns the unwatch. */
  trackSession?: (principal: Principal, end: (reason: string) => void) => () => void;
}

interface Session {
  principalId: string;
  transport: WebStandardStreamableHTTPServerTransport;
  lastSeen: number;
  /** Answers still streaming (a tools/call waiting on an elicitation, the GET stream): such a session is not idle. */
  inflight: number;
  untrack: () => void;
}

export class LegacyHttpSessions {
  private readonly sessions = new Map<string, Session>();
  /** Sessions being opened (their `initialize` is in flight): counted against the limits too. */
  private readonly opening = new Map<string, number>();
  private readonly stateless: LegacyHttpHandler;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: LegacyHttpSessionsOptions) {
    this.stateless = legacyStatelessFallback(options.factory, options.onerror, { maxRequestBodySize: options.maxBodyBytes });
    const idle = options.limits.httpSessionIdleMs;
    this.sweeper = setInterval(() => this.sweep(), Math.min(30_000, Math.max(250, Math.floor(idle / 4))));
    this.sweeper.unref();
  }

  /** How many sessions are open (for `/metrics` and tests). */
  get size(): number {
    return this.sessions.size;
  }

  /** Serves one 2025-era request of `principal`. */
  async handle(request: Request, principal: Principal, authInfo: AuthInfo, parsedBody: unknown): Promise<Response> {
    const sessionId = request.headers.get('mcp-session-id')?.trim();
    const options = { authInfo, ...(parsedBody !== undefined ? { parsedBody } : {}) };
    if (sessionId) {
      const session = this.sessions.get(sessionId);
      // Another principal's session is exactly an unknown one (I-7): 404 tells the client to initialize anew.
      if (!session || session.principalId !== principal.id) return sessionNotFound(parsedBody);
      session.inflight++;
      session.lastSeen = Date.now();
      const done = () => {
        session.inflight--;
        session.lastSeen = Date.now();
      };
      try {
        // Open until its body ends: an SSE answer (a tools/call waiting on an elicitation, the GET stream) is activity.
        return untilBodyEnds(await session.transport.handleRequest(request, options), done);
      } catch (error) {
        done();
        throw error;
      }
    }
    if (request.method === 'POST' && isInitializeRequest(parsedBody)) return this.open(request, principal, options);
    return this.stateless(request, options);
  }

  private async open(request: Request, principal: Principal, options: { authInfo: AuthInfo; parsedBody?: unknown }): Promise<Response> {
    const { maxHttpSessions, maxHttpSessionsPerPrincipal } = this.options.limits;
    const opening = [...this.opening.values()].reduce((sum, count) => sum + count, 0);
    if (this.sessions.size + opening >= maxHttpSessions) {
      return refused(
        503,
        options.parsedBody,
        limitExceededError('maxHttpSessions', maxHttpSessions, 'too many open sessions; retry later'),
      );
    }
    const mine = [...this.sessions.values()].filter((session) => session.principalId === principal.id).length;
    if (mine + (this.opening.get(principal.id) ?? 0) >= maxHttpSessionsPerPrincipal) {
      return refused(
        429,
        options.parsedBody,
        limitExceededError(
          'maxHttpSessionsPerPrincipal',
          maxHttpSessionsPerPrincipal,
          'too many open sessions for this principal; end one (DELETE) or retry later',
        ),
      );
    }
    this.opening.set(principal.id, (this.opening.get(principal.id) ?? 0) + 1);
    let opened: string | undefined;
    const server = await (this.options.sessionFactory ?? this.options.factory)({
      era: 'legacy',
      authInfo: options.authInfo,
      requestInfo: request,
    });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        opened = id;
        const end = (reason: string) => {
          this.options.logger.info(`http: ending session ${id.slice(0, 8)}… of ${principal.id}: ${reason}`);
          void transport.close().catch(() => undefined);
        };
        this.sessions.set(id, {
          principalId: principal.id,
          transport,
          lastSeen: Date.now(),
          inflight: 0,
          untrack: this.options.trackSession?.(principal, end) ?? (() => {}),
        });
      },
      onsessionclosed: (id) => this.forget(id),
    });
    transport.onclose = () => {
      if (opened !== undefined) this.forget(opened);
      void server.close().catch(() => undefined);
    };
    try {
      await server.connect(transport);
      const response = await transport.handleRequest(request, options);
      // An initialize that failed opened nothing: drop the instance.
      if (opened === undefined) await server.close().catch(() => undefined);
      return response;
    } finally {
      const left = (this.opening.get(principal.id) ?? 1) - 1;
      if (left > 0) this.opening.set(principal.id, left);
      else this.opening.delete(principal.id);
    }
  }

  private forget(id: string): void {
    const session = this.sessions.get(id);
    if (!session) return;
    this.sessions.delete(id);
    session.untrack();
  }

  /** Ends sessions idle past `httpSessionIdleMs` (none with a request in flight). */
  private sweep(): void {
    const cutoff = Date.now() - this.options.limits.httpSessionIdleMs;
    for (const [id, session] of this.sessions) {
      if (session.inflight > 0 || session.lastSeen > cutoff) continue;
      this.forget(id);
      void session.transport.close().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const open = [...this.sessions.entries()];
    this.sessions.clear();
    await Promise.all(
      open.map(async ([, session]) => {
        session.untrack();
        await session.transport.close().catch(() => undefined);
      }),
    );
  }
}

/** The request id of a JSON-RPC request body, or null. */
function idOf(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function sessionNotFound(body: unknown): Response {
  return Response.json(
    { jsonrpc: '2.0', id: idOf(body), error: { code: SESSION_NOT_FOUND, message: 'Session not found' } },
    { status: 404 },
  );
}

function refused(status: number, body: unknown, error: ReturnType<typeof limitExceededError>): Response {
  return Response.json({ jsonrpc: '2.0', id: idOf(body), error }, { status, headers: { 'retry-after': '5' } });
}

/** `response` with `done` called once its body has been read to the end, failed, or been cancelled (the client left). */
function untilBodyEnds(response: Response, done: () => void): Response {
  if (!response.body) {
    done();
    return response;
  }
  const reader = response.body.getReader();
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    done();
  };
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await reader.read();
        if (chunk.done) {
          finish();
          controller.close();
        } else controller.enqueue(chunk.value);
      } catch (error) {
        finish();
        controller.error(error);
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
