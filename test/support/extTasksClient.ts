/**
 * The official `@modelcontextprotocol/ext-tasks` client, connected to a
 * taskvisor server over real Streamable HTTP, a real stdio child process or a
 * real WebSocket.
 *
 * The SDK Client cannot decode `resultType: "task"` (P5), so ext-tasks needs
 * a host request coordinator (`rawDispatch`) on the Client's own transport
 * (sdk-v2-notes §3): the one `taskvisor/client` ships
 * (src/client/rawDispatch.ts), so these suites exercise it. What this helper
 * adds is for tests only: every message the server sends back is recorded so
 * tests can validate it with the ext-tasks V2 schemas. A test that only calls
 * tools and settles tasks uses `TasksClient` (taskvisor/client) instead.
 */
import { Client, StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createTaskSessionFromClient, type ApplicationInputHandler, type RawClientDispatch } from '@modelcontextprotocol/ext-tasks/client';
import { attachRawDispatch } from '../../src/client/rawDispatch.js';
import { WebSocketClientTransport } from '../../src/client/index.js';

export const PROTOCOL_VERSION = '2026-07-28';
export const CLIENT_INFO = { name: 'taskvisor-tests', version: '1.0.0' };
export const TASKS_CAPABILITIES = {
  elicitation: { form: {} },
  extensions: { 'io.modelcontextprotocol/tasks': {} },
};

export type Endpoint =
  | {
      kind: 'http';
      url: string;
      /** Extra headers on every POST (e.g. an identity for an `authenticate` hook). */ headers?: Record<string, string>;
    }
  | { kind: 'stdio'; command: string; args: string[]; env?: Record<string, string>; cwd?: string }
  | {
      kind: 'ws';
      url: string;
      /** Extra headers on the upgrade request (e.g. an identity for an `authenticate` hook). */ headers?: Record<string, string>;
    };

/** One request this client sent, and the response the server sent back for it (once it arrived). */
export interface Exchange {
  id: string | number;
  method: string;
  params: unknown;
  /** The JSON-RPC response message (`result` or `error`), also when it came with an HTTP error status. */
  response?: Record<string, unknown>;
}

export interface ConnectedClient {
  client: Client;
  transport: Transport;
  /** Sends one raw JSON-RPC request (method + params) and resolves its response. */
  raw: RawClientDispatch;
  /** Every response and notification the server sent, in order. */
  received: unknown[];
  /** Every request sent (by the SDK client, the raw path or the ext-tasks session) with its response. */
  exchanges: Exchange[];
  /** stdio only: what the child process wrote to stderr. */
  stderr: string[];
  /** Transport errors reported by the client transport (e.g. a non-JSON line on a stdio child's stdout). */
  transportErrors: Error[];
  close(): Promise<void>;
}

/** A pinned 2026-07-28 SDK client with a raw dispatch path for task traffic. */
export async function connect(endpoint: Endpoint, capabilities: Record<string, unknown> = TASKS_CAPABILITIES): Promise<ConnectedClient> {
  const transport: Transport =
    endpoint.kind === 'http'
      ? new StreamableHTTPClientTransport(
          new URL(endpoint.url),
          endpoint.headers ? { requestInit: { headers: endpoint.headers } } : undefined,
        )
      : endpoint.kind === 'ws'
        ? new WebSocketClientTransport(endpoint.url, endpoint.headers ? { headers: endpoint.headers } : {})
        : new StdioClientTransport({
            command: endpoint.command,
            args: endpoint.args,
            ...(endpoint.env ? { env: endpoint.env } : {}),
            ...(endpoint.cwd ? { cwd: endpoint.cwd } : {}),
            stderr: 'pipe',
          });
  const client = new Client(CLIENT_INFO, {
    capabilities: capabilities,
    versionNegotiation: { mode: { pin: PROTOCOL_VERSION } },
  });
  const received: unknown[] = [];
  const exchanges: Exchange[] = [];
  const byId = new Map<string | number, Exchange>();
  const stderr: string[] = [];
  const transportErrors: Error[] = [];
  if (transport instanceof StdioClientTransport) transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
  // Record every outgoing request (the SDK client's own ones too) so responses can be matched to their method.
  const send = transport.send.bind(transport);
  transport.send = (message: Record<string, unknown>, options?: unknown) => {
    if (typeof message.method === 'string' && (typeof message.id === 'string' || typeof message.id === 'number')) {
      const exchange: Exchange = { id: message.id, method: message.method, params: message.params };
      exchanges.push(exchange);
      byId.set(message.id, exchange);
    }
    return (send as (m: unknown, o?: unknown) => Promise<void>)(message, options);
  };
  const recordResponse = (message: Record<string, unknown>, id = message.id) => {
    const exchange = typeof id === 'string' || typeof id === 'number' ? byId.get(id) : undefined;
    if (exchange && ('result' in message || 'error' in message)) {
      exchange.response = message;
      byId.delete(exchange.id);
    }
  };

  // send is wrapped before connecting so the SDK client's own requests are recorded too.
  await client.connect(transport);
  const previousOnError = transport.onerror;
  transport.onerror = (error: Error) => {
    transportErrors.push(error);
    previousOnError?.call(transport, error);
  };

  // The raw path is the shipped client's own (src/client/rawDispatch.ts); this helper only records.
  const raw = attachRawDispatch(transport, {
    // A response stream that ends without a response must fail the test, not hang it.
    timeoutMs: 30_000,
    onHttpErrorResponse: (response, id) => {
      received.push(response);
      recordResponse(response, id);
    },
  });
  const dispatch = transport.onmessage!;
  transport.onmessage = (message: Record<string, unknown>, extra?: unknown) => {
    received.push(message);
    recordResponse(message);
    (dispatch as (m: unknown, e?: unknown) => void).call(transport, message, extra);
  };

  return {
    client,
    transport,
    raw,
    received,
    exchanges,
    stderr,
    transportErrors,
    close: async () => {
      await client.close();
    },
  };
}

/** The per-request `_meta` envelope a 2026-07-28 client sends. */
export function envelope(capabilities: Record<string, unknown> = TASKS_CAPABILITIES): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
    'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
  };
}

/** An ext-tasks session on a connected client. */
export function taskSession(connected: ConnectedClient, onInputRequest?: ApplicationInputHandler['handle']) {
  return createTaskSessionFromClient(connected.client, {
    endpointId: 'taskvisor-test',
    rawDispatch: connected.raw,
    v2RequestFraming: {
      protocolVersion: PROTOCOL_VERSION,
      clientInfo: CLIENT_INFO,
      clientCapabilities: TASKS_CAPABILITIES,
    },
    ...(onInputRequest ? { onInputRequest } : {}),
  });
}
