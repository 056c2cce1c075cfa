/**
 * The embeddable runtime: tools, the task supervisor, the store, and the
 * factory that builds one SDK server instance per serving unit (one HTTP
 * request, one stdio connection: P7). Everything that must outlive a request
 * lives here, outside the factory.
 */
import { randomBytes } from 'node:crypto';
import { createRequestStateCodec, type McpServerFactory, type RequestStateCodec } from '@modelcontextprotocol/server';
import type { JsonObject } from '../../machines/task/index.js';
import type { Principal } from '../core/principal.js';
import { LOCAL_PRINCIPAL } from '../core/principal.js';
import { TasksExtension } from '../protocol/TasksExtension.js';
import { TaskRequests } from '../protocol/TaskRequests.js';
import { TaskvisorServer } from '../protocol/TaskvisorServer.js';
import { ToolsSurface } from '../protocol/ToolsSurface.js';
import { ToolCalls, type MrtrState } from '../protocol/ToolCalls.js';
import { ResourcesSurface } from '../protocol/ResourcesSurface.js';
import { PromptsSurface } from '../protocol/PromptsSurface.js';
import { CompletionsSurface } from '../protocol/CompletionsSurface.js';
import { ResourceRegistry } from '../resources/ResourceRegistry.js';
import type {
  ResourceDefinition,
  ResourceOptions,
  ResourceReader,
  ResourceTemplateDefinition,
  ResourceTemplateOptions,
  ResourceTemplateReader,
} from '../resources/ResourceDefinition.js';
import { PromptRegistry } from '../prompts/PromptRegistry.js';
import type { PromptDefinition, PromptHandler, PromptOptions } from '../prompts/PromptDefinition.js';
import { createTaskStore, type TaskStoreConfig } from '../store/index.js';
import type { TaskStore } from '../store/TaskStore.js';
import { TimeoutTaskStore, DEFAULT_STORE_TIMEOUT_MS } from '../store/TimeoutTaskStore.js';
import { observeStore } from '../store/ObservedTaskStore.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { ToolDefinition, ToolHandler, ToolOptions } from '../tools/ToolDefinition.js';
import { ToolRegistry } from '../tools/ToolRegistry.js';
import { stderrLogger, type Logger } from '../runtime/Logger.js';
import { ToolCaller, type TaskDefaults } from '../runtime/ToolCaller.js';
import { PollPolicy, type PollPolicyOptions } from '../runtime/PollPolicy.js';
import { PollRateLimiter, type PollRateLimitOptions } from '../runtime/PollRateLimiter.js';
import { TaskSupervisor, type TaskChangeListener } from '../runtime/TaskSupervisor.js';
import { SubscriptionHub } from '../subscriptions/SubscriptionHub.js';
import { ClusterNode } from '../cluster/ClusterNode.js';
import { UpstreamManager } from '../upstreams/UpstreamManager.js';
import { WrappedTaskIds } from '../upstreams/WrappedTaskIds.js';
import type { UpstreamSpec } from '../upstreams/UpstreamSpec.js';
import path from 'node:path';
import type { z } from 'zod';
import type { InspectionEvent } from 'xstate';
import { resolveLimits, type Limits } from '../limits/Limits.js';
import { DEFAULT_STORE_DIR } from '../core/constants.js';
import type { RuntimePhase } from '../core/runtimePhase.js';

/** Options of {@link createRuntime}. */
/** The `workflows` runtime option. */
export interface WorkflowsOption {
  /** Folder of the workflow files (`*.yaml`); every file must be valid or `start()` fails naming it. */
  dir: string;
  /** Tool name prefix. Default `workflow_`. */
  prefix?: string;
  /** Reload when the folder changes (default true). */
  watch?: boolean;
  /** How long a finished run stays in the history. */
  historyRetentionMs?: number;
  /** Most runs the history keeps. */
  historyMaxRuns?: number;
}

