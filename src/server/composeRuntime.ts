/**
 * The composition root: the one place a runtime's object graph is built from
 * its options. Registries, the store and its decorators, the task supervisor
 * and the answers the protocol gives, listen streams, the cluster node, the
 * upstreams, the workflows, the operations and the lifecycle that orders
 * them are made here and handed to each other; no other module builds them.
 * `TaskvisorRuntime` is the public facade over what this returns.
 */
import { randomBytes } from 'node:crypto';
import { createRequestStateCodec, type RequestStateCodec } from '@modelcontextprotocol/server';
import { DEFAULT_STORE_DIR } from '../core/constants.js';
import { ClusterNode } from '../runtime/ClusterNode.js';
import { resolveLimits, type Limits } from '../limits/Limits.js';
import { buildOperationParts } from '../operations/createOperations.js';
import { serveOperations, type Operations } from '../operations/Operations.js';
import type { OperationsRuntime } from '../operations/OperationsRuntime.js';
import { PromptRegistry } from '../prompts/PromptRegistry.js';
import { TaskRequests } from '../protocol/TaskRequests.js';
import { ToolCalls, type MrtrState } from '../protocol/ToolCalls.js';
import { ResourceRegistry } from '../resources/ResourceRegistry.js';
import { stderrLogger, type Logger } from '../runtime/Logger.js';
import { PollPolicy } from '../runtime/PollPolicy.js';
import { PollRateLimiter } from '../runtime/PollRateLimiter.js';
import { ToolCaller } from '../runtime/ToolCaller.js';
import { TaskSupervisor } from '../runtime/TaskSupervisor.js';
import { TimeoutTaskStore, DEFAULT_STORE_TIMEOUT_MS } from '../store/TimeoutTaskStore.js';
import { createTaskStore } from '../store/index.js';
import { observeStore } from '../store/ObservedTaskStore.js';
import type { TaskStore } from '../store/TaskStore.js';
import { SubscriptionHub } from '../protocol/SubscriptionHub.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { ToolRegistry } from '../tools/ToolRegistry.js';
import { UpstreamManager } from '../upstreams/UpstreamManager.js';
import { CallerCredentials } from '../auth/CallerCredentials.js';
import { actsAsCaller } from '../upstreams/identity/UpstreamIdentity.js';
import { WrappedTaskIds } from '../upstreams/WrappedTaskIds.js';
import { composeWorkflows } from './composeWorkflows.js';
import { servedSetup } from './servedSetup.js';
import { RuntimeLifecycle } from './RuntimeLifecycle.js';
import { defaultStateFile, isStore, type RuntimeOptions } from './RuntimeOptions.js';
import { definedProps } from '../core/definedProps.js';

/** A composed runtime: every part, built and wired. */
export interface RuntimeParts {
  readonly tools: ToolRegistry;
  readonly resources: ResourceRegistry;
  readonly prompts: PromptRegistry;
  readonly limits: Readonly<Limits>;
  readonly logger: Logger;
  /** The store as given (or built from its config). */
  readonly store: TaskStore;
  /** {@link store}, its writes reported on `taskvisor:store.operation` (reports name `store` as their source): the runtime writes through it. */
  readonly observedStore: TaskStore;
  readonly supervisor: TaskSupervisor;
  /** Decides, per `tools/call`, between a synchronous answer, an MRTR round and a task. */
  readonly caller: ToolCaller;
  /** `serverInfo` stamped on every result (`_meta`, T-38). */
  readonly serverInfo: { readonly name: string; readonly version: string };
  /** Protects the MRTR `requestState` handed to clients (spec §4.4). */
  readonly requestState: RequestStateCodec<MrtrState>;
  readonly subscriptions: SubscriptionHub;
  /** Present when the store is shared by several instances (it implements `ownership`). */
  readonly cluster: ClusterNode | undefined;
  /** Present when upstreams are configured. */
  readonly upstreams: UpstreamManager | undefined;
  /** The callers' bearer tokens, held only when an upstream acts as the caller (passthrough, tokenExchange). */
  readonly callerCredentials: CallerCredentials | undefined;
  readonly toolCalls: ToolCalls;
  readonly taskRequests: TaskRequests;
  readonly lifecycle: RuntimeLifecycle;
  /** Present with the `operations` option. */
  readonly operations: Operations | undefined;
}

