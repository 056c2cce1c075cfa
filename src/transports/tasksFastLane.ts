/**
 * The Streamable HTTP fast lane for `tasks/get`, `tasks/update` and
 * `tasks/cancel`, and for the `tools/call` that creates a
 * task: polling is most of a Tasks server's traffic and creates the
 * rest, and on the SDK path each pays for a web `Request`/`Response`
 * conversion, a per-request SDK server and zod, several times the work of
 * the answer itself.
 *
 * Here the body is read once from the Node request, the headers, the
 * `_meta` envelope and the params are checked by hand
 * (protocol/taskRequestDecoder.ts, toolCallDecoder.ts), the answer comes
 * from the same {@link TaskRequests} or {@link ToolCalls} the SDK handlers
 * call, and the JSON is written directly. A `tools/call` is the lane's only
 * when its own `_meta` declares the tasks extension (T-01, T-33) and the
 * call is decided before any tool code runs (`ToolCalls.decidedAtOnce`: a
 * local `always` tool's new task, an unknown tool, bad arguments, a limit);
 * anything else — an `auto` or `never` tool, an upstream's tool, an MRTR
 * retry — needs the SDK's result handling and stays on its path. The lane differs from the SDK path only in parsing and writing:
 * every check below either passes or hands the request, its body replayed
 * byte for byte, to the SDK path, which then decides exactly as it always
 * did — so any answer the lane gives is one the SDK would have given
 * (proved by test/transports/tasks-fast-lane.integration.test.ts, a differential test).
 *
 * Off with `fastLane: false` on the entry, or `TASKVISOR_HTTP_FAST_LANE=0`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isJsonContentType, validateHostHeader, validateOriginHeader } from '@modelcontextprotocol/server';
import type { BearerGate } from '../auth/bearer.js';
import { ANONYMOUS_PRINCIPAL, type Principal } from '../core/principal.js';
import { jsonTextOverLimit, jsonValueOverLimit, type JsonShapeLimits } from '../limits/jsonShape.js';
import { answerTaskRequest, answerToolCall, type TaskAnswer } from '../protocol/taskAnswer.js';
import { decodeTaskRequest, TASK_METHODS } from '../protocol/taskRequestDecoder.js';
import type { TaskRequests } from '../protocol/TaskRequests.js';
import { decodeToolCall } from '../protocol/toolCallDecoder.js';
import type { ToolCalls } from '../protocol/ToolCalls.js';
import { declaresTasksExtension } from '../core/tasksExtension.js';
import { untilServing } from './admission.js';
import { headAuthenticationOf } from './headAuthentication.js';
import type { RequestHandler } from './listenerGuard.js';
import type { ServingRuntime } from './ServingRuntime.js';
import { chargeRequests, rateLimitedMessage, retryAfterSeconds } from './rateGate.js';
import type { RateLimitedError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';

export interface TasksFastLaneOptions extends JsonShapeLimits {
  /** Bearer authentication of the entry; absent = the anonymous principal (a custom `authenticate` hook has no lane). */
  bearer?: BearerGate | undefined;
  /** The entry's path (bearer challenges name it). */
  path: string;
  allowedHosts?: string[] | false | undefined;
  allowedOrigins?: string[] | false | undefined;
  maxBodyBytes: number;
  maxJsonDepth: number;
  /** Told the principal of a request the lane answers, before it answers (its connection's outbound budget). */
  onAdmitted?: (res: ServerResponse, principal: Principal) => void;
}

/** Serves `req` on the lane, or hands it (body intact) to `sdk`. */
export type FastLane = (req: IncomingMessage, res: ServerResponse, sdk: RequestHandler) => void | Promise<void>;

/** Whether the lane is switched off for this process (`TASKVISOR_HTTP_FAST_LANE=0`). */
export const fastLaneDisabledByEnv = (): boolean => process.env.TASKVISOR_HTTP_FAST_LANE === '0';

