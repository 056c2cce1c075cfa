/**
 * The aggregator's upstreams: one supervisor actor (machines/upstream)
 * whose children are the upstream connection actors, the live connections
 * they open, the catalog they register in the runtime's {@link ToolRegistry},
 * the health they report (in process and in the runtime state file, for
 * `taskvisor upstreams`), and the {@link TaskForwarder} that routes calls
 * and wrapped task ids to them.
 */
import { createActor, type Actor, type AnyActorRef, type Subscription } from 'xstate';
import type { UpstreamManagerOptions, UpstreamStatus } from './UpstreamManagerOptions.js';
import { PrincipalConnections } from './identity/PrincipalConnections.js';
import {
  upstreamChildId,
  upstreamMachine,
  upstreamStateOf,
  upstreamSupervisorMachine,
  type ConnectOutput,
  type UpstreamContext,
  type UpstreamInput,
  type UpstreamState,
} from '../../machines/upstream/index.js';
import { RuntimeStateFile, type UpstreamHealth } from './RuntimeStateFile.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import { forwardedCatalog } from './ForwardedCatalog.js';
import { upstreamResourcePrefix } from './resourceUris.js';
import { forwardedToolEntries, offlineHeldTool, type ForwardedToolsHost } from './ForwardedTools.js';
import { heldConnection } from './heldConnection.js';
import { TaskForwarder } from './TaskForwarder.js';
import { upstreamUnavailable, type UpstreamDirectory } from './UpstreamChannel.js';
import { upstreamActors } from './UpstreamActors.js';
// Loaded on the first connect: the SDK client costs startup time servers without upstreams should not pay.
import type { UpstreamConnection, UpstreamTool } from './UpstreamConnection.js';
import { DEFAULT_BACKOFF, type UpstreamSpec } from './UpstreamSpec.js';
import { DEFAULT_TOOL_NAMESPACE, upstreamToolPrefix } from './toolNames.js';
import { UPSTREAM_NAME_PATTERN, WrappedTaskIds } from './WrappedTaskIds.js';

/** The secret (in the runtime state file) that MACs wrapped task ids. */
export const WRAPPED_ID_SECRET = 'wrappedTaskIds';

export type { UpstreamManagerOptions, UpstreamStatus } from './UpstreamManagerOptions.js';

type SupervisorActor = Actor<typeof upstreamSupervisorMachine>;

export class UpstreamManager implements UpstreamDirectory {
  private readonly specs = new Map<string, UpstreamSpec>();
  private readonly connections = new Map<string, UpstreamConnection>();
  private readonly childSubscriptions = new Map<string, { ref: AnyActorRef; subscription: Subscription }>();
  private readonly namespace: string;
  private supervisor: SupervisorActor | undefined;
  private state: RuntimeStateFile | undefined;
  private forwarderInstance: TaskForwarder | undefined;
  private healthTimer: NodeJS.Timeout | undefined;
  private readonly waiters = new Set<() => void>();
  private stopping = false;
  /** Connections of upstreams that act as the caller, one per principal (docs/aggregator.md "Identity"). */
  private readonly perPrincipal: PrincipalConnections;
  private readonly toolsHost: ForwardedToolsHost;

  constructor(private readonly options: UpstreamManagerOptions) {
    this.namespace = options.namespace ?? DEFAULT_TOOL_NAMESPACE;
    for (const spec of options.upstreams) {
      if (!UPSTREAM_NAME_PATTERN.test(spec.name))
        throw new Error(`Upstream name ${JSON.stringify(spec.name)}: use 1-64 characters of A-Z a-z 0-9 _ -`);
      if (this.specs.has(spec.name)) throw new Error(`Upstream ${JSON.stringify(spec.name)} is configured twice`);
      this.specs.set(spec.name, spec);
    }
    this.perPrincipal = new PrincipalConnections({
      specs: this.specs.values(),
      ...(options.callerCredentials ? { callers: options.callerCredentials } : {}),
      ...(options.credentialSources ? { sources: options.credentialSources } : {}),
      logger: options.logger,
      // The shared connection's verdict (cached): no era probe per principal.
      discovery: (name) => this.state?.upstream(name)?.discovery,
    });
    // Reserved before any local tool could take a name in it.
    options.tools.reserve(`${this.namespace}_`);
    options.prompts?.reserve(`${this.namespace}_`);
    for (const spec of this.specs.values()) {
      options.resources?.reserve(upstreamResourcePrefix(this.namespace, this.prefixOf(spec)));
      // The tasks of held tools of an upstream not connected (yet) find their tool in what the state file kept.
      options.tools.resolveOffline(upstreamToolPrefix(this.namespace, this.prefixOf(spec)), (exposed) => {
        const entry = this.state?.heldTools(spec.name)[exposed];
        return entry ? offlineHeldTool(this.toolsHost, spec, exposed, entry) : undefined;
      });
    }
    this.toolsHost = {
      namespace: this.namespace,
      logger: options.logger,
      prefixOf: (spec) => this.prefixOf(spec),
      forward: (upstream, tool, request, taskSupport) => this.forwarder.callTool(upstream, tool, request, taskSupport),
      connection: (name) => this.connections.get(name),
      heldConnection: (name, signal) => heldConnection(this, name, signal),
      collapseUnasked: (...args) => this.forwarder.collapseUnasked(...args),
    };
  }

