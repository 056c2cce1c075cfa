/**
 * Raw JSON-RPC over real HTTP and WebSocket, as a hostile client sends it:
 * any text, any headers, one identity header for an `authenticate` hook.
 * Used by the limits and fuzz tests.
 */
import { WebSocket } from 'ws';
import { envelope } from './extTasksClient.js';
import { sseMessages, standardHeaders } from './httpRaw.js';

export type Json = Record<string, unknown>;

let counter = 0;
export const nextId = (prefix = 'raw') => `${prefix}:${++counter}`;

/** A well-formed 2026-07-28 request message (tasks envelope unless `meta` is given). */
export function request(method: string, params: Json = {}, id: string | number = nextId()): Json {
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: params._meta ?? envelope() } };
}

export interface HttpReply {
  status: number;
  contentType: string;
  text: string;
  /** The JSON body, or the first JSON-RPC response in an SSE body; undefined when there is none. */
  message: Json | undefined;
}

/** POSTs `body` (an object is serialized and gets the standard headers its method implies). */
export async function post(url: string, body: Json | string, headers: Record<string, string | null> = {}): Promise<HttpReply> {
  const message = typeof body === 'string' ? undefined : body;
  const all: Record<string, string> =
    message && typeof message.method === 'string'
      ? standardHeaders(message.method, (message.params ?? {}) as Json)
      : { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28' };
  for (const [name, value] of Object.entries(headers)) {
    if (value === null) delete all[name.toLowerCase()];
    else all[name.toLowerCase()] = value;
  }
  const response = await fetch(url, { method: 'POST', headers: all, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  return { status: response.status, contentType, text, message: parseReply(contentType, text) };
}

function parseReply(contentType: string, text: string): Json | undefined {
  if (!text) return undefined;
  if (contentType.includes('text/event-stream')) {
    for (const block of text.split(/\r?\n\r?\n/)) {
      const data = block
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (!data) continue;
      const message = JSON.parse(data) as Json;
      if ('result' in message || 'error' in message) return message;
    }
    return undefined;
  }
  try {
    return JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
}

/** An open HTTP listen stream (or the refusal). `close()` drops it. */
export async function openHttpListen(
  url: string,
  notifications: Json,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; first: Json | undefined; rest?: AsyncGenerator<Json[]>; close(): void }> {
  const message = request('subscriptions/listen', { notifications });
  const abort = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...standardHeaders('subscriptions/listen', message.params as Json), ...headers },
    body: JSON.stringify(message),
    signal: abort.signal,
  });
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const text = await response.text();
    return { status: response.status, headers: response.headers, first: JSON.parse(text) as Json, close: () => abort.abort() };
  }
  const frames = sseMessages(response.body!);
  let first: Json | undefined;
  while (!first) {
    const next = await frames.next();
    if (next.done) break;
    first = next.value[0];
  }
  // `rest`: the messages after the first, as they arrive (ends with the stream).
  return { status: response.status, headers: response.headers, first, rest: frames as AsyncGenerator<Json[]>, close: () => abort.abort() };
}

/** A raw WebSocket client: send any text, await answers by id. */
export class RawWs {
  readonly received: Json[] = [];
  private readonly waiters = new Set<() => void>();
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      try {
        this.received.push(JSON.parse(data.toString()) as Json);
      } catch {
        this.received.push({ unparseable: data.toString() });
      }
      for (const wake of [...this.waiters]) wake();
    });
    this.closed = new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    socket.once('close', () => {
      for (const wake of [...this.waiters]) wake();
    });
  }

  static open(url: string, headers: Record<string, string> = {}): Promise<RawWs> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, ['mcp'], { headers });
      socket.once('open', () => resolve(new RawWs(socket)));
      socket.once('error', reject);
    });
  }

  get isOpen(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  send(frame: Json | string): void {
    this.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The first received message matching `predicate` (already received or the next), or throws after `timeoutMs` or on close. */
  waitFor(predicate: (message: Json) => boolean, timeoutMs = 20_000): Promise<Json> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`no matching WebSocket message within ${timeoutMs} ms`)), timeoutMs);
      const check = () => {
        const found = this.received.find(predicate);
        if (found) done(undefined, found);
        else if (this.socket.readyState >= WebSocket.CLOSING) done(new Error('the WebSocket closed'));
      };
      const done = (error?: Error, value?: Json) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        if (error) reject(error);
        else resolve(value!);
      };
      this.waiters.add(check);
      check();
    });
  }

  /** Sends a request message and resolves its response. */
  async call(message: Json): Promise<Json> {
    this.send(message);
    return this.waitFor((m) => m.id === message.id && ('result' in m || 'error' in m));
  }

  close(): void {
    this.socket.close();
  }
}
