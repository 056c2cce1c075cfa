/** What a runtime's operations serve and to whom (see {@link createOperations}). */
import type { BearerAuthOptions } from '../auth/bearer.js';
import type { HealthOptions } from './HealthMonitor.js';
import type { MetricsOptions } from './TaskvisorMetrics.js';

/** Options of {@link createOperations}. */
export interface OperationsOptions extends HealthOptions {
  /** Serve Prometheus metrics at `/metrics` (operators only). Default off. */
  metrics?: boolean | MetricsOptions;
  /** Serve the read-only dashboard at `/ui/` and its operator API at `/ops/api/` (operators only). Default off. */
  ui?: boolean;
  /** The bearer auth of the MCP entry: operators then need a token with `operatorScope`. Absent: loopback clients only. */
  auth?: BearerAuthOptions | undefined;
  /** Scope an operator's token must carry. Default `taskvisor:operator`. */
  operatorScope?: string | undefined;
  /** Host names the operator endpoints accept (DNS-rebinding protection); default: loopback names without auth. */
  allowedHosts?: string[] | false | undefined;
  /** Browser Origin host names the operator endpoints accept; defaults as `allowedHosts`. */
  allowedOrigins?: string[] | false | undefined;
  /** The MCP path, named in 401 challenges. Default `/mcp`. */
  mcpPath?: string | undefined;
}
