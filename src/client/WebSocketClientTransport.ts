/**
 * A client-side SDK `Transport` over WebSocket: the v2 client
 * SDK ships Streamable HTTP and stdio only. One JSON-RPC message per text
 * frame, subprotocol `mcp` offered (as the v1 SDK client does), which is what
 * `taskvisor serve --ws` speaks. Built on `ws`, so it runs on Node 20, which
 * has no global WebSocket.
 */
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { WebSocket } from 'ws';

/** The server refused the upgrade (e.g. 401 without a token); carries the HTTP answer. */
export class WebSocketUpgradeError extends Error {
  constructor(
    /** HTTP status of the refusal. */
    readonly status: number,
    /** Its headers (e.g. `www-authenticate`). */
    readonly headers: Record<string, string | string[] | undefined>,
    /** Its body (usually a JSON-RPC error). */
    readonly body: string,
  ) {
    super(`WebSocket upgrade refused: HTTP ${status} ${body}`);
    this.name = 'WebSocketUpgradeError';
  }
}

export interface WebSocketClientTransportOptions {
  /** Extra headers on the upgrade request (e.g. `Authorization: Bearer …`). */
  headers?: Record<string, string>;
  /** Subprotocols offered. Default `['mcp']`. */
  protocols?: string[];
  /** How long a graceful close may take before the socket is terminated. Default 2000 ms. */
  closeTimeoutMs?: number;
}

type OnMessage = NonNullable<Transport['onmessage']>;

/**
 * @example
 * ```ts
 * const client = new Client({ name: 'me', version: '1.0.0' });
 * await client.connect(new WebSocketClientTransport('ws://127.0.0.1:3001/mcp'));
 * ```
 */
export class WebSocketClientTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: OnMessage;
  /** The underlying socket, once started. */
  socket: WebSocket | undefined;
  /** The close code and reason the server sent, once closed. */
  closeInfo: { code: number; reason: string } | undefined;
  private closeFired = false;

  constructor(
    readonly url: URL | string,
    private readonly options: WebSocketClientTransportOptions = {},
  ) {}

  /** Opens the socket; rejects with a {@link WebSocketUpgradeError} when the server refuses the upgrade. */
  start(): Promise<void> {
    if (this.socket) throw new Error('WebSocketClientTransport already started');
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(this.url, this.options.protocols ?? ['mcp'], { headers: this.options.headers ?? {} });
      this.socket = socket;
      let opened = false;
      socket.once('open', () => {
        opened = true;
        resolve();
      });
      socket.once('unexpected-response', (_request, response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => {
          socket.terminate();
          reject(new WebSocketUpgradeError(response.statusCode ?? 0, response.headers, body));
        });
      });
      socket.on('error', (error) => {
        if (!opened) reject(error);
        this.onerror?.(error);
      });
      socket.on('message', (data, isBinary) => {
        if (isBinary) {
          this.onerror?.(new Error('unexpected binary frame'));
          return;
        }
        let message: JSONRPCMessage;
        try {
          message = JSON.parse(String(data)) as JSONRPCMessage;
        } catch (error) {
          this.onerror?.(error as Error);
          return;
        }
        this.onmessage?.(message);
      });
      socket.once('close', (code, reason) => {
        this.closeInfo = { code, reason: reason.toString('utf8') };
        this.fireClose();
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const socket = this.socket;
    if (!socket || socket.readyState !== WebSocket.OPEN) return Promise.reject(new Error('WebSocket is not open'));
    return new Promise((resolve, reject) => socket.send(JSON.stringify(message), (error) => (error ? reject(error) : resolve())));
  }

  async close(): Promise<void> {
    const socket = this.socket;
    if (socket && socket.readyState !== WebSocket.CLOSED) {
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.close();
      const timer = setTimeout(() => socket.terminate(), this.options.closeTimeoutMs ?? 2_000);
      await closed;
      clearTimeout(timer);
    }
    this.fireClose();
  }

  private fireClose(): void {
    if (this.closeFired) return;
    this.closeFired = true;
    this.onclose?.();
  }
}
