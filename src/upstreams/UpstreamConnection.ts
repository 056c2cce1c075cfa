/**
 * One live connection to an upstream MCP server through the v2 SDK client
 * (`@modelcontextprotocol/client`), for both eras: `versionNegotiation:
 * 'auto'` talks 2026-07-28 to servers that offer it and falls back to the
 * 2025-11-25 `initialize` handshake otherwise. A cached `server/discover`
 * result (the runtime state file) is handed to `connect({ prior })`, so a
 * reconnect costs no probe.
 *
 * Task traffic goes through a raw path on the client's own transport
 * ({@link RawRequests}, P5), and so do our listen streams
 * ({@link UpstreamListens}); the catalog is read through the SDK client
 * (upstreamCatalog), and the transport is made by upstreamTransport.
 */
import { Client, type PriorDiscovery, type Transport } from '@modelcontextprotocol/client';
import type { JsonObject } from '../core/json.js';
import { declaresTasksExtension } from '../core/tasksExtension.js';
import { responseId, tapInbound } from '../protocol/transportTap.js';
import type { Logger } from '../runtime/Logger.js';
import type { CachedDiscovery } from './RuntimeStateFile.js';
import { isLogLevel, type LogMessage, type ProgressUpdate } from '../tools/CallerRelay.js';
import { LegacyInputRequests, RELATED_TASK_META_KEY, type ElicitAnswer } from './LegacyInputRequests.js';
import { frameRequest, RawRequests, UPSTREAM_CLIENT_INFO, type RawOutcome, type RawRequestOptions } from './RawRequests.js';
import { listUpstreamCatalog, listUpstreamTools, type UpstreamListing, type UpstreamTool } from './upstreamCatalog.js';
import { UpstreamListens } from './UpstreamListens.js';
import { DEFAULT_UPSTREAM_TIMEOUT_MS, type UpstreamSpec } from './UpstreamSpec.js';
import { ChildOutput, createUpstreamTransport } from './upstreamTransport.js';
import { UpstreamUnavailableError } from './UpstreamUnavailableError.js';
import { withTimeout } from './withTimeout.js';
import type { UpstreamConnectionAuth } from './identity/UpstreamCredentialSource.js';

export { UPSTREAM_CLIENT_INFO, UpstreamUnavailableError, type RawOutcome, type UpstreamTool };

export class UpstreamConnection {
  readonly client: Client;
  private transport: Transport | undefined;
  private readonly requests: RawRequests;
  private readonly listens = new UpstreamListens();
  /** Numbers request ids, listen ids and progress tokens: each unique on this connection. */
  private counter = 0;
  private closed = false;
  private readonly closeListeners = new Set<(reason: string) => void>();
  private readonly toolsChangedListeners = new Set<() => void>();
  private readonly output: ChildOutput;
  /** Who receives the upstream's `notifications/progress`, by the progress token we sent. */
  private readonly progressListeners = new Map<string, (update: ProgressUpdate) => void>();
  /** Callers with a call in flight that take log messages (see {@link addLogSink}). */
  private readonly logSinks = new Set<(message: LogMessage) => void>();
  /** Input requests of this upstream's 2025-11-25 tasks, until a caller answers them. */
  readonly inputs = new LegacyInputRequests();

  /** `auth`: the principal a per-principal connection acts as (identity modes other than `static`). */
  constructor(
    readonly spec: UpstreamSpec,
    private readonly logger: Logger,
    private readonly auth?: UpstreamConnectionAuth,
  ) {
    this.requests = new RawRequests(spec.name);
    this.output = new ChildOutput(spec, logger);
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
    const transport = createUpstreamTransport(this.spec, this.output, this.auth);
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
      const note = this.output.noiseNote();
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
      if (this.listens.take(message, id)) return true;
      return this.requests.settle(id, message);
    });
  }

  /** Every tool the upstream lists (all pages). */
  listTools(): Promise<UpstreamTool[]> {
    return listUpstreamTools(this.client, this.timeoutMs);
  }

  /**
   * The upstream's resources, resource templates and prompts (all pages),
   * each only when it advertised the capability; and whether it completes.
   */
  listCatalog(): Promise<UpstreamListing> {
    return listUpstreamCatalog(this.client, this.timeoutMs);
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
  request(method: string, params: JsonObject, capabilities: JsonObject, options: RawRequestOptions = {}): Promise<RawOutcome> {
    if (this.closed || !this.transport) {
      return Promise.reject(new UpstreamUnavailableError(this.spec.name, `upstream ${this.spec.name} is not connected`));
    }
    const framed = frameRequest(params, capabilities, options.progressToken, this.era === 'modern' ? this.protocolVersion : undefined);
    return this.requests.send(this.transport, `tv:${++this.counter}`, method, framed, this.timeoutMs, options);
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
    return this.listens.open(transport, `tv:listen:${++this.counter}`, this.protocolVersion, taskIds, frame, ended);
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

  /** Whether this connection acts as one principal (identity other than `static`). */
  get actsAsPrincipal(): boolean {
    return this.auth !== undefined;
  }

  /** A request, listen stream or relayed call is in flight (a pooled connection is not closed under it). */
  get busy(): boolean {
    return this.requests.size > 0 || this.listens.size > 0 || this.progressListeners.size > 0 || this.logSinks.size > 0;
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
    const detail = `${reason}${this.output.stderrNote()}${this.output.noiseNote()}`;
    this.requests.failAll(detail);
    this.listens.endAll();
    this.inputs.cancelAll();
    for (const listener of this.closeListeners) listener(detail);
  }
}