export interface RuntimeOptions {
  /** `serverInfo` reported to clients. */
  name?: string;
  version?: string;
  instructions?: string;
  /**
   * Operation timeout: how long one store operation of a request (create,
   * get, update, a task's write) may take before it fails with a retryable
   * `-32603` instead of hanging on a stalled store. Default 10 000 ms; 0
   * turns the timeout off.
   */
  storeTimeoutMs?: number;
  /** @deprecated the same as {@link storeTimeoutMs} (a task's deadline is its ttl; this is an operation timeout). */
  storeDeadlineMs?: number;
  /** A store instance, or the config of a built-in one. Default: `lowdb` under `./.taskvisor`. */
  store?: TaskStore | TaskStoreConfig;
  /** Default task lifetime from creation in ms; `null` = unlimited. Default 1 hour. */
  ttlMs?: number | null;
  /** Default polling hint in ms, for tools that set none and have no history yet. Default 1000. */
  pollIntervalMs?: number;
  /** Bounds and growth of the adaptive polling hint (see `PollPolicy`). */
  poll?: Omit<PollPolicyOptions, 'defaultMs'>;
  /** Pace clients that poll `tasks/get` much faster than asked (T-27). Off by default. */
  pollRateLimit?: PollRateLimitOptions | false;
  /** How long an `auto` call may run before it becomes a task. Default 200 ms. */
  promoteAfterMs?: number;
  /** How often expired tasks are purged. Default 60 s; 0 disables. */
  reapIntervalMs?: number;
  /**
   * A finished task stays readable at least this long after it finished, even
   * when its ttl ran out (so a task failed by its deadline is seen). Default 60 s.
   */
  finishedRetentionMs?: number;
  /**
   * How long a task of a `resume: 'replay' | 'resume'` tool waits for input,
   * with everything stored, before its actor leaves memory and the task lives
   * in the store only (passivation; clients cannot tell). `false`: never.
   * Default 60 s. See docs/tools.md.
   */
  passivateIdleAfterMs?: number | false;
  /** Receives every inspection event of every task actor (see `src/inspection`). Off by default. */
  inspect?: (event: InspectionEvent) => void;
  /** Frames a listen stream may have pending before it is closed as too slow. Default 1000. */
  maxListenBacklog?: number;
  /**
   * Resource limits (request size, tasks and listen streams per principal,
   * timeouts); each missing one has a safe default (see `Limits`). A bad
   * value throws a `RangeError` naming it.
   */
  limits?: Partial<Limits>;
  /**
   * Upstream MCP servers whose tools this runtime re-exposes as
   * `<toolNamespace>_<prefix>_<tool>` and whose tasks it forwards (docs/aggregator.md).
   */
  upstreams?: UpstreamSpec[];
  /** First part of upstream tool names; the whole `<toolNamespace>_` space is reserved for them. Default `x`. */
  toolNamespace?: string;
  /**
   * YAML workflows served as tools (docs/workflows.md): the files of `dir`
   * are loaded on `start()`, before recovery (so unfinished runs resume), and
   * every run is recorded in the store (the execution history tools).
   */
  workflows?: WorkflowsOption;
  /**
   * The runtime state file (secrets, upstream discover cache, upstream health).
   * Default: `runtime-state.json` next to the store (`./.taskvisor/` for a memory store).
   */
  stateFile?: string;
  /** Key (≥ 32 bytes) protecting MRTR `requestState`. Default: random per process. */
  requestStateKey?: string | Uint8Array;
  logger?: Logger;
}

/** Summary of what `start()` found in the store. */
export interface StartReport {
  resumed: number;
  failed: number;
  /** Damaged records set aside instead of recovered (a bad record never stops start-up). */
  quarantined: number;
}

/** Re-exported: where the default store lives (moved to core so adapters need not import the runtime). */
export { DEFAULT_STORE_DIR };

/** Anything `runtime.use(...)` registers: `defineTool`, `defineResource`, `defineResourceTemplate`, `definePrompt` values. */
export type Definition = ToolDefinition | ResourceDefinition | ResourceTemplateDefinition | PromptDefinition;

