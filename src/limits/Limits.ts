/**
 * Resource limits a hostile (or merely buggy) client could otherwise use to
 * exhaust the server's memory, connections or time. Every limit has a safe
 * default; a limit hit answers a JSON-RPC error and touches nothing that
 * belongs to another principal (I-7).
 *
 * Error code: `-32000`, the implementation-defined server-error code
 * (JSON-RPC 2.0 §5.1), which the SDK itself answers for an oversized HTTP
 * body (413). The spec's own codes (-32020…-32022) mean other things and
 * -32002/-32042 are retired, so none of those may be reused. `data.limit`
 * names the limit and `data.max` its value, so a client can tell them apart.
 */
import { TaskvisorError } from '../core/errors.js';

/** The code of every limit error (see the module comment). */
export const LIMIT_EXCEEDED = -32000;

/** The limits of one runtime (`RuntimeOptions.limits`, config `limits:`). */
export interface Limits {
  /** Largest HTTP request body and WebSocket frame, bytes. HTTP answers 413, WebSocket closes with 1009. Default 4 MiB. */
  maxRequestBodyBytes: number;
  /** Deepest nesting of arrays/objects in one JSON-RPC message. Default 64. */
  maxJsonDepth: number;
  /** Object members in one JSON-RPC message, at every depth (duplicates each count). Default 10,000. */
  maxJsonKeys: number;
  /** Values in one JSON-RPC message: objects, arrays, strings, numbers and literals at every depth. Default 200,000. */
  maxJsonNodes: number;
  /** Values in one `_meta` object (anywhere in a message), itself included: `_meta` carries a few flags and ids. Default 256. */
  maxMetaNodes: number;
  /** Unfinished tasks one principal may own at a time. Default 1000. */
  maxLiveTasksPerPrincipal: number;
  /** Input requests one task may have outstanding at once. Default 16. */
  maxPendingInputRequestsPerTask: number;
  /** Open `subscriptions/listen` streams per principal (all connections together). Default 32. */
  maxListenStreamsPerPrincipal: number;
  /** Task ids one listen request may name. Default 1000. */
  maxTaskIdsPerListen: number;
  /** Longest resource URI a listen's `resourceSubscriptions` may name, UTF-8 bytes; a longer one is refused (HTTP 400). Default 2 KiB. */
  maxListenUriBytes: number;
  /** UTF-8 bytes of all the resource URIs one listen names together; more is refused (HTTP 400). Default 64 KiB. */
  maxListenUriBytesPerListen: number;
  /**
   * UTF-8 bytes of the resource URIs one principal's open listens watch together (each is kept, indexed and
   * echoed in the acknowledgement); a listen past it is refused (HTTP 429) until one closes. Default 256 KiB.
   */
  maxListenUriBytesPerPrincipal: number;
  /** Longest a synchronous `tools/call` may run before it is aborted with an error, ms. Default 5 min. */
  requestTimeoutMs: number;
  /**
   * Longest lifetime (ttl) a task may get; longer or unlimited ttls are cut to
   * it (T-26: the server may change ttl). `null`: no cap. Default `null`: a
   * ttl is chosen by the server's own config and tools, never by a client.
   */
  maxTaskTtlMs: number | null;
  /**
   * Bytes one connection (an HTTP connection with its replies and SSE
   * streams, a WebSocket, stdio) may have queued for a client that does not
   * read them. Past it the server stops reading that connection; if the queue
   * has not drained below it within `outboundGraceMs` the connection is closed
   * (WebSocket 1008), and at twice the budget at once. Answering pings does
   * not help. Default 8 MiB.
   */
  maxOutboundBufferBytes: number;
  /**
   * Bytes all connections of one principal together may have queued for
   * clients that do not read them: many connections each under
   * `maxOutboundBufferBytes` must not add up to the server's memory. Past it,
   * the principal's connections holding unread bytes stop being read, and
   * those still holding some after `outboundGraceMs` are closed. Default 64 MiB.
   */
  maxOutboundBytesPerPrincipal: number;
  /** How long a connection may stay over its outbound budget before it is closed, ms. Default 10 s. */
  outboundGraceMs: number;
  /**
   * Requests of one HTTP/1.1 connection served at once: a client may pipeline
   * many, and Node parses them ahead. Past it the connection is no longer
   * read, and the requests already parsed wait their turn. Default 1: a
   * connection's answers leave in order anyway, and each request served at
   * once builds its whole answer before the client has read a byte (40
   * sockets × 25 pipelined `tasks/get` of a 4 MB result: RSS +2.5 GB at 8,
   * +0.6 GB at 1).
   */
  maxPipelinedRequests: number;
  /** Open 2025-11-25 Streamable HTTP sessions, all principals together; an `initialize` past it gets 503. Default 1000. */
  maxHttpSessions: number;
  /** Open 2025-11-25 Streamable HTTP sessions of one principal; an `initialize` past it gets 429. Default 32. */
  maxHttpSessionsPerPrincipal: number;
  /** How long a 2025-11-25 HTTP session lives without a request or an open stream, ms; then it ends (404 to its id). Default 10 min. */
  httpSessionIdleMs: number;
  /**
   * Request bytes one principal may have the server buffer at once: its HTTP
   * bodies (the declared `content-length`, reserved before the body is read,
   * until the answer is sent) and its WebSocket frames still arriving. An HTTP
   * request past it gets 429 and its connection is closed; a WebSocket is
   * dropped. Default 16 MiB.
   */
  maxInboundBodyBytesPerPrincipal: number;
  /** The same, all principals together; a request past it gets 503. Default 128 MiB. */
  maxInboundBodyBytes: number;
  /** Longest an HTTP body may take to arrive after its head, or a WebSocket frame after its first bytes, ms; then the connection is closed. Default 30 s. */
  requestBodyTimeoutMs: number;
  /**
   * Requests one WebSocket connection may have being served at once (listens
   * not counted: `maxListenStreamsPerPrincipal` bounds them). Later ones
   * wait, unread, until one is answered. Default 16.
   */
  maxInflightRequestsPerConnection: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  maxRequestBodyBytes: 4 * 1024 * 1024,
  maxJsonDepth: 64,
  maxJsonKeys: 10_000,
  maxJsonNodes: 200_000,
  maxMetaNodes: 256,
  maxLiveTasksPerPrincipal: 1000,
  maxPendingInputRequestsPerTask: 16,
  maxListenStreamsPerPrincipal: 32,
  maxTaskIdsPerListen: 1000,
  maxListenUriBytes: 2048,
  maxListenUriBytesPerListen: 64 * 1024,
  maxListenUriBytesPerPrincipal: 256 * 1024,
  requestTimeoutMs: 300_000,
  maxTaskTtlMs: null,
  maxOutboundBufferBytes: 8 * 1024 * 1024,
  maxOutboundBytesPerPrincipal: 64 * 1024 * 1024,
  outboundGraceMs: 10_000,
  maxPipelinedRequests: 1,
  maxHttpSessions: 1000,
  maxHttpSessionsPerPrincipal: 32,
  httpSessionIdleMs: 600_000,
  maxInboundBodyBytesPerPrincipal: 16 * 1024 * 1024,
  maxInboundBodyBytes: 128 * 1024 * 1024,
  requestBodyTimeoutMs: 30_000,
  maxInflightRequestsPerConnection: 16,
});

