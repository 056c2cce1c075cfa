/**
 * What the operations code (health, metrics, the dashboard) needs
 * of a runtime: its port into the composition root. Operations are adapters
 * and may not import `src/server/` (docs/architecture.md); `TaskvisorRuntime`
 * satisfies this interface.
 */
import type { RuntimePhase } from '../core/statuses.js';
import type { Logger } from '../runtime/Logger.js';
import type { TaskStore } from '../store/TaskStore.js';
import type { UpstreamStatus } from '../upstreams/UpstreamManager.js';

export interface OperationsRuntime {
  readonly logger: Logger;
  /** Where the runtime is in its life: readiness waits for `ready`. */
  readonly phase: RuntimePhase;
  /** The store; a store that reports `locked` (it holds an exclusive lock on its files) has that checked too. */
  readonly store: TaskStore;
  /** Present on a shared store: whether this instance holds its lease. */
  readonly cluster?: { readonly leaseHeld: boolean; readonly instanceId: string } | undefined;
  /** Present with upstreams: the health of each. */
  readonly upstreams?: { status(): UpstreamStatus[] } | undefined;
  /** Open listen streams (metrics). */
  readonly subscriptions?: { readonly size: number } | undefined;
  /** Runs `close` (sync or async) when the runtime closes; returns the unregistration. */
  onClose(close: () => void | Promise<void>): () => void;
}
