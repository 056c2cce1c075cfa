/**
 * Hand-made Streamable HTTP POSTs, for what a well-behaved client never
 * sends (missing or mismatched headers) and for reading HTTP status codes.
 */
import { envelope, PROTOCOL_VERSION, TASKS_CAPABILITIES } from './extTasksClient.js';
import { checkExchange, checkNotification, type WireCounts } from './wireChecks.js';

/** What the V2 schema checks saw of the replies to hand-made POSTs (they are checked too). */
export const rawWireCounts: WireCounts = {};

function assertWire(problems: string[]): void {
  if (problems.length > 0) throw new Error(`Server messages failed the ext-tasks V2 schema checks:\n- ${problems.join('\n- ')}`);
}

export interface RawHttpReply {
  status: number;
  contentType: string;
  /** The JSON-RPC message of the reply (from a JSON body or the first SSE `data:` event). */
  message:
    | { jsonrpc?: string; id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } }
    | undefined;
  text: string;
}

let counter = 0;

/** The headers a 2026-07-28 client derives from the body (SEP-2243, T-60). */
export function standardHeaders(method: string, params: Record<string, unknown>): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL_VERSION,
    'mcp-method': method,
  };
  const name = method === 'tools/call' || method === 'prompts/get' ? params.name : method.startsWith('tasks/') ? params.taskId : undefined;
  if (typeof name === 'string') headers['mcp-name'] = name;
  return headers;
}

/**
 * POSTs one JSON-RPC request. `params._meta` defaults to the tasks envelope;
 * `headers` overrides (a `null` value removes a standard header).
 */
export async function postJsonRpc(
  url: string,
  method: string,
  params: Record<string, unknown>,
  options: { capabilities?: Record<string, unknown>; headers?: Record<string, string | null> } = {},
): Promise<RawHttpReply> {
  const fullParams = { ...params, _meta: params._meta ?? envelope(options.capabilities ?? TASKS_CAPABILITIES) };
  const headers = standardHeaders(method, fullParams);
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value === null) delete headers[name.toLowerCase()];
    else headers[name.toLowerCase()] = value;
  }
  const id = `http-raw:${++counter}`;
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: fullParams }),
  });
  const text = await response.text();
  const contentType = response.headers.get('content-type') ?? '';
  const message = parseBody(contentType, text);
  if (message) assertWire(checkExchange({ id, method, params: fullParams, response: message }, rawWireCounts));
  return { status: response.status, contentType, message, text };
}

function parseBody(contentType: string, text: string): RawHttpReply['message'] {
  if (!text) return undefined;
  if (contentType.includes('text/event-stream')) {
    for (const block of text.split(/\r?\n\r?\n/)) {
      const data = block
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (!data) continue;
      const message = JSON.parse(data) as NonNullable<RawHttpReply['message']>;
      if ('result' in message || 'error' in message) return message;
    }
    return undefined;
  }
  try {
    return JSON.parse(text) as RawHttpReply['message'];
  } catch {
    return undefined;
  }
}

/**
 * Opens a `subscriptions/listen` stream and collects its JSON-RPC messages
 * for up to `forMs` (or until the listen request's own response arrives).
 */
export async function collectListen(
  url: string,
  notifications: Record<string, unknown>,
  options: {
    capabilities?: Record<string, unknown>;
    forMs?: number;
    /** Extra request headers (e.g. Authorization). */ headers?: Record<string, string>;
  } = {},
): Promise<{ status: number; messages: Array<Record<string, unknown>>; id: string }> {
  const id = `listen:${++counter}`;
  const params = { notifications, _meta: envelope(options.capabilities ?? TASKS_CAPABILITIES) };
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), options.forMs ?? 300);
  const messages: Array<Record<string, unknown>> = [];
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { ...standardHeaders('subscriptions/listen', params), ...options.headers },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params }),
      signal: abort.signal,
    });
    if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
      const text = await response.text();
      messages.push(JSON.parse(text) as Record<string, unknown>);
      return { status: response.status, messages, id };
    }
    try {
      for await (const batch of sseMessages(response.body!)) {
        messages.push(...batch);
        if (messages.some((message) => message.id === id)) break;
      }
    } catch (error) {
      if (!abort.signal.aborted) throw error;
    }
    assertWire(messages.flatMap((message) => checkNotification(message, rawWireCounts)));
    return { status: response.status, messages, id };
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

/**
 * The JSON-RPC messages of an SSE response body, one batch per chunk read
 * (the `data:` lines of each event joined, as the SSE format defines).
 */
export async function* sseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<Record<string, unknown>[]> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    const batch: Record<string, unknown>[] = [];
    let cut: number;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, '');
      const data = block
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (data) batch.push(JSON.parse(data) as Record<string, unknown>);
    }
    yield batch;
  }
}
