/**
 * The embeddable runtime: the public facade over a composed object graph
 * ({@link composeRuntime}). It registers tools, resources and prompts, runs
 * the lifecycle, gives out server instances (one per serving unit: P7), and
 * answers out-of-band reads for embedders; it builds nothing itself.
 */
import type { McpServerFactory } from '@modelcontextprotocol/server';
import type { InspectionEvent } from 'xstate';
import type { z } from 'zod';
import type { JsonObject } from '../core/json.js';
import { DEFAULT_STORE_DIR } from '../core/constants.js';
import { LOCAL_PRINCIPAL, type Principal } from '../core/principal.js';
import type { RuntimePhase } from '../core/statuses.js';
import type { ClusterNode } from '../runtime/ClusterNode.js';
import type { CallerCredentials } from '../auth/CallerCredentials.js';
import type { Limits } from '../limits/Limits.js';
import type { Operations } from '../operations/Operations.js';
import type { PromptHandler, PromptOptions } from '../prompts/PromptDefinition.js';
import type { PromptRegistry } from '../prompts/PromptRegistry.js';
import type { TaskRequests } from '../protocol/TaskRequests.js';
import type { TaskvisorServer } from '../protocol/TaskvisorServer.js';
import type { ToolCalls } from '../protocol/ToolCalls.js';
import type { ResourceOptions, ResourceReader, ResourceTemplateOptions, ResourceTemplateReader } from '../resources/ResourceDefinition.js';
import type { ResourceRegistry } from '../resources/ResourceRegistry.js';
import type { Logger } from '../runtime/Logger.js';
import type { TaskChangeListener } from '../runtime/TaskSupervisor.js';
import type { TaskStore } from '../store/TaskStore.js';
import type { SubscriptionHub } from '../protocol/SubscriptionHub.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { ToolHandler, ToolOptions } from '../tools/ToolDefinition.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import type { UpstreamManager } from '../upstreams/UpstreamManager.js';
import type { WorkflowCatalog } from '../workflows/loading/WorkflowCatalog.js';
import { composeRuntime, type RuntimeParts } from './composeRuntime.js';
import type { Definition, RuntimeOptions, StartReport } from './RuntimeOptions.js';
import { createServerInstance } from './serverInstance.js';

export type { Definition, RuntimeOptions, StartReport, WorkflowsOption } from './RuntimeOptions.js';

/** Re-exported: where the default store lives (in core so adapters need not import the runtime). */
export { DEFAULT_STORE_DIR };

export class TaskvisorRuntime {
  /** Registered tools. */
  readonly tools: ToolRegistry;
  /** Registered resources and resource templates (and upstream ones, with an aggregator). */
  readonly resources: ResourceRegistry;
  /** Registered prompts (and upstream ones, with an aggregator). */
  readonly prompts: PromptRegistry;
  readonly store: TaskStore;
  readonly logger: Logger;
  /** Open `subscriptions/listen` streams, fed by task and tool-list changes. */
  readonly subscriptions: SubscriptionHub;
  /** The limits in force (defaults filled in); transports take their size limits from here. */
  readonly limits: Readonly<Limits>;
  /** `serverInfo` stamped on every result (`_meta`, T-38). */
  readonly serverInfo: { readonly name: string; readonly version: string };
  /** The answers to `tasks/get|update|cancel`, shared by the SDK handlers and the HTTP fast lane. */
  readonly taskRequests: TaskRequests;
  /** The answers to `tools/call`, shared by the SDK handler and the HTTP fast lane. */
  readonly toolCalls: ToolCalls;
  /** Present when the store is shared by several instances (it implements `ownership`). */
  readonly cluster: ClusterNode | undefined;
  /** The aggregator's upstream connections; `undefined` when no upstream is configured. */
  readonly upstreams: UpstreamManager | undefined;
  /** Health, readiness, metrics and the dashboard: present with `options.operations`. */
  readonly operations: Operations | undefined;
  /** The callers' bearer tokens (in memory), kept only when an upstream acts as the caller; the bearer gates fill it. */
  readonly callerCredentials: CallerCredentials | undefined;
  /** The composed graph (benchmarks reach its parts, e.g. `caller`, past the public API). */
  private readonly parts: RuntimeParts;

