/**
 * One live connection to an upstream MCP server through the v2 SDK client
 * (`@modelcontextprotocol/client`), for both eras: `versionNegotiation:
 * 'auto'` talks 2026-07-28 to servers that offer it and falls back to the
 * 2025-11-25 `initialize` handshake otherwise. A cached `server/discover`
 * result (the runtime state file) is handed to `connect({ prior })`, so a
 * reconnect costs no probe.
 *
 * Task traffic goes through a raw path on the client's own transport (the
 * SDK client cannot decode `resultType: "task"`, P5): `request()` frames
 * the 2026 `_meta` envelope itself, with the capabilities the caller chooses
 * per request (T-01), and the HTTP transport derives `Mcp-Method` and
 * `Mcp-Name` (= `params.taskId` of `tasks/*`) from the framed body.
 */
import { performance } from 'node:perf_hooks';
import { publish } from '../core/diagnostics.js';
import { Client, ProtocolError, StreamableHTTPClientTransport, type PriorDiscovery, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { tapStdoutNoise, type StdoutNoise } from './stdoutNoise.js';
import { responseId, tapInbound } from '../protocol/transportTap.js';
import type { JsonObject } from '../core/json.js';
import { declaresTasksExtension, tasksCapability } from '../core/tasksExtension.js';
import { isLogLevel, type LogMessage, type ProgressUpdate } from '../tools/CallerRelay.js';
import type { Logger } from '../runtime/Logger.js';
import type { ListedTool } from '../tools/ToolRegistry.js';
import type { CachedDiscovery } from './RuntimeStateFile.js';
import { DEFAULT_UPSTREAM_TIMEOUT_MS, type UpstreamSpec } from './UpstreamSpec.js';
import { LegacyInputRequests, RELATED_TASK_META_KEY, type ElicitAnswer } from './LegacyInputRequests.js';
import { UpstreamUnavailableError } from './UpstreamUnavailableError.js';

export const UPSTREAM_CLIENT_INFO = { name: 'taskvisor-aggregator', version: '0.1.0' };

/** An upstream's answer to one raw request. */
export type RawOutcome =
  { kind: 'result'; result: JsonObject } | { kind: 'error'; error: { code: number; message: string; data?: unknown } };

/** One upstream tool as its `tools/list` described it: the same shape the registry lists. */
export type UpstreamTool = ListedTool;

export { UpstreamUnavailableError };

interface Pending {
  resolve: (outcome: RawOutcome) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

export class UpstreamConnection {
  readonly client: Client;
  private transport: Transport | undefined;
  private readonly pending = new Map<string, Pending>();
  private counter = 0;
  private closed = false;
  private readonly closeListeners = new Set<(reason: string) => void>();
  private readonly toolsChangedListeners = new Set<() => void>();
  private stderrTail = '';
  /** Non-protocol lines the stdio child wrote to stdout (the SDK drops them silently). */
  private stdoutNoise: StdoutNoise | undefined;
  /** Who receives the upstream's `notifications/progress`, by the progress token we sent. */
  private readonly progressListeners = new Map<string, (update: ProgressUpdate) => void>();
  /** Callers with a call in flight that take log messages (see {@link addLogSink}). */
  private readonly logSinks = new Set<(message: LogMessage) => void>();
  /** Open upstream listen streams by request id: their frames and their end. */
  private readonly streams = new Map<string, { frame(params: JsonObject): void; ended(): void }>();
  /** Input requests of this upstream's 2025-11-25 tasks, until a caller answers them. */
  readonly inputs = new LegacyInputRequests();

  constructor(
    readonly spec: UpstreamSpec,
    private readonly logger: Logger,
  ) {
    // `elicitation.form` lets a 2025-11-25 upstream task ask for input (relayed as the task's inputRequests); a
    // 2026-07-28 upstream sees the caller's own capabilities on each request instead (T-01).
    this.client = new Client(UPSTREAM_CLIENT_INFO, {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: 'auto' },
    });
  }

  get timeoutMs(): number {
    return this.spec.timeout ?? DEFAULT_UPSTREAM_TIMEOUT_MS;
  }

  /** `modern` (2026-07-28) or `legacy` (2025-11-25). */
  get era(): 'modern' | 'legacy' {
    return this.client.getProtocolEra() === 'modern' ? 'modern' : 'legacy';
  }

  get protocolVersion(): string {
    return this.client.getNegotiatedProtocolVersion() ?? 'unknown';
  }

  /** Whether the upstream declared the tasks extension (2026-07-28 `extensions`, T-11). */
  get tasks(): boolean {
    return this.era === 'modern' && declaresTasksExtension(this.client.getServerCapabilities());
  }

  /** What to cache so the next connect needs no probe. */
  get discovery(): CachedDiscovery {
    const discover = this.client.getDiscoverResult();
    return this.era === 'modern' && discover ? { kind: 'modern', discover } : { kind: 'legacy' };
  }

  /** Connects (with the cached verdict when there is one) and wires the raw path. */
  async open(prior?: CachedDiscovery): Promise<void> {
    const transport = this.createTransport();
    this.transport = transport;
    this.client.onclose = () => this.markClosed('the connection closed');
    // Any catalog list changing re-reads the whole catalog (tools, resources, prompts).
    for (const method of [
      'notifications/tools/list_changed',
      'notifications/resources/list_changed',
      'notifications/prompts/list_changed',
    ] as const) {
      this.client.setNotificationHandler(method, () => {
        for (const listener of this.toolsChangedListeners) listener();
      });
    }
    this.client.setRequestHandler('elicitation/create', (request) => this.elicitationArrived(request.params as JsonObject));
    await withTimeout(
      this.client.connect(transport, prior ? { prior: prior as PriorDiscovery } : undefined),
      this.timeoutMs,
      () => `connecting timed out after ${this.timeoutMs} ms`,
    ).catch((error: unknown) => {
      // Whatever connecting ran into (a timeout, a closed pipe), non-protocol stdout is the likelier cause: say so.
      const note = this.noiseNote();
      throw note ? new Error(`${(error as Error)?.message ?? String(error)}${note}`) : error;
    });
    // P5: task traffic and our listen streams are answered on this transport, past the SDK Client (protocol/transportTap.ts).
    tapInbound(transport, (inbound) => {
      const message = inbound as Record<string, unknown>;
      const id = responseId(inbound);
      if (message.method === 'notifications/progress' && message.id === undefined) {
        this.progressArrived(message.params);
        return true;
      }
      if (message.method === 'notifications/message' && message.id === undefined) {
        this.logArrived(message.params);
        return true;
      }
      const subscription = ((message.params as JsonObject | undefined)?._meta as JsonObject | undefined)?.[
        'io.modelcontextprotocol/subscriptionId'
      ];
      if (typeof message.method === 'string' && typeof subscription === 'string' && this.streams.has(subscription)) {
        if (message.method === 'notifications/tasks') this.streams.get(subscription)!.frame(message.params as JsonObject);
        return true;
      }
      if (typeof id === 'string' && this.streams.has(id)) {
        const stream = this.streams.get(id)!;
        this.streams.delete(id);
        stream.ended();
        return true;
      }
      const pending = typeof id === 'string' ? this.pending.get(id) : undefined;
      if (!pending) return false;
      this.pending.delete(id as string);
      clearTimeout(pending.timer);
      pending.resolve(
        'error' in inbound ? { kind: 'error', error: inbound.error } : { kind: 'result', result: message.result as JsonObject },
      );
      return true;
    });
  }

  /** Every tool the upstream lists (all pages). */
  async listTools(): Promise<UpstreamTool[]> {
    const tools: UpstreamTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 1000; page++) {
      const result = await withTimeout(
        this.client.listTools(cursor ? { cursor } : undefined),
        this.timeoutMs,
        () => `tools/list timed out after ${this.timeoutMs} ms`,
      );
      // Cast: the SDK's Tool type (zod-inferred, exact inputSchema) vs our JSON ListedTool; the SDK validated the listing.
      tools.push(...(result.tools as unknown as UpstreamTool[]));
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return tools;
  }

  /**
   * The upstream's resources, resource templates and prompts (all pages),
   * each only when it advertised the capability; and whether it completes.
   */
  async listCatalog(): Promise<{ resources: JsonObject[]; templates: JsonObject[]; prompts: JsonObject[]; completes: boolean }> {
    const capabilities = (this.client.getServerCapabilities() ?? {}) as JsonObject;
    const all = async (method: string, key: string, list: (cursor?: string) => Promise<JsonObject>): Promise<JsonObject[]> => {
      const items: JsonObject[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 1000; page++) {
        const result = await withTimeout(list(cursor), this.timeoutMs, () => `${method} timed out after ${this.timeoutMs} ms`);
        if (Array.isArray(result[key])) items.push(...(result[key] as JsonObject[]));
        cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
        if (!cursor) break;
      }
      return items;
    };
    const page = (cursor?: string) => (cursor ? { cursor } : undefined);
    const hasResources = capabilities.resources !== undefined;
    return {
      resources: hasResources ? await all('resources/list', 'resources', async (c) => await this.client.listResources(page(c))) : [],
      templates: hasResources
        ? await all('resources/templates/list', 'resourceTemplates', async (c) => await this.client.listResourceTemplates(page(c)))
        : [],
      prompts:
        capabilities.prompts !== undefined ? await all('prompts/list', 'prompts', async (c) => await this.client.listPrompts(page(c))) : [],
      completes: capabilities.completions !== undefined,
    };
  }

  /**
   * A liveness probe: `ping` on 2025-11-25; 2026-07-28 has no `ping`, so
   * there it is `server/discover` (stateless and cheap).
   */
  async ping(): Promise<void> {
    const probe = this.era === 'modern' ? this.client.discover() : this.client.ping();
    await withTimeout(
      probe,
      this.timeoutMs,
      () => `${this.era === 'modern' ? 'server/discover' : 'ping'} timed out after ${this.timeoutMs} ms`,
    );
  }

  /**
   * Sends one request on the raw path. On 2026-07-28 the `_meta` envelope
   * carries `capabilities` (what *this* request declares upstream, T-01).
   * Rejects with {@link UpstreamUnavailableError} when there is no answer.
   */
  request(
    method: string,
    params: JsonObject,
    capabilities: JsonObject,
    options: { signal?: AbortSignal; progressToken?: string; noDeadline?: boolean } = {},
  ): Promise<RawOutcome> {
    if (this.closed || !this.transport) {
      return Promise.reject(new UpstreamUnavailableError(this.spec.name, `upstream ${this.spec.name} is not connected`));
    }
    const transport = this.transport;
    const startedAt = performance.now();
    const id = `tv:${++this.counter}`;
    const meta = {
      ...((params._meta as JsonObject | undefined) ?? {}),
      ...(options.progressToken !== undefined ? { progressToken: options.progressToken } : {}),
    };
    const framed =
      this.era === 'modern'
        ? {
            ...params,
            _meta: {
              ...meta,
              'io.modelcontextprotocol/protocolVersion': this.protocolVersion,
              'io.modelcontextprotocol/clientInfo': UPSTREAM_CLIENT_INFO,
              'io.modelcontextprotocol/clientCapabilities': capabilities,
            },
          }
        : Object.keys(meta).length > 0
          ? { ...params, _meta: meta }
          : params;
    const answered = new Promise<RawOutcome>((resolve, reject) => {
      // A request that blocks by design (2025-11-25 `tasks/result` until the task ends) has no deadline; closing ends it.
      const timer = setTimeout(
        () => {
          if (!this.pending.delete(id)) return;
          reject(
            new UpstreamUnavailableError(this.spec.name, `upstream ${this.spec.name} did not answer ${method} within ${this.timeoutMs} ms`),
          );
        },
        options.noDeadline ? 2 ** 31 - 1 : this.timeoutMs,
      );
      timer.unref();
      this.pending.set(id, { resolve, reject, timer });
      const onAbort = () => {
        // Tell the upstream the request is abandoned (a synchronous call stops there too).
        void transport
          .send({
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: id, reason: 'The inbound request was cancelled' },
          })
          .catch(() => {});
      };
      options.signal?.addEventListener('abort', onAbort, { once: true });
      transport.send({ jsonrpc: '2.0', id, method, params: framed }).catch((error: unknown) => {
        const pending = this.pending.get(id);
        if (!pending) return;
        this.pending.delete(id);
        clearTimeout(pending.timer);
        if (error instanceof ProtocolError)
          return resolve({
            kind: 'error',
            error: { code: error.code, message: error.message, ...(error.data !== undefined ? { data: error.data } : {}) },
          });
        // A JSON-RPC error answered with an HTTP error status (400 -32021, 404 -32601) arrives as SdkHttpError.
        const text = (error as { data?: { text?: unknown } })?.data?.text;
        if (typeof text === 'string') {
          try {
            const body = JSON.parse(text) as { error?: { code: number; message: string } };
            if (body.error) return resolve({ kind: 'error', error: body.error });
          } catch {
            // not JSON: fall through
          }
        }
        reject(new UpstreamUnavailableError(this.spec.name, `upstream ${this.spec.name}: ${(error as Error)?.message ?? String(error)}`));
      });
    });
    // Reported on taskvisor:upstream.call once settled (metrics, spans: issue 16).
    const traceparent = (meta as { traceparent?: unknown }).traceparent;
    const report = (outcome: 'result' | 'error' | 'unavailable') =>
      publish('taskvisor:upstream.call', () => ({
        upstream: this.spec.name,
        method,
        durationMs: performance.now() - startedAt,
        outcome,
        ...(typeof traceparent === 'string' ? { traceparent } : {}),
      }));
    answered.then(
      (settled) => report(settled.kind),
      () => report('unavailable'),
    );
    return answered;
  }

  /**
   * Opens an upstream `subscriptions/listen` for `taskIds` (declaring the
   * tasks extension, T-30) and hands every `notifications/tasks` frame of it
   * to `frame`. Closing drops the stream: on HTTP by aborting its response
   * stream, elsewhere with `notifications/cancelled` (§4.6).
   */
  listen(taskIds: string[], frame: (params: JsonObject) => void, ended: () => void = () => {}): () => void {
    const transport = this.transport;
    if (this.closed || !transport || this.era !== 'modern') return () => {};
    const id = `tv:listen:${++this.counter}`;
    const abort = new AbortController();
    this.streams.set(id, { frame, ended });
    const params = {
      notifications: { taskIds },
      _meta: {
        'io.modelcontextprotocol/protocolVersion': this.protocolVersion,
        'io.modelcontextprotocol/clientInfo': UPSTREAM_CLIENT_INFO,
        'io.modelcontextprotocol/clientCapabilities': tasksCapability(),
      },
    };
    const end = () => {
      if (this.streams.delete(id)) ended();
    };
    transport.send({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params }, { requestSignal: abort.signal }).catch(end);
    return () => {
      if (!this.streams.delete(id)) return;
      if ((transport as { hasPerRequestStream?: boolean }).hasPerRequestStream) abort.abort();
      else
        void transport
          .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'no longer followed' } })
          .catch(() => {});
    };
  }

  /** A fresh progress token for one request (unique on this connection). */
  newProgressToken(): string {
    return `tv:progress:${++this.counter}`;
  }

  /** Hands the upstream's `notifications/progress` for `token` to `listener` until the returned function is called. */
  onProgress(token: string, listener: (update: ProgressUpdate) => void): () => void {
    this.progressListeners.set(token, listener);
    return () => {
      if (this.progressListeners.get(token) === listener) this.progressListeners.delete(token);
    };
  }

  /**
   * A caller with a call in flight that takes the upstream's log messages.
   * A 2025-11-25 `notifications/message` names no request, so a message is
   * relayed only while exactly one sink is open (it can only be that call's);
   * otherwise it goes to taskvisor's own log: never to a caller it may not
   * belong to (I-7).
   */
  addLogSink(sink: (message: LogMessage) => void): () => void {
    this.logSinks.add(sink);
    return () => this.logSinks.delete(sink);
  }

  onClose(listener: (reason: string) => void): () => void {
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  /** Calls `listener` when the upstream says its tools, resources or prompts changed. */
  onToolsChanged(listener: () => void): () => void {
    this.toolsChangedListeners.add(listener);
    return () => this.toolsChangedListeners.delete(listener);
  }

  get isOpen(): boolean {
    return !this.closed && this.transport !== undefined;
  }

  async close(): Promise<void> {
    this.markClosed('closed by taskvisor');
    await this.client.close().catch(() => {});
  }

  private progressArrived(params: unknown): void {
    const { progressToken, progress, total, message } = (params ?? {}) as Record<string, unknown>;
    const listener = this.progressListeners.get(String(progressToken));
    if (!listener || typeof progress !== 'number') return;
    listener({
      progress,
      ...(typeof total === 'number' ? { total } : {}),
      ...(typeof message === 'string' ? { message } : {}),
    });
  }

  /**
   * A 2025-11-25 `elicitation/create`. One that names its task (related-task
   * `_meta`) is held for that task's caller ({@link LegacyInputRequests});
   * one that names none belongs to no call taskvisor could tell apart (the
   * era's requests carry no request id on stdio), so it is declined: never
   * shown to a caller it may not belong to (I-7).
   */
  private elicitationArrived(params: JsonObject): Promise<ElicitAnswer> {
    const related = (params._meta as JsonObject | undefined)?.[RELATED_TASK_META_KEY] as { taskId?: unknown } | undefined;
    if (typeof related?.taskId === 'string') return this.inputs.hold(related.taskId, params);
    this.logger.info(`upstream ${this.spec.name} asked for input outside a task; declined (taskvisor relays only task input requests)`);
    return Promise.resolve({ action: 'decline' });
  }

  private logArrived(params: unknown): void {
    const { level, logger, data } = (params ?? {}) as Record<string, unknown>;
    if (!isLogLevel(level)) return;
    const message: LogMessage = { level, ...(typeof logger === 'string' ? { logger } : {}), data };
    if (this.logSinks.size === 1) return [...this.logSinks][0]!(message);
    this.logger.info(`upstream ${this.spec.name} log (${level}): ${typeof data === 'string' ? data : JSON.stringify(data)}`);
  }

  private markClosed(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    const stderr = this.stderrTail.trim() ? ` (stderr: ${this.stderrTail.trim().split('\n').slice(-1)[0]})` : '';
    const detail = `${reason}${stderr}${this.noiseNote()}`;
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(new UpstreamUnavailableError(this.spec.name, `upstream ${this.spec.name}: ${detail}`));
      this.pending.delete(id);
    }
    for (const [id, stream] of this.streams) {
      this.streams.delete(id);
      stream.ended();
    }
    this.inputs.cancelAll();
    for (const listener of this.closeListeners) listener(detail);
  }

  /** "; its stdout had …" when the child wrote what the SDK drops, for the errors that would otherwise only say it timed out. */
  private noiseNote(): string {
    const noise = this.stdoutNoise;
    if (!noise) return '';
    return `; its stdout had ${noise.lines} non-protocol line${noise.lines === 1 ? '' : 's'}, the first: "${noise.first}"`;
  }

  private createTransport(): Transport {
    const spec = this.spec;
    if (spec.type === 'streamable-http') {
      return new StreamableHTTPClientTransport(new URL(spec.url), spec.headers ? { requestInit: { headers: spec.headers } } : undefined);
    }
    const transport = new StdioClientTransport({
      command: spec.command,
      ...(spec.args ? { args: spec.args } : {}),
      // The child gets the parent's environment plus the configured variables.
      env: { ...(process.env as Record<string, string>), ...(spec.env ?? {}) },
      ...(spec.cwd ? { cwd: spec.cwd } : {}),
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-2000);
    });
    tapStdoutNoise(transport, (noise) => {
      // Once per connection, though the SDK's era probe and the session are two processes saying the same.
      if (this.stdoutNoise === undefined) {
        this.logger.error(
          `upstream ${spec.name} wrote non-protocol output to stdout (a stdio MCP server may write only JSON-RPC messages there; logs belong on stderr): "${noise.first}"`,
        );
      }
      this.stdoutNoise = noise;
    });
    return transport;
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message())), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