/** Builds the object graph of a runtime from `options`. */
export function composeRuntime(options: RuntimeOptions): RuntimeParts {
  const limits = Object.freeze(resolveLimits(options.limits));
  const logger = options.logger ?? stderrLogger();
  const tools = new ToolRegistry();
  const resources = new ResourceRegistry();
  const prompts = new PromptRegistry();
  const store = isStore(options.store) ? options.store : createTaskStore(options.store ?? { kind: 'lowdb', dir: DEFAULT_STORE_DIR });
  // Writes reported on `taskvisor:store.operation` (metrics, the dashboard, spans); the store itself is untouched.
  const observedStore = observeStore(store);
  const pollPolicy = new PollPolicy({ defaultMs: options.pollIntervalMs ?? 1000, ...(options.poll ?? {}) });
  const supervisor = composeSupervisor(options, { store: observedStore, tools, logger, pollPolicy, limits });
  const caller = new ToolCaller(
    tools,
    supervisor,
    { ttlMs: options.ttlMs !== undefined ? options.ttlMs : 3_600_000, promoteAfterMs: options.promoteAfterMs ?? 200, limits },
    pollPolicy,
  );
  const requestState = createRequestStateCodec<MrtrState>({ key: options.requestStateKey ?? randomBytes(32) });
  const serverInfo = { name: options.name ?? 'taskvisor', version: options.version ?? '0.1.0' };
  const subscriptions = new SubscriptionHub({
    readTask: (taskId, principal) => supervisor.get(taskId, principal),
    serverInfo,
    ...(options.maxListenBacklog !== undefined ? { maxBacklog: options.maxListenBacklog } : {}),
    maxTaskIdsPerListen: limits.maxTaskIdsPerListen,
    maxStreamsPerPrincipal: limits.maxListenStreamsPerPrincipal,
    maxListenUriBytes: limits.maxListenUriBytes,
    maxListenUriBytesPerListen: limits.maxListenUriBytesPerListen,
    maxListenUriBytesPerPrincipal: limits.maxListenUriBytesPerPrincipal,
  });
  // Every durable change goes out on the listen streams that watch it (I-1: the supervisor publishes only stored records).
  supervisor.onChange((record) => subscriptions.publishTask(record));
  tools.onChange(() => subscriptions.publishListChanged('tools'));
  resources.onChange(() => subscriptions.publishListChanged('resources'));
  prompts.onChange(() => subscriptions.publishListChanged('prompts'));
  resources.onUpdated((uri) => subscriptions.publishResourceUpdated(uri));
  const ownership = observedStore.ownership;
  const cluster = ownership ? new ClusterNode({ store: observedStore, ownership, supervisor, hub: subscriptions, logger }) : undefined;
  // Callers' tokens are kept in memory only when an upstream needs them.
  const callerCredentials = options.upstreams?.some((spec) => actsAsCaller(spec.identity)) ? new CallerCredentials() : undefined;
  const upstreams = options.upstreams?.length
    ? new UpstreamManager({
        ...(callerCredentials ? { callerCredentials } : {}),
        ...(options.upstreamCredentials ? { credentialSources: options.upstreamCredentials } : {}),
        upstreams: options.upstreams,
        ...(options.toolNamespace !== undefined ? { namespace: options.toolNamespace } : {}),
        stateFile: options.stateFile ?? defaultStateFile(options.store),
        tools,
        resources,
        prompts,
        logger,
      })
    : undefined;
  if (upstreams) {
    // Listens naming wrapped ids are relayed from the upstreams (src/upstreams/TaskFollower.ts).
    subscriptions.useRemoteTasks({
      owns: (taskId) => WrappedTaskIds.looksWrapped(taskId),
      read: (taskId, principal) => upstreams.forwarder.read(taskId, principal),
      follow: (taskId, principal, current, onChange) => upstreams.forwarder.follow(taskId, principal, current, onChange),
    });
  }
  const toolCalls = new ToolCalls({ caller, requestState });
  const taskRequests = new TaskRequests({
    supervisor,
    pollRateLimiter: options.pollRateLimit ? new PollRateLimiter(options.pollRateLimit) : undefined,
    forwarder: () => upstreams?.startedForwarder,
  });
  const workflows = options.workflows;
  const lifecycle = new RuntimeLifecycle({
    store: observedStore,
    supervisor,
    subscriptions,
    cluster,
    upstreams,
    logger,
    loadWorkflows: workflows
      ? () =>
          composeWorkflows(workflows, {
            tools,
            store: observedStore,
            logger,
            inspect: options.inspect,
            setup: servedSetup(options, upstreams),
          })
      : undefined,
  });
  const operations = options.operations
    ? composeOperations({ logger, store, cluster, upstreams, subscriptions, lifecycle }, options.operations)
    : undefined;
  return {
    tools,
    resources,
    prompts,
    limits,
    logger,
    store,
    observedStore,
    supervisor,
    caller,
    serverInfo,
    requestState,
    subscriptions,
    cluster,
    upstreams,
    callerCredentials,
    toolCalls,
    taskRequests,
    lifecycle,
    operations,
  };
}

