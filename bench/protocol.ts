/**
 * What every benchmark client sends: valid 2026-07-28 JSON-RPC requests with
 * the per-request `_meta` envelope and the SEP-2243 headers
 * (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`), and the parsing of the
 * replies (a JSON body, or an SSE stream whose `data:` events carry JSON-RPC).
 */
export const PROTOCOL_VERSION = '2026-07-28';
export const TASKS_EXTENSION_ID = 'io.modelcontextprotocol/tasks';
export const CLIENT_INFO = { name: 'taskvisor-bench', version: '1.0.0' };
export const TASKS_CAPABILITIES = { extensions: { [TASKS_EXTENSION_ID]: {} } };

export type Json = Record<string, unknown>;

/** One request a load generator sends: method and params without `_meta` (added here). */
export interface RpcCall {
  method: string;
  params: Json;
  /** The client capabilities its `_meta` declares; default {@link TASKS_CAPABILITIES}. */
  capabilities?: Json;
}

/** The `_meta` envelope of a 2026-07-28 request. */
export function envelope(capabilities: Json = TASKS_CAPABILITIES): Json {
  return {
    'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
    'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
  };
}

const ENVELOPE = envelope();

/** Headers and body of one POST. `Mcp-Name` carries the tool name (tools/call) or the task id (tasks/*). */
export function encodeRequest(id: string | number, call: RpcCall): { headers: Record<string, string>; body: Buffer } {
  const params = { ...call.params, _meta: call.capabilities ? envelope(call.capabilities) : ENVELOPE };
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method: call.method, params }), 'utf8');
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL_VERSION,
    'mcp-method': call.method,
    'content-length': String(body.length),
  };
  const name = call.method === 'tools/call' ? call.params.name : call.method.startsWith('tasks/') ? call.params.taskId : undefined;
  if (typeof name === 'string') headers['mcp-name'] = name;
  return { headers, body };
}

/** The JSON-RPC response in a reply body (JSON, or the first SSE event carrying `result`/`error`). */
export function parseReply(contentType: string, text: string): { result?: Json; error?: { code: number; message: string } } | undefined {
  if (contentType.includes('text/event-stream')) {
    for (const block of text.split(/\r?\n\r?\n/)) {
      const data = block
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (!data) continue;
      const message = JSON.parse(data) as { result?: Json; error?: { code: number; message: string } };
      if ('result' in message || 'error' in message) return message;
    }
    return undefined;
  }
  try {
    return JSON.parse(text) as { result?: Json; error?: { code: number; message: string } };
  } catch {
    return undefined;
  }
}
