/**
 * What the read-only management tools may show of the running service,
 * filled in by the composition root: the workflow layer knows no upstream
 * or config type, only these plain views.
 */
import type { JsonObject } from '../../core/json.js';

/** One upstream as muster shows a service (`core_service_list`). */
export interface ServiceEntry {
  name: string;
  /** muster's service kind: every taskvisor upstream is an MCP server. */
  service_type: 'MCPServer';
  /** muster's service state. */
  state: 'running' | 'starting' | 'stopped' | 'failed';
  /** taskvisor's own upstream state (`ready`, `connecting`, `degraded`, `backoff`, `not started`, …). */
  upstream_state: string;
  health: 'healthy' | 'unhealthy' | 'unknown';
  tool_count: number;
}

/** The read-only view of the served setup. */
export interface ServedSetup {
  /** Every configured upstream, now. */
  services(): ServiceEntry[];
  /** A safe view of the served config: names and shapes, never a secret or a file path. */
  config(): JsonObject;
}