  /** Routes forwarded calls and wrapped task ids; available once started. */
  get forwarder(): TaskForwarder {
    if (!this.forwarderInstance) throw new Error('The upstreams are not started');
    return this.forwarderInstance;
  }

  /** The forwarder once started, `undefined` before (a request that races start-up treats every id as local). */
  get startedForwarder(): TaskForwarder | undefined {
    return this.forwarderInstance;
  }

  /**
   * Opens the state file and makes the forwarder: before task recovery, which
   * reads what the state file keeps about held tools. Idempotent.
   */
  async open(): Promise<void> {
    if (this.state) return;
    const state = await RuntimeStateFile.open(this.options.stateFile);
    this.forwarderInstance = new TaskForwarder(this, new WrappedTaskIds(await state.secret(WRAPPED_ID_SECRET)), this.options.logger);
    this.state = state;
  }

  /** Opens (see {@link open}), then starts every `autoStart` upstream (connecting happens in the background). */
  async start(): Promise<void> {
    await this.open();
    const provided = upstreamSupervisorMachine.provide({
      actors: { upstream: upstreamMachine.provide({ actors: upstreamActors(this.actorHost()) }) },
    });
    this.supervisor = createActor(provided);
    this.supervisor.subscribe({ error: (error) => this.options.logger.error('upstream supervisor failed', error) });
    this.supervisor.start();
    for (const spec of this.specs.values()) if (spec.autoStart !== false) this.startUpstream(spec.name);
    this.writeHealthSoon();
  }

  /** Starts (connects) an upstream configured with `autoStart: false`; a started one is left alone. */
  startUpstream(name: string): void {
    const spec = this.specs.get(name);
    if (!spec) throw new Error(`No upstream named ${JSON.stringify(name)}`);
    if (!this.supervisor) throw new Error('The upstreams are not started');
    const input: UpstreamInput = {
      name,
      backoff: { ...DEFAULT_BACKOFF, ...(spec.backoff ?? {}) },
      maxPingFailures: spec.maxPingFailures ?? 3,
    };
    this.supervisor.send({ type: 'UPSTREAM.ADD', upstream: input });
    this.watchChildren();
  }

  /** Stops every upstream, closes their connections, writes the last health. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    for (const name of this.specs.keys()) this.supervisor?.send({ type: 'UPSTREAM.STOP', name });
    for (const { subscription } of this.childSubscriptions.values()) subscription.unsubscribe();
    this.supervisor?.stop();
    clearTimeout(this.healthTimer);
    await Promise.all([...this.connections.values()].map((connection) => connection.close()));
    this.connections.clear();
    await this.perPrincipal.close();
    await this.writeHealth().catch(() => undefined);
  }

  /** Every configured upstream's health now. */
  status(): UpstreamStatus[] {
    return [...this.specs.keys()].map((name) => {
      const context = this.contextOf(name);
      if (!context)
        return { name, state: 'not started', lastError: null, retryAt: null, toolCount: 0, protocolVersion: null, tasks: false };
      return {
        name,
        state: context.state,
        lastError: context.context.lastError,
        retryAt: context.context.retryAt,
        toolCount: context.context.toolCount,
        protocolVersion: context.context.protocolVersion,
        tasks: context.context.tasks,
      };
    });
  }

