/**
 * A client-side SDK `Transport` over a `ws` socket (the v2 client SDK has no
 * WebSocket transport): one JSON-RPC message per text frame. A refused
 * upgrade rejects `start()` with a `WebSocketUpgradeError` carrying the HTTP
 * status, headers and body.
 */
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { WebSocket } from 'ws';

export class WebSocketUpgradeError extends Error {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string | string[] | undefined>,
    readonly body: string,
  ) {
    super(`WebSocket upgrade refused: HTTP ${status} ${body}`);
  }
}

export interface WsClientTransportOptions {
  /** Extra headers on the upgrade request (e.g. an identity for an `authenticate` hook). */
  headers?: Record<string, string>;
  /** Subprotocols offered. Default `['mcp']` (what the v1 SDK client offers). */
  protocols?: string[];
}

type OnMessage = NonNullable<Transport['onmessage']>;

export class WsClientTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: OnMessage;
  socket: WebSocket | undefined;
  /** The close code and reason the server sent, once closed. */
  closeInfo: { code: number; reason: string } | undefined;
  private closeFired = false;

  constructor(
    readonly url: URL | string,
    private readonly options: WsClientTransportOptions = {},
  ) {}

  start(): Promise<void> {
    if (this.socket) throw new Error('WsClientTransport already started');
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
          const error = new WebSocketUpgradeError(response.statusCode ?? 0, response.headers, body);
          socket.terminate();
          reject(error);
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
        (this.onmessage as ((m: JSONRPCMessage) => void) | undefined)?.(message);
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
      const timer = setTimeout(() => socket.terminate(), 2_000);
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