/** Upper bounds that keep a limit meaningful (a timer cannot wait longer than 2^31-1 ms in one step). */
const MAX_TIMER_MS = 2 ** 31 - 1;
const TIMER_LIMITS: ReadonlySet<keyof Limits> = new Set([
  'requestTimeoutMs',
  'outboundGraceMs',
  'httpSessionIdleMs',
  'requestBodyTimeoutMs',
]);

/**
 * The complete limits from partial ones. Throws a `RangeError` naming the
 * option for a value that is not a positive integer (or `null` where allowed).
 */
export function resolveLimits(partial: Partial<Limits> = {}): Limits {
  const limits: Limits = { ...DEFAULT_LIMITS };
  for (const [key, value] of Object.entries(partial) as [keyof Limits, unknown][]) {
    if (value === undefined) continue;
    if (!Object.hasOwn(DEFAULT_LIMITS, key))
      throw new RangeError(`limits.${key}: unknown limit (known: ${Object.keys(DEFAULT_LIMITS).join(', ')})`);
    if (value === null && key === 'maxTaskTtlMs') {
      limits.maxTaskTtlMs = null;
      continue;
    }
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(`limits.${key}: expected a positive integer, got ${JSON.stringify(value)}`);
    }
    if (TIMER_LIMITS.has(key) && value > MAX_TIMER_MS) throw new RangeError(`limits.${key}: at most ${MAX_TIMER_MS} ms`);
    limits[key] = value;
  }
  return limits;
}

/** A limit hit, answered as a JSON-RPC error naming the limit (`data.limit`) and its value (`data.max`). */
export class LimitExceededError extends TaskvisorError {
  declare readonly data: { limit: string; max: number };
  constructor(limit: keyof Limits, max: number, message: string) {
    super(LIMIT_EXCEEDED, `Limit exceeded: ${message} (${limit} = ${max})`, { limit, max });
  }
}

/** The error of a limit hit. */
export function limitExceeded(limit: keyof Limits, max: number, message: string): LimitExceededError {
  return new LimitExceededError(limit, max, message);
}

/** The same error as a plain JSON-RPC error object (for answers built outside the SDK). */
export function limitExceededError(
  limit: keyof Limits,
  max: number,
  message: string,
): { code: number; message: string; data: { limit: string; max: number } } {
  return { code: LIMIT_EXCEEDED, message: `Limit exceeded: ${message} (${limit} = ${max})`, data: { limit, max } };
}

/** A task's ttl under the cap: an unlimited or longer ttl becomes the cap (T-26: the server may change ttl). */
export function capTtl(ttlMs: number | null, maxTaskTtlMs: number | null): number | null {
  if (maxTaskTtlMs === null) return ttlMs;
  return ttlMs === null ? maxTaskTtlMs : Math.min(ttlMs, maxTaskTtlMs);
}
