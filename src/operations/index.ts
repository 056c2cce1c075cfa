/**
 * `taskvisor/operations`: running it in production: health, readiness,
 * metrics, the operator API, diagnostics channels, trace context and
 * OpenTelemetry (docs/api.md, docs/operations.md).
 */
export { HEALTH_PATH, READY_PATH, METRICS_PATH, type Operations } from './Operations.js';
export { createOperations } from './createOperations.js';
export type { OperationsOptions } from './OperationsOptions.js';
export { TaskvisorMetrics, type MetricsOptions } from './TaskvisorMetrics.js';
export { TaskActivity, type TaskActivityEvent, type TimelineEntry } from './TaskActivity.js';
export { OperatorGate, DEFAULT_OPERATOR_SCOPE, type OperatorGateOptions } from './OperatorGate.js';
export { HealthMonitor, type HealthOptions, type HealthReport, type ReadinessReport, type ReadinessCheck } from './HealthMonitor.js';
export { listenOperations, type OperationsListenOptions, type OperationsListener } from './listenOperations.js';
export type { OperationsRuntime } from './OperationsRuntime.js';
export { enableOpenTelemetry, OpenTelemetryUnavailableError, type OpenTelemetryOptions } from './openTelemetry.js';
export { traceContextOf, traceMeta, isTraceparent } from '../core/traceContext.js';
export {
  DIAGNOSTICS_CHANNELS,
  subscribe as subscribeDiagnostics,
  type DiagnosticsChannelName,
  type DiagnosticsMessage,
  type StoredTaskSummary,
  type StoreOperationMessage,
  type TasksPollMessage,
  type ListenFrameMessage,
  type BackpressureCloseMessage,
  type UpstreamCallMessage,
  type WorkflowStepMessage,
  type ClusterLeaseMessage,
} from '../core/diagnostics.js';
