/**
 * `taskvisor/client`: a small client for MCP servers speaking
 * the Tasks extension (2026-07-28), on the v2 SDK `Client` and the official
 * `@modelcontextprotocol/ext-tasks` session. One call gives a tool's result
 * whether the server answers directly or with a task; a task is settled with
 * a `subscriptions/listen` stream when the server has one (pushes end the
 * wait at once), with `tasks/get` polling at the server's `pollIntervalMs`
 * underneath either way; input requests go to a callback; an `AbortSignal`
 * cancels; status changes go to a callback.
 */
import {
  Client,
  StreamableHTTPClientTransport,
  type CallToolResult,
  type McpSubscription,
  type SubscriptionFilter,
  type Transport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
  type ApplicationCreateMessageResult,
  type ApplicationElicitResult,
  type ApplicationInputRequest,
  type ApplicationInputResult,
  type ApplicationListRootsResult,
  type ResolvedInputExchangeContext,
  type TaskEnabledSession,
  type TaskState,
  type TaskView,
  type ToolExecution,
} from '@modelcontextprotocol/ext-tasks/client';
// ext-tasks' own brand for a task id (no validation), instead of a cast.
import { taskId as brandTaskId, type JsonValue } from '@modelcontextprotocol/ext-tasks/core';
import { TASKS_EXTENSION_ID } from '../core/tasksExtension.js';
import { attachRawDispatch } from './rawDispatch.js';
import { WebSocketClientTransport } from './WebSocketClientTransport.js';

/** The protocol revision this client speaks. */
export const CLIENT_PROTOCOL_VERSION = '2026-07-28';

/** Where the server is: a URL (`http(s)://` Streamable HTTP, `ws(s)://` WebSocket) or a command to spawn (stdio). */
export type TasksEndpoint =
  | {
      url: string | URL;
      /** Extra headers on every HTTP request or on the WebSocket upgrade (e.g. `Authorization`). */
      headers?: Record<string, string>;
    }
  | {
      /** The server command, spawned with `args`; MCP over its stdin/stdout. */
      command: string;
      args?: string[];
      /** Its environment (default: the SDK's safe subset of this process's). */
      env?: Record<string, string>;
      cwd?: string;
      /** Where its stderr goes. Default `inherit` (`pipe` when `onStderr` is given). */
      stderr?: 'inherit' | 'pipe' | 'ignore';
      /** Receives its stderr as it comes (e.g. to show why it failed to start). */
      onStderr?: (text: string) => void;
    };

/** What a server may ask the user for while a tool runs (elicitation, sampling, roots). */
export type InputRequest = ApplicationInputRequest;

/** The answer to an {@link InputRequest}: for an elicitation `{ action: 'accept', content }`, `decline` or `cancel`. */
export type InputAnswer = ApplicationElicitResult | ApplicationCreateMessageResult | ApplicationListRootsResult;

/** Where an input request comes from. */
export interface InputRequestContext {
  /** The task asking, when the call became a task. */
  taskId?: string;
  /** The key of the request within the task's `inputRequests`. */
  inputId?: string;
  /** Aborted when the answer is no longer wanted (the task ended or was cancelled). */
  signal?: AbortSignal;
}

/** Answers input requests; throwing fails the call. */
export type InputRequestHandler = (request: InputRequest, context: InputRequestContext) => InputAnswer | Promise<InputAnswer>;

/** A task's state as a status callback sees it. */
export interface TaskStatusUpdate {
  taskId: string;
  status: TaskState;
  statusMessage?: string;
  /** The whole task as the server sent it (`inputRequests`, `pollIntervalMs`, …). */
  task: TaskView;
}

