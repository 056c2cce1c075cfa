/**
 * Failure containment on a Node HTTP listener: a failure while
 * serving one request or one upgrade ends that request or connection, never
 * the process. Every listener of taskvisor (HTTP, WebSocket, the inspection
 * relay) wraps its handlers here instead of relying on a process-wide
 * `uncaughtException` handler, which would keep a process running in an
 * unknown state.
 *
 * - A request head that fails `requestHead.ts` gets 400/414 and one short,
 *   escaped log line; nothing builds a URL from it.
 * - A request the parser itself refuses (bad bytes, headers past Node's
 *   limit) arrives as `clientError`: 400 (431 for oversized headers), then
 *   the socket is destroyed.
 * - A handler that throws or rejects answers 500 with a reference id; the
 *   detail goes to the log under the same id, never to the client (it may name paths or URLs).
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../runtime/Logger.js';
import { scrubErrorText } from './transportErrors.js';
import { normaliseRequestHead } from './requestHead.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void | Promise<void>;

/** A short id that ties a client's error answer to the log line holding the detail. */
export const referenceId = (): string => randomUUID().slice(0, 8);

/** Containment for the listener named `name` (appears in log lines). */
export class ListenerGuard {
  constructor(
    private readonly name: string,
    private readonly logger: Logger,
  ) {}

  /** Handles `clientError` on `server` (the parser's refusals) instead of Node's default. */
  attach(server: Server): void {
    server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => this.clientError(error, socket));
  }

  /** `handler` behind the head check, with its throws and rejections answered 500. */
  request(handler: RequestHandler): (req: IncomingMessage, res: ServerResponse) => void {
    return (req, res) => {
      if (!this.refusedHead(req, res)) this.run(req, res, handler);
    };
  }

  /**
   * Judges the head of `req` (requestHead.ts): refuses it on `res` and returns
   * true, or rewrites its target to the plain path and returns false.
   */
  refusedHead(req: IncomingMessage, res: ServerResponse): boolean {
    const refused = normaliseRequestHead(req);
    if (!refused) return false;
    this.logger.info(`${this.name}: refused a request: ${refused.reason}`);
    if (!res.headersSent) {
      res.writeHead(refused.status, { 'content-type': 'application/json', connection: 'close' });
      res.end(errorBody(refused.status, 'Bad Request: the request target or Host header is not acceptable'));
    }
    return true;
  }

  /** Runs `handler`, answering its throw or rejection with 500 and a reference id. */
  run(req: IncomingMessage, res: ServerResponse, handler: RequestHandler): void {
    try {
      const outcome = handler(req, res);
      if (outcome instanceof Promise) outcome.catch((error: unknown) => this.requestFailed(res, error));
    } catch (error) {
      this.requestFailed(res, error);
    }
  }

  /** `handler` behind the head check, with its throws and rejections answered 500 and the socket ended. */
  upgrade(handler: UpgradeHandler): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
    return (req, socket, head) => {
      // An error on a socket nobody listens to would be thrown by the emitter: contain it here.
      socket.on('error', (error) => this.logger.info(`${this.name}: upgrade socket error (${errorCode(error)})`));
      const refused = normaliseRequestHead(req);
      if (refused) {
        this.logger.info(`${this.name}: refused an upgrade: ${refused.reason}`);
        writeRaw(socket, refused.status, errorBody(refused.status, 'Bad Request: the request target or Host header is not acceptable'));
        return;
      }
      const fail = (error: unknown) => {
        const ref = referenceId();
        this.logger.error(`${this.name}: upgrade failed (ref ${ref})`, scrubErrorText(error));
        writeRaw(socket, 500, internalErrorBody(ref));
      };
      try {
        const outcome = handler(req, socket, head);
        if (outcome instanceof Promise) outcome.catch(fail);
      } catch (error) {
        fail(error);
      }
    };
  }

  private requestFailed(res: ServerResponse, error: unknown): void {
    const ref = referenceId();
    this.logger.error(`${this.name}: request failed (ref ${ref})`, scrubErrorText(error));
    if (res.headersSent) {
      // Part of a response is on the wire: the only honest end is to cut it.
      res.destroy();
      return;
    }
    res.writeHead(500, { 'content-type': 'application/json', connection: 'close' });
    res.end(internalErrorBody(ref));
  }

  private clientError(error: NodeJS.ErrnoException, socket: Duplex): void {
    const code = errorCode(error);
    // A peer that went away mid-request: nothing to answer, nothing worth a line.
    if (code === 'ECONNRESET' || code === 'EPIPE' || !socket.writable) {
      socket.destroy();
      return;
    }
    const status = code === 'HPE_HEADER_OVERFLOW' ? 431 : code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    this.logger.info(`${this.name}: refused a malformed request (${code})`);
    writeRaw(socket, status, errorBody(status, `${STATUS_CODES[status] ?? 'Bad Request'}: the request could not be parsed`));
  }
}

function errorBody(status: number, message: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: status === 500 ? -32603 : -32600, message } });
}

function internalErrorBody(ref: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: `Internal error (ref ${ref})`, data: { ref } } });
}

/** An error's code, or its name; only `[A-Za-z0-9_]` so it can go to the log as is. */
function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const text = typeof code === 'string' ? code : error instanceof Error ? error.name : 'unknown';
  return text.replace(/\W/g, '').slice(0, 40) || 'unknown';
}

/** A complete HTTP/1.1 response written on a raw socket, which is then closed. */
export function writeRaw(socket: Duplex, status: number, body: string, headers: Record<string, string> = {}): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`, 'Connection: close'];
  if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) lines.push('Content-Type: application/json');
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  socket.once('finish', () => socket.destroy());
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}