export class TaskvisorRuntime {
  /** Registered tools. */
  readonly tools = new ToolRegistry();
  /** Registered resources and resource templates (and upstream ones, with an aggregator). */
  readonly resources = new ResourceRegistry();
  /** Registered prompts (and upstream ones, with an aggregator). */
  readonly prompts = new PromptRegistry();
  /** The store as given (or built from its config); the runtime writes through an observed copy of it. */
  readonly store: TaskStore;
  /** {@link store}, its writes reported on `taskvisor:store.operation` (reports name `store` as their source). */
  readonly #observedStore: TaskStore;
  readonly logger: Logger;
  /** Open `subscriptions/listen` streams, fed by task and tool-list changes. */
  readonly subscriptions: SubscriptionHub;
  /** The limits in force (defaults filled in); transports take their size limits from here. */
  readonly limits: Readonly<Limits>;
  private readonly supervisor: TaskSupervisor;
  private readonly caller: ToolCaller;
  private readonly requestState: RequestStateCodec<MrtrState>;
  /** `serverInfo` stamped on every result (`_meta`, T-38). */
  readonly serverInfo: { readonly name: string; readonly version: string };
  private state: 'new' | 'opening' | 'open' | 'starting' | 'started' | 'closed' = 'new';
  /** Settles when start() finished (or the runtime closed first): transports bound early wait on it. */
  private readonly startedSignal = settleOnce();
  #phase: RuntimePhase = 'starting';
  private readonly closers = new Set<() => void | Promise<void>>();
  private readonly pollRateLimiter: PollRateLimiter | undefined;
  /** The answers to `tasks/get|update|cancel`, shared by the SDK handlers and the HTTP fast lane (one answer, two paths). */
  readonly taskRequests: TaskRequests;
  /** The answers to `tools/call`, shared by the SDK handler and the HTTP fast lane (one answer, two paths). */
  readonly toolCalls: ToolCalls;
  /** Present when the store is shared by several instances (it implements `ownership`). */
  readonly cluster: ClusterNode | undefined;
  /** The aggregator's upstream connections; `undefined` when no upstream is configured. */
  readonly upstreams: UpstreamManager | undefined;