  constructor(private readonly options: RuntimeOptions = {}) {
    const parts = composeRuntime(options);
    this.parts = parts;
    this.tools = parts.tools;
    this.resources = parts.resources;
    this.prompts = parts.prompts;
    this.store = parts.store;
    this.logger = parts.logger;
    this.subscriptions = parts.subscriptions;
    this.limits = parts.limits;
    this.serverInfo = parts.serverInfo;
    this.taskRequests = parts.taskRequests;
    this.toolCalls = parts.toolCalls;
    this.cluster = parts.cluster;
    this.upstreams = parts.upstreams;
    this.operations = parts.operations;
    this.callerCredentials = parts.callerCredentials;
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
   * anything is read: a second process on the same store fails here with
   * `StoreInUseError`, having touched nothing. The `workflows` option's
   * folder is loaded first (a bad file fails before the store is touched).
   * `start()` calls it when it was not called; call it first to bind
   * listeners between the two (a port clash then touches no task either).
   */
  open(): Promise<void> {
    return this.parts.lifecycle.open();
  }

  /** Opens the store (unless `open()` did), then resumes or fails every unfinished task found in it. */
  start(): Promise<StartReport> {
    return this.parts.lifecycle.start();
  }

  /** Stops serving, stops writing (I-9), stops task actors, closes the store. */
  close(): Promise<void> {
    return this.parts.lifecycle.close();
  }

  /**
   * Where the runtime is in its life (readiness): `recovering` while
   * `start()` resumes unfinished tasks and takes the cluster lease, `ready`
   * once serving, `stopping` from `close()` on.
   */
  get phase(): RuntimePhase {
    return this.parts.lifecycle.phase;
  }

  /**
   * Resolves once `start()` finished; rejects when the runtime closed (or its
   * store failed to open) first. Transports bound before recovery hold
   * requests on it.
   */
  ready(): Promise<void> {
    return this.parts.lifecycle.ready();
  }

  /** Whether `start()` is recovering unfinished tasks now (the store is open; see {@link ServingRuntime.recovering}). */
  recovering(): boolean {
    return this.parts.lifecycle.recovering();
  }

  /** Runs `close` (sync or async) when the runtime closes (transports register themselves). */
  onClose(close: () => void | Promise<void>): () => void {
    return this.parts.lifecycle.onClose(close);
  }

  /** The catalog of the `workflows` option, once the runtime opened. */
  get workflows(): WorkflowCatalog | undefined {
    return this.parts.lifecycle.workflows?.catalog;
  }

  /** Reads a task as `principal` sees it (out-of-band access for embedders). */
  getTask(taskId: string, principal: Principal = LOCAL_PRINCIPAL): Promise<TaskRecord> {
    return this.parts.supervisor.get(taskId, principal.id);
  }

  /** Requests cooperative cancellation of a task. */
  cancelTask(taskId: string, principal: Principal = LOCAL_PRINCIPAL): Promise<void> {
    return this.parts.supervisor.cancel(taskId, principal.id);
  }

  /** Calls `listener` after each visible change of any task. */
  onTaskChange(listener: TaskChangeListener): () => void {
    return this.parts.supervisor.onChange(listener);
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
    return this.parts.supervisor.liveCount;
  }

  /** Number of passivated tasks: waiting for input in the store, no actor in memory (see `passivateIdleAfterMs`). */
  get passivatedTasks(): number {
    return this.parts.supervisor.passivatedCount;
  }

  /** Resolves when every change seen so far is stored. */
  flushed(): Promise<void> {
    return this.parts.supervisor.flushed();
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
    // While recovering too: transports let tasks/* through then; everything else waits for ready().
    if (!this.parts.lifecycle.serving) throw new Error('The runtime is not started: call runtime.start() first');
    return createServerInstance(this.parts, era, principal, connection, this.options.instructions);
  }
}

/** Creates a runtime; register tools, resources and prompts, `await start()`, then serve it. */
export function createRuntime(options?: RuntimeOptions): TaskvisorRuntime {
  return new TaskvisorRuntime(options);
}