/** The task supervisor over `store`: behind an operation timeout, and routed through the cluster when the store is shared. */
function composeSupervisor(
  options: RuntimeOptions,
  parts: { store: TaskStore; tools: ToolRegistry; logger: Logger; pollPolicy: PollPolicy; limits: Readonly<Limits> },
): TaskSupervisor {
  const { store, logger } = parts;
  const ownership = store.ownership;
  const storeTimeoutMs = options.storeTimeoutMs ?? options.storeDeadlineMs ?? DEFAULT_STORE_TIMEOUT_MS;
  return new TaskSupervisor({
    // Shared store: tasks are adopted through leases (ClusterNode), never all recovered on start,
    // and update/cancel of a task running elsewhere go to its instance.
    ...(ownership
      ? {
          recoverOnStart: false,
          forward: async (record: TaskRecord, command: Parameters<typeof ownership.sendCommand>[1]) =>
            void (await ownership.sendCommand(record.taskId, command)),
        }
      : {}),
    // Deadlines on what requests wait for (a client waits for an answer, not for a stalled disk);
    // open, close and recovery listing are not bounded.
    store: storeTimeoutMs === 0 ? store : new TimeoutTaskStore(store, storeTimeoutMs, (message, error) => logger.error(message, error)),
    tools: parts.tools,
    logger,
    ...definedProps({
      reapIntervalMs: options.reapIntervalMs,
      finishedRetentionMs: options.finishedRetentionMs,
      passivateIdleAfterMs: options.passivateIdleAfterMs,
    }),
    ...(options.inspect ? { inspect: options.inspect } : {}),
    pollPolicy: parts.pollPolicy,
    limits: parts.limits,
  });
}

/** The operations over the composed parts: what they read of the runtime is its port, {@link OperationsRuntime}. */
function composeOperations(
  parts: Omit<OperationsRuntime, 'phase' | 'onClose'> & { lifecycle: RuntimeLifecycle },
  options: NonNullable<RuntimeOptions['operations']>,
): Operations {
  const { lifecycle, ...rest } = parts;
  const runtime: OperationsRuntime = {
    ...rest,
    get phase() {
      return lifecycle.phase;
    },
    onClose: (close) => lifecycle.onClose(close),
  };
  return serveOperations(runtime, buildOperationParts(runtime, options));
}