  /** Resolves once `predicate` holds for the status of `name` (embedders, tests). */
  async waitFor(name: string, predicate: (status: UpstreamStatus) => boolean, timeoutMs = 30_000): Promise<UpstreamStatus> {
    const current = () => this.status().find((entry) => entry.name === name);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = current();
      if (!status) throw new Error(`No upstream named ${JSON.stringify(name)}`);
      if (predicate(status)) return status;
      if (Date.now() > deadline)
        throw new Error(`upstream ${name} is ${status.state} after ${timeoutMs} ms${status.lastError ? ` (${status.lastError})` : ''}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, 200);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.waiters.add(done);
      });
    }
  }

  // UpstreamDirectory

  connection(name: string): UpstreamConnection | undefined {
    return this.connections.get(name);
  }

  async connectionFor(name: string, principal: string): Promise<UpstreamConnection | undefined> {
    const shared = this.connections.get(name);
    // Per principal only while the upstream is up (the shared connection says so): a down one fails fast.
    if (!this.perPrincipal.has(name) || !shared?.isOpen) return shared;
    return this.perPrincipal.acquire(name, principal);
  }

  openConnectionOf(name: string, principal: string): UpstreamConnection | undefined {
    return this.perPrincipal.has(name) ? this.perPrincipal.peek(name, principal) : this.connections.get(name);
  }

  has(name: string): boolean {
    return this.specs.has(name);
  }

  describeDown(name: string): { state: string; lastError: string | null; retryAt: number | null } {
    const status = this.status().find((entry) => entry.name === name);
    return { state: status?.state ?? 'unknown', lastError: status?.lastError ?? null, retryAt: status?.retryAt ?? null };
  }

  // internals

  private contextOf(name: string): { state: UpstreamState; context: UpstreamContext } | undefined {
    const child = this.supervisor?.getSnapshot().children[upstreamChildId(name)] as AnyActorRef | undefined;
    if (!child) return undefined;
    const snapshot = child.getSnapshot() as { value: unknown; context: UpstreamContext };
    return { state: upstreamStateOf(snapshot.value), context: snapshot.context };
  }

  /** Follows every child (a respawned one is a new ref) to publish health on each change. */
  private watchChildren(): void {
    const children = this.supervisor?.getSnapshot().children ?? {};
    for (const [id, ref] of Object.entries(children)) {
      const known = this.childSubscriptions.get(id);
      if (known?.ref === ref || !ref) continue;
      known?.subscription.unsubscribe();
      const subscription = (ref as AnyActorRef).subscribe({
        next: () => this.changed(),
        error: () => this.changed(),
      });
      this.childSubscriptions.set(id, { ref: ref as AnyActorRef, subscription });
    }
  }

  private changed(): void {
    for (const waiter of [...this.waiters]) {
      this.waiters.delete(waiter);
      waiter();
    }
    // A crashed child is respawned by the supervisor: pick the new ref up.
    queueMicrotask(() => this.watchChildren());
    this.writeHealthSoon();
  }

  private writeHealthSoon(): void {
    if (this.healthTimer || this.stopping) return;
    this.healthTimer = setTimeout(() => {
      this.healthTimer = undefined;
      void this.writeHealth().catch((error) => this.options.logger.error('could not write upstream health', error));
    }, 50);
    this.healthTimer.unref();
  }

  private async writeHealth(): Promise<void> {
    if (!this.state) return;
    const now = Date.now();
    const health: Record<string, UpstreamHealth> = {};
    for (const status of this.status()) {
      const { name: _name, ...rest } = status;
      health[status.name] = { ...rest, state: this.stopping && status.state !== 'failed' ? 'stopped' : status.state, updatedAt: now };
    }
    await this.state.setHealth(health, now);
  }

  private prefixOf(spec: UpstreamSpec): string {
    return spec.toolPrefix ?? spec.name.replaceAll('_', '-');
  }

  /** Replaces `name`'s tools in the registry by `tools` (one `list_changed` downstream); keeps what a restart needs of the held ones. */
  private async registerCatalog(name: string, tools: UpstreamTool[], connection: UpstreamConnection): Promise<number> {
    const spec = this.specs.get(name)!;
    const { entries, held } = forwardedToolEntries(this.toolsHost, spec, tools, connection);
    this.options.tools.replaceForwarded(upstreamToolPrefix(this.namespace, this.prefixOf(spec)), entries);
    await this.state?.setHeldTools(name, held);
    return entries.length;
  }

  /** Serves `name`'s resources, templates and prompts (each registry: one change). */
  private registerResourcesAndPrompts(name: string, listing: Awaited<ReturnType<UpstreamConnection['listCatalog']>>): void {
    const spec = this.specs.get(name)!;
    const prefix = this.prefixOf(spec);
    const { space, prompts } = forwardedCatalog(listing, {
      upstream: name,
      namespace: this.namespace,
      prefix,
      connection: () => this.connections.get(name),
      completes: listing.completes,
      unavailable: (error) => upstreamUnavailable(error.upstream, this.describeDown(error.upstream)),
    });
    const empty = space.resources.length === 0 && space.templates.length === 0;
    this.options.resources?.replaceForwarded(space.prefix, empty ? undefined : space);
    this.options.prompts?.replaceForwarded(upstreamToolPrefix(this.namespace, prefix), prompts);
  }

  /** Stops serving `name`'s resources and prompts (it is offline). */
  private dropResourcesAndPrompts(name: string): void {
    const prefix = this.prefixOf(this.specs.get(name)!);
    this.options.resources?.replaceForwarded(upstreamResourcePrefix(this.namespace, prefix), undefined);
    this.options.prompts?.replaceForwarded(upstreamToolPrefix(this.namespace, prefix), []);
  }

  private actorHost() {
    return {
      connect: async (name: string, signal: AbortSignal): Promise<ConnectOutput> => {
        const spec = this.specs.get(name)!;
        await this.connections.get(name)?.close();
        this.connections.delete(name);
        const { UpstreamConnection } = await import('./UpstreamConnection.js');
        // An upstream that answers nobody without credentials (OAuth) lists its catalog with those of its source.
        const source = this.options.credentialSources?.[name];
        const auth = source?.catalogAuth ? await source.catalogAuth(name) : undefined;
        const connection = new UpstreamConnection(spec, this.options.logger, auth);
        const cached = this.state?.upstream(name);
        try {
          await connection.open(cached?.discovery);
          if (signal.aborted) throw new Error('stopped while connecting');
          const tools = await connection.listTools();
          const listing = await connection.listCatalog();
          if (signal.aborted) throw new Error('stopped while connecting');
          await this.state?.setUpstream(name, { discovery: connection.discovery, savedAt: Date.now() });
          this.connections.set(name, connection);
          const toolCount = await this.registerCatalog(name, tools, connection);
          this.registerResourcesAndPrompts(name, listing);
          const extra = [
            listing.resources.length + listing.templates.length > 0
              ? `${listing.resources.length + listing.templates.length} resources`
              : '',
            listing.prompts.length > 0 ? `${listing.prompts.length} prompts` : '',
          ].filter(Boolean);
          this.options.logger.info(
            `upstream ${name}: ready (${connection.protocolVersion}${connection.tasks ? ', tasks' : ''}), ${toolCount} tools${extra.map((e) => `, ${e}`).join('')}`,
          );
          return { toolCount, protocolVersion: connection.protocolVersion, tasks: connection.tasks };
        } catch (error) {
          await connection.close();
          // A stale cached verdict must not fail every attempt: probe afresh next time —
          // unless the upstream was simply unreachable, which says nothing about its era.
          if (cached && !UNREACHABLE.test(String((error as Error)?.message ?? error))) await this.state?.forgetUpstream(name);
          this.options.logger.error(`upstream ${name}: cannot connect`, error);
          throw error;
        }
      },
      ping: (name: string) => this.connections.get(name)?.ping() ?? Promise.reject(new Error('not connected')),
      pingIntervalMs: (name: string) => this.specs.get(name)?.pingIntervalMs ?? 15_000,
      refreshCatalog: async (name: string) => {
        const connection = this.connections.get(name);
        if (!connection) throw new Error('not connected');
        const tools = await connection.listTools();
        this.registerResourcesAndPrompts(name, await connection.listCatalog());
        return this.registerCatalog(name, tools, connection);
      },
      watch: (name: string, on: { closed: (reason: string) => void; toolsChanged: () => void }) => {
        const connection = this.connections.get(name);
        if (!connection || !connection.isOpen) return undefined;
        const offClose = connection.onClose(on.closed);
        const offTools = connection.onToolsChanged(on.toolsChanged);
        return () => {
          offClose();
          offTools();
        };
      },
      offline: (name: string) => {
        const spec = this.specs.get(name);
        if (spec && !this.stopping) {
          this.options.tools.replaceForwarded(upstreamToolPrefix(this.namespace, this.prefixOf(spec)), []);
          this.dropResourcesAndPrompts(name);
        }
        const connection = this.connections.get(name);
        this.connections.delete(name);
        if (connection) void connection.close();
        if (!this.stopping) this.options.logger.info(`upstream ${name}: offline`);
      },
      now: () => Date.now(),
      random: () => Math.random(),
    };
  }
}

/** Connection failures that say nothing about what the upstream speaks. */
const UNREACHABLE = /fetch failed|ECONNREFUSED|ECONNRESET|ENOTFOUND|EHOSTUNREACH|ENOENT|spawn|timed out|closed/i;
