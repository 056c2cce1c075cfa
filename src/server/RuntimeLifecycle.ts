/**
 * The life of a runtime: `open` (the store, and its lock, before anything is
 * read), `start` (recovery, the cluster lease, upstreams), `close` (stop
 * writing before stopping actors, I-9). It owns the order of those steps and
 * the hooks others register to run on close; the parts themselves are built
 * by the composition root.
 */
import type { RuntimePhase } from '../core/statuses.js';
import type { ClusterNode } from '../runtime/ClusterNode.js';
import type { Logger } from '../runtime/Logger.js';
import type { TaskSupervisor } from '../runtime/TaskSupervisor.js';
import type { TaskStore } from '../store/TaskStore.js';
import type { SubscriptionHub } from '../protocol/SubscriptionHub.js';
import type { UpstreamManager } from '../upstreams/UpstreamManager.js';
import type { OpenedWorkflows } from './composeWorkflows.js';
import type { StartReport } from './RuntimeOptions.js';

/** The parts whose order the lifecycle keeps. */
export interface LifecycleParts {
  store: TaskStore;
  supervisor: TaskSupervisor;
  subscriptions: SubscriptionHub;
  cluster: ClusterNode | undefined;
  upstreams: UpstreamManager | undefined;
  logger: Logger;
  /** Loads the workflows (the `workflows` option); absent without one. */
  loadWorkflows: (() => Promise<OpenedWorkflows>) | undefined;
}

type LifecycleState = 'new' | 'opening' | 'open' | 'starting' | 'started' | 'closed';

export class RuntimeLifecycle {
  #state: LifecycleState = 'new';
  #phase: RuntimePhase = 'starting';
  /** Settles when start() finished (or the runtime closed first): transports bound early wait on it. */
  readonly #started = settleOnce();
  readonly #closers = new Set<() => void | Promise<void>>();
  #workflows: OpenedWorkflows | undefined;

  constructor(private readonly parts: LifecycleParts) {}

  /** Where the runtime is in its life (readiness). */
  get phase(): RuntimePhase {
    return this.#phase;
  }

  /** The loaded workflows, once the runtime opened with the `workflows` option. */
  get workflows(): OpenedWorkflows | undefined {
    return this.#workflows;
  }

  /** Whether server instances may be built: recovering (tasks/* are answered from the store then) or started. */
  get serving(): boolean {
    return this.#state === 'started' || this.#state === 'starting';
  }

  /** Whether `start()` is recovering unfinished tasks now (the store is open). */
  recovering(): boolean {
    return this.#state === 'starting';
  }

  ready(): Promise<void> {
    return this.#started.promise;
  }

  onClose(close: () => void | Promise<void>): () => void {
    this.#closers.add(close);
    return () => this.#closers.delete(close);
  }

  async open(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`The runtime cannot open: it is ${this.#state}`);
    this.#state = 'opening';
    try {
      // Workflows are tools too: registered before recovery so their unfinished runs can resume,
      // and before the store opens so a bad file fails with nothing locked or bound.
      if (this.parts.loadWorkflows) {
        const workflows = await this.parts.loadWorkflows();
        this.#workflows = workflows;
        this.onClose(() => workflows.close());
      }
      await this.parts.store.open();
    } catch (error) {
      this.#state = 'closed';
      this.#phase = 'stopped';
      this.#workflows?.close();
      this.#started.reject(error);
      throw error;
    }
    this.#workflows?.serve();
    this.#state = 'open';
  }

  async start(): Promise<StartReport> {
    if (this.#state === 'new') await this.open();
    if (this.#state !== 'open') throw new Error(`The runtime cannot start: it is ${this.#state}`);
    this.#state = 'starting';
    this.#phase = 'recovering';
    // The upstreams' state file first: recovery reads what it keeps about held upstream calls.
    await this.parts.upstreams?.open();
    const report = await this.parts.supervisor.start();
    await this.parts.cluster?.start();
    await this.parts.upstreams?.start();
    this.#state = 'started';
    this.#started.resolve();
    this.#phase = 'ready';
    if (report.resumed + report.failed + report.quarantined > 0) {
      this.parts.logger.info(
        `recovered unfinished tasks: ${report.resumed} resumed, ${report.failed} failed${report.quarantined > 0 ? `, ${report.quarantined} damaged set aside (taskvisor tasks check)` : ''}`,
      );
    }
    return report;
  }

  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#started.reject(new Error('The runtime closed before it started'));
    this.#phase = 'stopping';
    const { subscriptions, cluster, upstreams, supervisor, store, logger } = this.parts;
    // Listen streams end gracefully with their result (§1.9) before the transports go.
    subscriptions.closeAll();
    // Each hook in its own async frame: a sync throw is logged like a rejection and the others still run.
    await Promise.all(
      [...this.#closers].map(async (close) => {
        try {
          await close();
        } catch (error) {
          logger.error('close failed', error);
        }
      }),
    );
    await cluster?.stop();
    // Tasks stop writing before the upstreams go: a held upstream call cut off by the shutdown must not end its
    // task `failed` (recovery decides on the next start, by the tool's resume policy).
    await supervisor.stop();
    await upstreams?.stop();
    // After the last write: survivors adopt this instance's unfinished tasks at once.
    await cluster?.leave();
    await store.close();
    this.#phase = 'stopped';
  }
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