export interface TasksClientOptions {
  /** Reported to the server. Default `{ name: 'taskvisor-client', version: '1' }`. */
  clientInfo?: { name: string; version: string };
  /**
   * Answers input requests of every call (a call may pass its own). Giving
   * one declares the form elicitation capability; without it the client
   * declares none and servers refuse tools that need input (-32021).
   */
  onInputRequest?: InputRequestHandler;
  /** Declare form elicitation even without a connect-time handler (each call passes its own). */
  elicitation?: boolean;
  /** Per-request timeout (initiating call and task follow-ups). Default: the SDK's 60 s. */
  requestTimeoutMs?: number;
  /** Background errors of the session (e.g. a malformed notification). Default: ignored. */
  onError?: (error: Error) => void;
}

export interface CallToolOptions {
  /** Aborting cancels: `tasks/cancel` for a task (the call then rejects with the signal's reason), the request otherwise. */
  signal?: AbortSignal;
  /** Called on every change of the task's status or `statusMessage`. */
  onStatus?: (update: TaskStatusUpdate) => void;
  /** Called once when the call has become a task. */
  onTask?: (taskId: string) => void;
  /** Answers this call's input requests (overrides the client's). */
  onInputRequest?: InputRequestHandler;
}

/** Per-call state travelling with ext-tasks' `applicationContext`. */
interface CallContext {
  onInputRequest: InputRequestHandler | undefined;
}

/**
 * A connected Tasks client.
 *
 * @example
 * ```ts
 * import { TasksClient } from 'taskvisor/client';
 *
 * const client = await TasksClient.connect({ url: 'http://127.0.0.1:3000/mcp' }, {
 *   onInputRequest: async (request) => ({ action: 'accept', content: { name: 'Ada' } }),
 * });
 * const result = await client.callTool('sleep', { ms: 2000 }, {
 *   onStatus: ({ status, statusMessage }) => console.log(status, statusMessage),
 *   signal: AbortSignal.timeout(60_000),
 * });
 * await client.close();
 * ```
 */
export class TasksClient {
  private listenUnsupported = false;

  private constructor(
    /** The underlying v2 SDK client (tools/list, resources, … go through it). */
    readonly mcp: Client,
    /** The ext-tasks session driving tool calls and tasks. */
    readonly session: TaskEnabledSession<CallContext>,
    private readonly options: TasksClientOptions,
  ) {}

  /**
   * Connects, negotiates 2026-07-28 and declares the tasks extension.
   * Rejects when the server cannot be reached or refuses the connection.
   */
  static async connect(endpoint: TasksEndpoint, options: TasksClientOptions = {}): Promise<TasksClient> {
    const clientInfo = options.clientInfo ?? { name: 'taskvisor-client', version: '1' };
    const capabilities = {
      ...(options.onInputRequest || options.elicitation ? { elicitation: { form: {} } } : {}),
      extensions: { [TASKS_EXTENSION_ID]: {} },
    };
    const mcp = new Client(clientInfo, {
      capabilities,
      versionNegotiation: { mode: { pin: CLIENT_PROTOCOL_VERSION } },
    });
    const transport = transportFor(endpoint);
    await mcp.connect(transport);
    const rawDispatch = attachRawDispatch(transport, options.requestTimeoutMs !== undefined ? { timeoutMs: options.requestTimeoutMs } : {});
    const fallback = options.onInputRequest;
    const session = createTaskSessionFromClient<CallContext>(mcp, {
      endpointId: `taskvisor-client:${endpointText(endpoint)}`,
      rawDispatch,
      v2RequestFraming: { protocolVersion: CLIENT_PROTOCOL_VERSION, clientInfo, clientCapabilities: capabilities },
      onInputRequest: async <TRequest extends ApplicationInputRequest>(
        request: TRequest,
        context: ResolvedInputExchangeContext<CallContext>,
      ): Promise<ApplicationInputResult<TRequest>> => {
        const handler = context.applicationContext?.onInputRequest ?? fallback;
        if (!handler) throw new Error(`the server asked for input (${request.kind}) and no onInputRequest handler was given`);
        // Cast: ext-tasks types the answer by the request's kind (a conditional type TypeScript cannot narrow inside a
        // generic body); one user handler serves every kind and answers whichever kind it was asked.
        return handler(request, {
          ...(context.taskId !== undefined ? { taskId: String(context.taskId) } : {}),
          ...(context.inputId !== undefined ? { inputId: context.inputId } : {}),
          ...(context.signal ? { signal: context.signal } : {}),
        }) as Promise<ApplicationInputResult<TRequest>>;
      },
      ...(options.onError ? { onError: options.onError } : {}),
    });
    return new TasksClient(mcp, session, options);
  }

