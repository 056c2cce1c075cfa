/**
 * The read-only view of the running service behind muster's
 * `core_service_list` and `core_config_get`. The config view is built from
 * an allow-list: names, kinds and prefixes only. A header value, an
 * environment variable, a command line, a URL, a store location or a token
 * file never reaches a client, nor an upstream's last error (it may name
 * a host or a path) — whatever the options hold, nothing is
 * copied that is not named below.
 */
import type { JsonObject } from '../core/json.js';
import type { UpstreamManager, UpstreamStatus } from '../upstreams/UpstreamManager.js';
import { DEFAULT_TOOL_NAMESPACE } from '../upstreams/toolNames.js';
import type { ServedSetup, ServiceEntry } from '../workflows/loading/ServedSetup.js';
import type { RuntimeOptions } from './RuntimeOptions.js';

// The catalog's default, not imported from it: the catalog module is loaded only by a runtime that has workflows.
const DEFAULT_WORKFLOW_PREFIX = 'workflow_';

function healthOf(state: UpstreamStatus['state']): ServiceEntry['health'] {
  if (state === 'ready') return 'healthy';
  if (state === 'not started' || state === 'connecting') return 'unknown';
  return 'unhealthy';
}

/** muster's service states, which its clients and workflows match on; taskvisor's own is `upstream_state`. */
const MUSTER_STATE: Record<UpstreamStatus['state'], ServiceEntry['state']> = {
  'not started': 'stopped',
  connecting: 'starting',
  backoff: 'starting',
  ready: 'running',
  degraded: 'running',
  stopped: 'stopped',
  failed: 'failed',
};

/** One upstream's status as muster's service entry. */
export function serviceEntry(status: UpstreamStatus): ServiceEntry {
  return {
    name: status.name,
    service_type: 'MCPServer',
    state: MUSTER_STATE[status.state],
    upstream_state: status.state,
    health: healthOf(status.state),
    tool_count: status.toolCount,
  };
}

/** The safe config view of `options`: an allow-list, so a new option shows nothing until it is named here. */
export function safeConfigView(options: RuntimeOptions): JsonObject {
  const store = options.store;
  const storeKind = store === undefined ? 'lowdb' : 'kind' in store && typeof store.kind === 'string' ? store.kind : 'custom';
  return {
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.version !== undefined ? { version: options.version } : {}),
    store: { kind: storeKind },
    aggregator: { toolNamespace: options.toolNamespace ?? DEFAULT_TOOL_NAMESPACE },
    upstreams: (options.upstreams ?? []).map((spec) => ({
      name: spec.name,
      type: spec.type,
      toolPrefix: spec.toolPrefix ?? spec.name,
    })),
    ...(options.workflows
      ? { workflows: { prefix: options.workflows.prefix ?? DEFAULT_WORKFLOW_PREFIX, watch: options.workflows.watch !== false } }
      : {}),
  };
}

/** The setup view of a runtime built from `options`, with `upstreams` when it aggregates any. */
export function servedSetup(options: RuntimeOptions, upstreams: UpstreamManager | undefined): ServedSetup {
  const config = safeConfigView(options);
  return {
    services: () => (upstreams?.status() ?? []).map(serviceEntry),
    config: () => config,
  };
}