  constructor(private readonly options: RuntimeOptions = {}) {
    this.limits = Object.freeze(resolveLimits(options.limits));
    this.logger = options.logger ?? stderrLogger();
    // Writes reported on `taskvisor:store.operation` (metrics, the dashboard, spans); the store itself is untouched.
    this.store = isStore(options.store) ? options.store : createTaskStore(options.store ?? { kind: 'lowdb', dir: DEFAULT_STORE_DIR });
    this.#observedStore = observeStore(this.store);
    const storeTimeoutMs = options.storeTimeoutMs ?? options.storeDeadlineMs ?? DEFAULT_STORE_TIMEOUT_MS;
    const pollPolicy = new PollPolicy({ defaultMs: options.pollIntervalMs ?? 1000, ...(options.poll ?? {}) });
    const ownership = this.#observedStore.ownership;
    this.supervisor = new TaskSupervisor({
      // Shared store: tasks are adopted through leases (ClusterNode), never all recovered on start,
      // and update/cancel of a task running elsewhere go to its instance.
      ...(ownership
        ? {
            recoverOnStart: false,
            forward: async (record: TaskRecord, command: Parameters<typeof ownership.sendCommand>[1]) =>
              void (await ownership.sendCommand(record.taskId, command)),
          }
        : {}),
      // Operation timeouts on what requests wait for; open, close and recovery listing are not bounded.
      store:
        storeTimeoutMs === 0
          ? this.#observedStore
          : new TimeoutTaskStore(this.#observedStore, storeTimeoutMs, (message, error) => this.logger.error(message, error)),
      tools: this.tools,
      logger: this.logger,
      ...(options.reapIntervalMs !== undefined ? { reapIntervalMs: options.reapIntervalMs } : {}),
      ...(options.finishedRetentionMs !== undefined ? { finishedRetentionMs: options.finishedRetentionMs } : {}),
      ...(options.passivateIdleAfterMs !== undefined ? { passivateIdleAfterMs: options.passivateIdleAfterMs } : {}),
      ...(options.inspect ? { inspect: options.inspect } : {}),
      pollPolicy,
      limits: this.limits,
    });
    const defaults: TaskDefaults = {
      ttlMs: options.ttlMs !== undefined ? options.ttlMs : 3_600_000,
      promoteAfterMs: options.promoteAfterMs ?? 200,
      limits: this.limits,
    };
    this.caller = new ToolCaller(this.tools, this.supervisor, defaults, pollPolicy);
    this.pollRateLimiter = options.pollRateLimit ? new PollRateLimiter(options.pollRateLimit) : undefined;
    this.requestState = createRequestStateCodec<MrtrState>({ key: options.requestStateKey ?? randomBytes(32) });
    this.serverInfo = { name: options.name ?? 'taskvisor', version: options.version ?? '0.1.0' };
    this.subscriptions = new SubscriptionHub({
      readTask: (taskId, principal) => this.supervisor.get(taskId, principal),
      serverInfo: this.serverInfo,
      ...(options.maxListenBacklog !== undefined ? { maxBacklog: options.maxListenBacklog } : {}),
      maxTaskIdsPerListen: this.limits.maxTaskIdsPerListen,
      maxStreamsPerPrincipal: this.limits.maxListenStreamsPerPrincipal,
    });
    this.supervisor.onChange((record) => this.subscriptions.publishTask(record));
    this.cluster = ownership
      ? new ClusterNode({
          store: this.#observedStore,
          ownership,
          supervisor: this.supervisor,
          hub: this.subscriptions,
          logger: this.logger,
        })
      : undefined;
    this.tools.onChange(() => this.subscriptions.publishListChanged('tools'));
    this.resources.onChange(() => this.subscriptions.publishListChanged('resources'));
    this.prompts.onChange(() => this.subscriptions.publishListChanged('prompts'));
    this.resources.onUpdated((uri) => this.subscriptions.publishResourceUpdated(uri));
    this.upstreams = options.upstreams?.length
      ? new UpstreamManager({
          upstreams: options.upstreams,
          ...(options.toolNamespace !== undefined ? { namespace: options.toolNamespace } : {}),
          stateFile: options.stateFile ?? defaultStateFile(options.store),
          tools: this.tools,
          resources: this.resources,
          prompts: this.prompts,
          logger: this.logger,
        })
      : undefined;
    this.toolCalls = new ToolCalls({ caller: this.caller, requestState: this.requestState });
    this.taskRequests = new TaskRequests({
      supervisor: this.supervisor,
      pollRateLimiter: this.pollRateLimiter,
      forwarder: () => this.upstreams?.startedForwarder,
    });
    if (this.upstreams) {
      const upstreams = this.upstreams;
      // Listens naming wrapped ids are relayed from the upstreams (src/upstreams/TaskForwarder.follow).
      this.subscriptions.useRemoteTasks({
        owns: (taskId) => WrappedTaskIds.looksWrapped(taskId),
        read: (taskId, principal) => upstreams.forwarder.read(taskId, principal),
        follow: (taskId, principal, current, onChange) => upstreams.forwarder.follow(taskId, principal, current, onChange),
      });
    }
  }

  /**
   * Registers a tool. `handler(args, ctx)` returns a `CallToolResult` or a
   * string; throwing a `ToolError` ends the call with that JSON-RPC error.
   */
  tool<S extends z.ZodType<JsonObject>>(name: string, options: ToolOptions<S>, handler: ToolHandler<z.output<S>>): this {
    this.tools.add(name, options, handler as ToolHandler);
    return this;
  }

  /**
   * Registers a resource with a fixed URI. `read(uri, ctx)` returns a
   * `ReadResourceResult` or a string (one text item). Clients hear of the
   * change (`notifications/resources/list_changed`).
   */
  resource(name: string, uri: string, options: ResourceOptions, read: ResourceReader): this {
    this.resources.add({ kind: 'resource', name, uri, options, read });
    return this;
  }

  /**
   * Registers a resource template (RFC 6570, e.g. `notes://{id}`):
   * `read(uri, variables, ctx)` serves every URI it matches;
   * `options.complete` completes its variables.
   */
  resourceTemplate(name: string, uriTemplate: string, options: ResourceTemplateOptions, read: ResourceTemplateReader): this {
    this.resources.addTemplate({ kind: 'resourceTemplate', name, uriTemplate, options, read });
    return this;
  }

  /**
   * Registers a prompt. `handler(args, ctx)` returns a `PromptResult` or a
   * string (one user message); `options.arguments[].complete` completes an argument.
   */
  prompt(name: string, options: PromptOptions, handler: PromptHandler): this {
    this.prompts.add({ kind: 'prompt', name, options, handler });
    return this;
  }

  /** Registers definitions made with `defineTool`, `defineResource`, `defineResourceTemplate` or `definePrompt`. */
  use(...definitions: Definition[]): this {
    for (const definition of definitions) {
      if (!('kind' in definition)) this.tools.add(definition.name, definition.options, definition.handler);
      else if (definition.kind === 'resource') this.resources.add(definition);
      else if (definition.kind === 'resourceTemplate') this.resources.addTemplate(definition);
      else if (definition.kind === 'prompt') this.prompts.add(definition);
      else throw new Error(`runtime.use: unknown definition kind ${JSON.stringify((definition as { kind: unknown }).kind)}`);
    }
    return this;
  }

  /**
   * Opens the store, which takes an embedded store's exclusive lock before
   * anything is read (one process owns an embedded store): a second process on the same store
   * fails here with `StoreInUseError`, having touched nothing. `start()` calls
   * it when it was not called; call it first to bind listeners between the
   * two (a port clash then touches no task either).
   */
  async open(): Promise<void> {
    if (this.state !== 'new') throw new Error(`The runtime cannot open: it is ${this.state}`);
    this.state = 'opening';
    try {
      await this.store.open();
    } catch (error) {
      this.state = 'closed';
      this.#phase = 'stopped';
      this.startedSignal.reject(error);
      throw error;
    }
    this.state = 'open';
  }

  /** Opens the store (unless `open()` did), then resumes or fails every unfinished task found in it. */
  async start(): Promise<StartReport> {
    if (this.state === 'new') await this.open();
    if (this.state !== 'open') throw new Error(`The runtime cannot start: it is ${this.state}`);
    this.state = 'starting';
    this.#phase = 'recovering';
    // Workflows are tools too: registered before recovery so their unfinished runs can resume.
    if (this.options.workflows) await this.openWorkflows(this.options.workflows);
    const report = await this.supervisor.start();
    await this.cluster?.start();
    await this.upstreams?.start();
    this.state = 'started';
    this.startedSignal.resolve();
    this.#phase = 'ready';
    if (report.resumed + report.failed + report.quarantined > 0) {
      this.logger.info(
        `recovered unfinished tasks: ${report.resumed} resumed, ${report.failed} failed${report.quarantined > 0 ? `, ${report.quarantined} damaged set aside (taskvisor tasks check)` : ''}`,
      );
    }
    return report;
  }

  /**
   * Loads the `workflows` option's folder (loaded lazily: the template
   * engines cost cold-start time), records runs in the store, and
   * watches the folder unless told not to.
   */
  private async openWorkflows(option: WorkflowsOption): Promise<void> {
    const [{ WorkflowCatalog }, { RunHistory }] = await Promise.all([
      import('../workflows/WorkflowCatalog.js'),
      import('../workflows/RunHistory.js'),
    ]);
    const history = new RunHistory({
      store: this.#observedStore,
      logger: this.logger,
      ...(option.historyRetentionMs !== undefined ? { retentionMs: option.historyRetentionMs } : {}),
      ...(option.historyMaxRuns !== undefined ? { maxRuns: option.historyMaxRuns } : {}),
    });
    const catalog = new WorkflowCatalog({
      tools: this.tools,
      dir: option.dir,
      history,
      logger: this.logger,
      ...(option.prefix !== undefined ? { prefix: option.prefix } : {}),
      ...(this.inspect ? { inspect: this.inspect } : {}),
    });
    await catalog.load();
    if (option.watch !== false) catalog.watch();
    const stopSweep = history.sweep();
    this.onClose(() => {
      stopSweep();
      catalog.close();
    });
  }

  /** Stops serving, stops writing (I-9), stops task actors, closes the store. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.startedSignal.reject(new Error('The runtime closed before it started'));
    this.#phase = 'stopping';
    // Listen streams end gracefully with their result (§1.9) before the transports go.
    this.subscriptions.closeAll();
    // Each hook in its own async frame: a sync throw is logged like a rejection and the others still run.
    await Promise.all(
      [...this.closers].map(async (close) => {
        try {
          await close();
        } catch (error) {
          this.logger.error('close failed', error);
        }
      }),
    );
    await this.cluster?.stop();
    await this.upstreams?.stop();
    await this.supervisor.stop();
    // After the last write: survivors adopt this instance's unfinished tasks at once.
    await this.cluster?.leave();
    await this.store.close();
    this.#phase = 'stopped';
  }

  /**
   * Where the runtime is in its life (readiness reports it): `recovering`
   * while `start()` resumes unfinished tasks and takes the cluster lease,
   * `ready` once serving, `stopping` from `close()` on.
   */
  get phase(): RuntimePhase {
    return this.#phase;
  }

  /**
   * Resolves once `start()` finished; rejects when the runtime closed (or its
   * store failed to open) first. Transports bound before recovery (so a port
   * clash is found before any task is touched) hold requests on it.
   */
  ready(): Promise<void> {
    return this.startedSignal.promise;
  }

  /** Whether `start()` is recovering unfinished tasks now (the store is open; see {@link ServingRuntime.recovering}). */
  recovering(): boolean {
    return this.state === 'starting';
  }

  /** Runs `close` (sync or async) when the runtime closes (transports register themselves). */
  onClose(close: () => void | Promise<void>): () => void {
    this.closers.add(close);
    return () => this.closers.delete(close);
  }

  /** Reads a task as `principal` sees it (out-of-band access for embedders). */
  getTask(taskId: string, principal: Principal = LOCAL_PRINCIPAL): Promise<TaskRecord> {
    return this.supervisor.get(taskId, principal.id);
  }

  /** Requests cooperative cancellation of a task. */
  cancelTask(taskId: string, principal: Principal = LOCAL_PRINCIPAL): Promise<void> {
    return this.supervisor.cancel(taskId, principal.id);
  }

  /** Calls `listener` after each visible change of any task. */
  onTaskChange(listener: TaskChangeListener): () => void {
    return this.supervisor.onChange(listener);
  }

  /**
   * The inspection hook the runtime was given (`options.inspect`), for other
   * actors it runs on behalf of tasks (the workflow executor) to report to.
   */
  get inspect(): ((event: InspectionEvent) => void) | undefined {
    return this.options.inspect;
  }

  /** Number of task actors in memory. */
  get liveTasks(): number {
    return this.supervisor.liveCount;
  }

  /** Number of passivated tasks: waiting for input in the store, no actor in memory (see `passivateIdleAfterMs`). */
  get passivatedTasks(): number {
    return this.supervisor.passivatedCount;
  }

  /** Resolves when every change seen so far is stored. */
  flushed(): Promise<void> {
    return this.supervisor.flushed();
  }

  /**
   * A factory for the SDK entries (`createMcpHandler`, `serveStdio`): one
   * server instance per serving unit, bound to the principal `principalOf`
   * resolves for it.
   */
  serverFactory(
    principalOf: (ctx: Parameters<McpServerFactory>[0]) => Principal,
    options: { connection?: boolean } = {},
  ): McpServerFactory {
    // Without a say (`connection`: an HTTP session), only stdio and WebSocket build an instance without an
    // HTTP request: a connection that outlives one request.
    return (ctx) => this.createServer(ctx.era, principalOf(ctx), { connection: options.connection ?? ctx.requestInfo === undefined });
  }

  /**
   * One SDK server instance serving `principal` in `era`. `connection`: the
   * instance serves a whole connection (stdio, WebSocket), so a 2025-11-25
   * client on it is sent `notifications/<list>/list_changed` directly (it has
   * no `subscriptions/listen`).
   */
  createServer(era: 'modern' | 'legacy', principal: Principal, { connection = false }: { connection?: boolean } = {}): TaskvisorServer {
    // While recovering too: transports let tasks/* through then (recovering 100k tasks takes a while); everything else waits for ready().
    if (this.state !== 'started' && this.state !== 'starting') throw new Error('The runtime is not started: call runtime.start() first');
    // An aggregator may gain upstream resources and prompts at any time: it always offers the methods.
    const servesResources = this.resources.size > 0 || this.upstreams !== undefined;
    const servesPrompts = this.prompts.size > 0 || this.upstreams !== undefined;
    const completes = this.resources.completes || this.prompts.completes || this.upstreams !== undefined;
    const server = new TaskvisorServer(this.serverInfo, {
      // Capabilities only for what is registered now. `logging`: any tool may `ctx.log`, and forwarded upstream
      // log messages are relayed as notifications/message (deprecated in 2026-07-28, still valid).
      capabilities: {
        tools: { listChanged: true },
        logging: {},
        // `subscribe`: 2026-07-28 through listen's resourceSubscriptions; 2025-11-25 only where updates can reach the client.
        ...(servesResources ? { resources: { listChanged: true, ...(era === 'modern' || connection ? { subscribe: true } : {}) } } : {}),
        ...(servesPrompts ? { prompts: { listChanged: true } } : {}),
        ...(completes ? { completions: {} } : {}),
      },
      ...(this.options.instructions ? { instructions: this.options.instructions } : {}),
      requestState: { verify: this.requestState.verify.bind(this.requestState) },
    });
    const subscribed = era === 'legacy' && connection ? new Set<string>() : undefined;
    if (servesResources) {
      ResourcesSurface.attach(server, {
        resources: this.resources,
        principal: principal.id,
        logger: this.logger,
        ...(subscribed ? { subscriptions: subscribed } : {}),
      });
    }
    if (servesPrompts) PromptsSurface.attach(server, { prompts: this.prompts, principal: principal.id, logger: this.logger });
    if (completes) {
      CompletionsSurface.attach(server, { resources: this.resources, prompts: this.prompts, principal: principal.id, logger: this.logger });
    }
    if (era === 'legacy' && connection) this.sendListChanges(server, servesResources, servesPrompts, subscribed!);
    ToolsSurface.attach(server, { tools: this.tools, calls: this.toolCalls, principal: principal.id, era, logger: this.logger });
    // Under 2025-11-25 the extension never enables tasks (T-37): legacy instances get no tasks/*.
    if (era === 'modern') {
      TasksExtension.attach(server, { requests: this.taskRequests, principal: principal.id, logger: this.logger });
    }
    return server;
  }

  /**
   * 2025-11-25 clients on a connection learn of list changes by unsolicited
   * notifications (they have no listen), for the lists whose capability this
   * instance advertised; until the connection closes.
   */
  private sendListChanges(server: TaskvisorServer, resources: boolean, prompts: boolean, subscribed: Set<string>): void {
    const send = (method: string, params?: Record<string, unknown>) => (): void => {
      if (!server.transport) return;
      server.notification({ method, ...(params ? { params } : {}) }).catch(() => undefined); // the connection is going away
    };
    const stops = [
      this.tools.onChange(send('notifications/tools/list_changed')),
      // Only URIs this connection subscribed to (resources/subscribe).
      this.resources.onUpdated((uri) => subscribed.has(uri) && send('notifications/resources/updated', { uri })()),
      ...(resources ? [this.resources.onChange(send('notifications/resources/list_changed'))] : []),
      ...(prompts ? [this.prompts.onChange(send('notifications/prompts/list_changed'))] : []),
    ];
    const onclose = server.onclose;
    server.onclose = () => {
      for (const stop of stops) stop();
      onclose?.();
    };
  }
}

/** Creates a runtime; register tools, resources and prompts, `await start()`, then serve it. */
export function createRuntime(options?: RuntimeOptions): TaskvisorRuntime {
  return new TaskvisorRuntime(options);
}

/** `runtime-state.json` next to the store's files. */
function defaultStateFile(store: RuntimeOptions['store']): string {
  if (store && !isStore(store)) {
    if (store.kind === 'lowdb') return path.resolve(store.dir, 'runtime-state.json');
    if (store.kind === 'sqlite') return path.resolve(path.dirname(store.file), 'runtime-state.json');
  }
  return path.resolve(DEFAULT_STORE_DIR, 'runtime-state.json');
}

function isStore(value: unknown): value is TaskStore {
  return typeof value === 'object' && value !== null && typeof (value as TaskStore).create === 'function';
}

/** A promise settled from outside, once; a rejection nobody awaits is not an unhandled one. */
function settleOnce(): { promise: Promise<void>; resolve(): void; reject(error: unknown): void } {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}