const utf8 = new TextDecoder();
const BASE64_SENTINEL = '=?base64?';
/** Bodies up to this many characters are parsed before their shape is judged (see `serveBody`). */
const SHORT_TEXT = 4096;

/** A request header as one string, as a web `Headers.get` would give it (`null` when absent). */
function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * `req` with its body replayed: the chunks already read, then the rest of
 * the stream (read through the same iterator, so nothing is lost or read
 * twice). The SDK path reads the body only by iterating the request.
 */
function replayed(req: IncomingMessage, chunks: readonly Buffer[], rest: AsyncIterator<Buffer> | undefined): IncomingMessage {
  const replay = {
    method: req.method,
    url: req.url,
    headers: req.headers,
    async *[Symbol.asyncIterator]() {
      yield* chunks;
      if (!rest) return;
      for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
    },
  };
  // What the SDK's Node adapter reads of a request (it accepts any such object, e.g. an Express request).
  return replay as unknown as IncomingMessage;
}

/**
 * Hands a request whose body was read whole to the SDK path. A module
 * function, not a closure made per request: a request the lane answers
 * never needs it (and under tsx each named closure costs a `__name` call,
 * 1.3 % of a `tasks/get`).
 */
function handOn(req: IncomingMessage, res: ServerResponse, sdk: RequestHandler, chunks: readonly Buffer[]) {
  return sdk(replayed(req, chunks, undefined), res);
}