  /**
   * Calls a tool and resolves with its result, whether the server answered
   * directly or created a task (then settled: listen stream, else polling).
   * A result with `isError: true` resolves; a JSON-RPC error or a `failed`
   * task rejects with ext-tasks' `TaskFailedError`/`JsonRpcResponseError`
   * (with `code`), a task cancelled elsewhere with `TaskCancelledError`, and
   * an aborted `signal` with the signal's reason once the server confirmed.
   */
  async callTool(name: string, args: Record<string, unknown> = {}, options: CallToolOptions = {}): Promise<CallToolResult> {
    const { signal } = options;
    signal?.throwIfAborted();
    // Until the call is answered, aborting aborts the request itself.
    const initiating = new AbortController();
    const abortInitiating = () => initiating.abort(signal!.reason);
    signal?.addEventListener('abort', abortInitiating, { once: true });
    let execution: ToolExecution<CallToolResult, CallContext>;
    try {
      // Cast: the public signature takes Record<string, unknown> (serialised as JSON); ext-tasks wants JsonValue members.
      execution = await this.session.callTool<CallToolResult>(name, args as Readonly<Record<string, JsonValue>>, {
        applicationContext: { onInputRequest: options.onInputRequest },
        signal: initiating.signal,
        ...(this.options.requestTimeoutMs !== undefined ? { requestTimeoutMs: this.options.requestTimeoutMs } : {}),
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw error;
    } finally {
      signal?.removeEventListener('abort', abortInitiating);
    }
    return this.settle(execution, options);
  }

  /**
   * Follows a task created elsewhere (another process, an earlier run) to its
   * end, with the same status, input and cancel handling as {@link callTool}.
   */
  async watchTask(taskId: string, options: CallToolOptions = {}): Promise<CallToolResult> {
    options.signal?.throwIfAborted();
    const execution = await this.session.resumeTask<CallToolResult>(
      { endpointId: this.session.endpointId, generation: 'v2', taskId: brandTaskId(taskId), originalOperation: 'tools/call' },
      { applicationContext: { onInputRequest: options.onInputRequest } },
    );
    return this.settle(execution, options);
  }

  /** The task as `tasks/get` returns it now. Rejects (`JsonRpcResponseError`, -32602) for an unknown task. */
  async getTask(taskId: string, signal?: AbortSignal): Promise<TaskView> {
    return this.session.task(brandTaskId(taskId)).snapshot(signal);
  }

  /** Asks the server to cancel a task (`tasks/cancel`); the task ends `cancelled` unless it already ended. */
  async cancelTask(taskId: string, signal?: AbortSignal): Promise<void> {
    await this.session.task(brandTaskId(taskId)).cancel(signal);
  }

  /** The server's tools (`tools/list`, every page). */
  async listTools(): Promise<Awaited<ReturnType<Client['listTools']>>['tools']> {
    const tools = [];
    let cursor: string | undefined;
    do {
      const page = await this.mcp.listTools(cursor !== undefined ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  }

  /** Closes the session and the connection (a stdio server is stopped). Idempotent. */
  async close(): Promise<void> {
    await this.session.close().catch(() => undefined);
    await this.mcp.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private async settle(execution: ToolExecution<CallToolResult, CallContext>, options: CallToolOptions): Promise<CallToolResult> {
    const { signal } = options;
    let subscribing: Promise<McpSubscription | undefined> | undefined;
    if (execution.kind === 'task') {
      options.onTask?.(String(execution.handle.taskId));
      subscribing = this.listenTo(String(execution.handle.taskId));
    }
    const cancel = () => void execution.cancel().catch(() => undefined);
    if (signal?.aborted) cancel();
    else signal?.addEventListener('abort', cancel, { once: true });
    let last = '';
    try {
      const { outcome } = await execution.settle({
        onEvent: (event) => {
          if (event.type !== 'task' || !options.onStatus) return;
          const key = `${event.task.status}\u0000${event.task.statusMessage ?? ''}`;
          if (key === last) return;
          last = key;
          options.onStatus({
            taskId: String(event.task.taskId),
            status: event.task.status,
            ...(event.task.statusMessage !== undefined ? { statusMessage: event.task.statusMessage } : {}),
            task: event.task,
          });
        },
      });
      if (outcome.status === 'cancelled' && signal?.aborted) throw signal.reason;
      return resultFromTaskOutcome(outcome);
    } finally {
      signal?.removeEventListener('abort', cancel);
      const subscription = await subscribing;
      await subscription?.close().catch(() => undefined);
    }
  }

  /**
   * Opens a listen stream for one task so its changes are pushed (spec §1.9);
   * the ext-tasks session takes the `notifications/tasks` frames as they
   * come. A server without `subscriptions/listen` leaves polling alone.
   */
  private async listenTo(taskId: string): Promise<McpSubscription | undefined> {
    if (this.listenUnsupported) return undefined;
    try {
      // SubscriptionFilter in the published SDK types lacks the Tasks extension's `taskIds` (P8): typed as the SDK's
      // filter plus that member (the SDK's members are all optional), so no cast is needed.
      const filter: SubscriptionFilter & { taskIds: string[] } = { taskIds: [taskId] };
      return await this.mcp.listen(filter);
    } catch {
      this.listenUnsupported = true;
      return undefined;
    }
  }
}

/**
 * The SDK's stdio transport, as a subclass: the SDK probes the protocol version of its exact class on a
 * throwaway sibling process whose stderr it discards, so a server that fails to start would say why to no
 * one. A subclass is probed in place, on the one process whose stderr `onStderr` reads (and the server is
 * spawned once, not twice; with the version pinned there is no legacy fallback for a sibling to protect).
 */
class ObservedStdioClientTransport extends StdioClientTransport {}

function transportFor(endpoint: TasksEndpoint): Transport {
  if ('command' in endpoint) {
    const { onStderr } = endpoint;
    const transport = new (onStderr ? ObservedStdioClientTransport : StdioClientTransport)({
      command: endpoint.command,
      args: endpoint.args ?? [],
      ...(endpoint.env ? { env: endpoint.env } : {}),
      ...(endpoint.cwd ? { cwd: endpoint.cwd } : {}),
      stderr: onStderr ? 'pipe' : (endpoint.stderr ?? 'inherit'),
    });
    // With `pipe` the SDK hands out its stderr stream before the process starts, so nothing it writes is missed.
    if (onStderr) transport.stderr?.on('data', (chunk: Buffer) => onStderr(chunk.toString('utf8')));
    return transport;
  }
  const url = new URL(endpoint.url);
  if (url.protocol === 'ws:' || url.protocol === 'wss:') {
    return new WebSocketClientTransport(url, endpoint.headers ? { headers: endpoint.headers } : {});
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`unsupported URL scheme ${url.protocol} (expected http:, https:, ws: or wss:)`);
  }
  return new StreamableHTTPClientTransport(url, endpoint.headers ? { requestInit: { headers: endpoint.headers } } : undefined);
}

/** A stable name for the endpoint (scopes ext-tasks' serialized task references); never holds headers. */
function endpointText(endpoint: TasksEndpoint): string {
  if ('command' in endpoint) return `stdio:${endpoint.command}`;
  const url = new URL(endpoint.url);
  return `${url.protocol}//${url.host}${url.pathname}`;
}
