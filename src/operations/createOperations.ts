/**
 * The parts of a runtime's operations, built from their options: health,
 * the operator gate, and (when metrics or the dashboard are on) task
 * activity, metrics and the operator API. The composition root builds them
 * for `RuntimeOptions.operations`; `createOperations` does the same for a
 * runtime composed by hand. The routes that serve them
 * ({@link serveOperations}) only receive them.
 */
import { HealthMonitor } from './HealthMonitor.js';
import { OperatorApi } from './OperatorApi.js';
import { OperatorGate } from './OperatorGate.js';
import { serveOperations, type OperationParts, type Operations } from './Operations.js';
import type { OperationsOptions } from './OperationsOptions.js';
import type { OperationsRuntime } from './OperationsRuntime.js';
import { TaskActivity } from './TaskActivity.js';
import { TaskvisorMetrics } from './TaskvisorMetrics.js';

/**
 * Builds the operations of `runtime` (started or not: readiness reports
 * recovery while it starts). A runtime created with `RuntimeOptions.operations`
 * has them as `runtime.operations` already.
 */
export function createOperations(runtime: OperationsRuntime, options: OperationsOptions = {}): Operations {
  return serveOperations(runtime, buildOperationParts(runtime, options));
}

/** Builds the operations parts of `runtime` (started or not: readiness reports recovery while it starts). */
export function buildOperationParts(runtime: OperationsRuntime, options: OperationsOptions = {}): OperationParts {
  const health = new HealthMonitor(runtime, options);
  const gate = new OperatorGate({
    auth: options.auth,
    operatorScope: options.operatorScope,
    allowedHosts: options.allowedHosts,
    allowedOrigins: options.allowedOrigins,
    mcpPath: options.mcpPath,
    logger: runtime.logger,
  });
  const wantActivity = Boolean(options.metrics) || options.ui === true;
  const activity = wantActivity ? new TaskActivity({ source: runtime.store }) : undefined;
  const metrics = activity
    ? new TaskvisorMetrics(runtime, activity, typeof options.metrics === 'object' ? options.metrics : {})
    : undefined;
  const api = options.ui && activity && metrics ? new OperatorApi({ runtime, health, activity, metrics, gate }) : undefined;
  return { health, gate, activity, metrics, api, serveMetrics: Boolean(options.metrics) };
}