/** The lane of an entry over `runtime`, or `undefined` when it cannot have one. */
export function tasksFastLane(runtime: ServingRuntime, options: TasksFastLaneOptions): FastLane | undefined {
  const requests: TaskRequests | undefined = runtime.taskRequests;
  const calls: ToolCalls | undefined = runtime.toolCalls;
  const serverInfo = runtime.serverInfo;
  const rateLimiter = runtime.rateLimiter;
  if (!requests || !serverInfo) return undefined;

  /** I-7, T-10: the Host and Origin checks of admission.ts, on the Node headers; false = let the SDK path refuse it. */
  const doorOpen = (req: IncomingMessage): boolean =>
    !(options.allowedHosts && !hostAllowed(req.headers.host, options.allowedHosts)) &&
    !(options.allowedOrigins && !validateOriginHeader(req.headers.origin, options.allowedOrigins).ok);
  /**
   * Host values this entry's list let in (the SDK's check parses a URL each
   * time; a client sends the same Host on every poll). Only accepted values
   * are kept, at most 64 (emptied when full): a refused one is judged anew.
   */
  const allowedHostValues = new Set<string>();
  const hostAllowed = (host: string | undefined, allowed: string[]): boolean => {
    if (host !== undefined && allowedHostValues.has(host)) return true;
    if (!validateHostHeader(host, allowed).ok) return false;
    if (allowedHostValues.size >= 64) allowedHostValues.clear();
    allowedHostValues.add(host!);
    return true;
  };
  /** I-7: the bearer token, when the entry has one; `undefined` = let the SDK path refuse it. */
  const bearerPrincipal = async (req: IncomingMessage, bearer: BearerGate): Promise<Principal | undefined> => {
    const head = {
      url: `http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`,
      headers: { get: (name: string) => header(req, name) },
    };
    // The inbound-body gate verified this POST's token already (one verification per request).
    const outcome = headAuthenticationOf(req) ?? (await bearer.authenticate(head, options.path));
    return outcome instanceof Response ? undefined : outcome;
  };
  /** The front door (I-7, T-10); without a bearer gate it decides without a promise (most polls). */
  const admitted = (req: IncomingMessage): Principal | undefined | Promise<Principal | undefined> => {
    if (!doorOpen(req)) return undefined;
    return options.bearer ? bearerPrincipal(req, options.bearer) : ANONYMOUS_PRINCIPAL;
  };
  /**
   * Set once `untilServing` said the runtime serves: `ready()` stays resolved
   * from then on, so later requests skip the await (a promise hop per poll).
   */
  let serving = runtime.ready === undefined;
  const waitServing = async (): Promise<boolean> => {
    if ((await untilServing(runtime)) !== undefined) return false;
    serving = true;
    return true;
  };

  /** The body of `req` is all in `chunks`: decode and answer it, or replay it to the SDK path. */
  const serveBody = async (
    req: IncomingMessage,
    res: ServerResponse,
    sdk: RequestHandler,
    named: string,
    chunks: Buffer[],
    size: number,
  ) => {
    // The same decoding as the SDK path (a WHATWG TextDecoder: a leading BOM is dropped there too).
    const text = utf8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    // limits: maxJsonDepth, maxJsonKeys, maxJsonNodes, maxMetaNodes; a message over one is the SDK path's to refuse.
    // A long text is judged before anything parses it (deep nesting makes JSON.parse allocate per level: ~100×
    // the scan's CPU); a short one (a poll, a create) costs no more parsed first, and its parsed value is judged
    // in a few steps instead of a scan of every character (the same answer, but for duplicate keys, which the
    // parsed value holds once: it is the smaller shape that is served).
    const short = text.length <= SHORT_TEXT;
    if (!short && jsonTextOverLimit(text, options) !== undefined) return handOn(req, res, sdk, chunks);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return handOn(req, res, sdk, chunks);
    }
    if (short && jsonValueOverLimit(body, options) !== undefined) return handOn(req, res, sdk, chunks);
    if (named === 'tools/call') {
      const answer = await createTask(req, res, body, named);
      return answer ? write(res, answer) : handOn(req, res, sdk, chunks);
    }
    const request = decodeTaskRequest(body);
    if (!request) return handOn(req, res, sdk, chunks);
    // T-60, T-62, §2.4: MCP-Protocol-Version, Mcp-Method and Mcp-Name must be present and agree with the body
    // (-32020 otherwise, the SDK's answer). A Base64-sentinel Mcp-Name (T-61) is decoded by the SDK path.
    const name = req.headers['mcp-name'];
    if (
      req.headers['mcp-protocol-version'] !== request.protocolVersion ||
      named !== request.method ||
      name !== request.taskId ||
      name.startsWith(BASE64_SENTINEL)
    ) {
      return handOn(req, res, sdk, chunks);
    }
    // Tasks of an upstream server (the aggregator) are the SDK path's.
    if (requests.forwards(request.taskId)) return handOn(req, res, sdk, chunks);
    const door = admitted(req);
    const principal = door instanceof Promise ? await door : door;
    if (!principal) return handOn(req, res, sdk, chunks);
    options.onAdmitted?.(res, principal);
    // While recovering, tasks/* are answered (from the store, or a retryable error); otherwise
    // a request waits until the runtime serves, and one that never will is the SDK path's 503.
    if (!serving && runtime.recovering?.() !== true && !(await waitServing())) return handOn(req, res, sdk, chunks);
    // Rate limits, charged once the lane answers (never for a request handed on: the SDK path charges those).
    const limited = rateLimiter?.limits ? chargeRequests(rateLimiter, principal.id, body) : undefined;
    if (limited) return write(res, limitedAnswer(limited.error, limited.id));
    write(res, await answerTaskRequest(requests, request, principal.id, serverInfo, runtime.logger));
  };

  return (req, res, sdk) => {
    // Only a JSON POST naming one of the three methods or tools/call (T-60: Mcp-Method) is even looked at.
    const named = req.headers['mcp-method'];
    const length = req.headers['content-length'];
    if (
      req.method !== 'POST' ||
      typeof named !== 'string' ||
      !(TASK_METHODS.has(named) || (named === 'tools/call' && calls)) ||
      !isJsonContentType(header(req, 'content-type')) ||
      Number(length) > options.maxBodyBytes
    ) {
      return sdk(req, res);
    }
    // A chunked body has no declared length: read it piece by piece, up to the limit.
    if (length === undefined) return readChunked(req, res, sdk, named);
    // A declared length at most the limit (checked above): Node's parser delivers exactly that many bytes, so the
    // body is gathered from 'data' events (no async iterator: a promise per chunk and per end on every poll).
    return new Promise<void>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let ended = false;
      req.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
      });
      req.once('error', reject);
      req.once('close', () => {
        // A peer gone before the end of its body: as the iterator it replaces, a failure of this request.
        if (!ended) reject(new Error('the request closed before its body ended'));
      });
      req.once('end', () => {
        ended = true;
        serveBody(req, res, sdk, named, chunks, size).then(resolve, reject);
      });
    });
  };

  /** A body without a declared length, read up to the body limit (limits: maxRequestBodyBytes); past it, the SDK path answers 413. */
  async function readChunked(req: IncomingMessage, res: ServerResponse, sdk: RequestHandler, named: string): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    const stream = req[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    for (let next = await stream.next(); !next.done; next = await stream.next()) {
      chunks.push(next.value);
      size += next.value.length;
      if (size > options.maxBodyBytes) return sdk(replayed(req, chunks, stream), res);
    }
    return serveBody(req, res, sdk, named, chunks, size);
  }

  /**
   * A `tools/call` that creates a task, answered with the
   * runtime's answer (the record durable before it leaves, I-1); `undefined`
   * = the SDK path's (nothing was done yet).
   */
  async function createTask(req: IncomingMessage, res: ServerResponse, body: unknown, named: string): Promise<LaneAnswer | undefined> {
    const call = calls && decodeToolCall(body);
    if (!calls || !call) return undefined;
    // T-60, T-62, §2.4: as for tasks/*, with the tool's name in Mcp-Name.
    const name = req.headers['mcp-name'];
    if (
      req.headers['mcp-protocol-version'] !== call.protocolVersion ||
      named !== 'tools/call' ||
      name !== call.name ||
      name.startsWith(BASE64_SENTINEL)
    ) {
      return undefined;
    }
    // T-01, T-33: only a request declaring the extension in its own _meta may get a task; one without it is
    // the SDK path's (its answer collapses to a final result, or is -32021 for an `always` tool).
    if (!declaresTasksExtension(call.capabilities)) return undefined;
    const door = admitted(req);
    const principal = door instanceof Promise ? await door : door;
    if (!principal) return undefined;
    options.onAdmitted?.(res, principal);
    // Creates wait until the runtime serves; one that never will is the SDK path's 503.
    if (!serving && !(await waitServing())) return undefined;
    // Asked after the last await, so the answer below is the one this decision describes: an unknown tool, bad
    // arguments, a limit, or a local task tool's new task — never tool code on the request, an input round or
    // an upstream (those need the SDK's result handling and relay).
    if (!calls.decidedAtOnce(call.name)) return undefined;
    const limited = rateLimiter?.limits ? chargeRequests(rateLimiter, principal.id, body) : undefined;
    if (limited) return limitedAnswer(limited.error, limited.id);
    return answerToolCall(calls, call, principal, serverInfo!, runtime.logger);
  }
}

/** An answer of the lane: a {@link TaskAnswer}, or a rate limit's 429 with its `Retry-After`. */
type LaneAnswer = TaskAnswer & { retryAfter?: string };

/** The 429 of a rate limit (transports/rateGate.ts), as the SDK path answers it. */
function limitedAnswer(error: RateLimitedError, id: string | number | null): LaneAnswer {
  return { status: 429, message: rateLimitedMessage(error, id), retryAfter: retryAfterSeconds(error) };
}

/** Writes `answer` as the SDK's per-request transport would, in one piece. */
function write(res: ServerResponse, answer: LaneAnswer): void {
  const json = JSON.stringify(answer.message);
  // Headers as a flat array: Node writes them as given, without walking an object's keys.
  const headers = ['content-type', 'application/json', 'content-length', String(Buffer.byteLength(json))];
  if (answer.retryAfter !== undefined) headers.push('retry-after', answer.retryAfter, 'cache-control', 'no-store');
  res.writeHead(answer.status, headers);
  res.end(json);
}
