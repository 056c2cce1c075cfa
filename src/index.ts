/**
 * taskvisor: durable XState task actors for long-running MCP tool calls
 * (MCP Tasks extension, SEP-2663, protocol revision 2026-07-28).
 *
 * @example
 * ```ts
 * const runtime = createRuntime();
 * runtime.tool('slow', { inputSchema: z.object({ ms: z.number() }) }, async ({ ms }, ctx) => { ... });
 * await runtime.start();
 * await listenHttp(runtime, { port: 3000 });
 * ```
 * @packageDocumentation
 */
export {
  createRuntime,
  TaskvisorRuntime,
  DEFAULT_STORE_DIR,
  type RuntimeOptions,
  type StartReport,
  type Definition,
} from './server/TaskvisorRuntime.js';
export type { TaskChangeListener } from './runtime/TaskSupervisor.js';
export { stderrLogger, silentLogger, type Logger } from './runtime/Logger.js';
export { defineTool, type ToolModuleExport } from './tools/defineTool.js';
export type {
  ToolOptions,
  ToolHandler,
  ToolContext,
  ToolResult,
  ToolDefinition,
  ToolAnnotations,
  TaskBehavior,
  ResumePolicy,
  ElicitParams,
  ElicitResult,
  LogLevel,
} from './tools/ToolDefinition.js';
export { defineResource, defineResourceTemplate } from './resources/defineResource.js';
export type {
  ResourceOptions,
  ResourceReader,
  ResourceContext,
  ResourceContents,
  ReadResourceResult,
  ResourceDefinition,
  ResourceTemplateOptions,
  ResourceTemplateReader,
  ResourceTemplateDefinition,
  ListedResource,
  ListedResourceTemplate,
} from './resources/ResourceDefinition.js';
export type { Completer, CompletionContext } from './resources/Completer.js';
export { definePrompt } from './prompts/definePrompt.js';
export type {
  PromptOptions,
  PromptArgument,
  PromptHandler,
  PromptContext,
  PromptMessage,
  PromptResult,
  PromptDefinition,
} from './prompts/PromptDefinition.js';
export { ToolError, ErrorCode } from './core/errors.js';
export { TASKS_EXTENSION_ID } from './core/tasksExtension.js';
export { LOCAL_PRINCIPAL, ANONYMOUS_PRINCIPAL, type Principal, type Authenticate } from './core/principal.js';
export {
  createHttpEntry,
  listenHttp,
  type HttpEntry,
  type HttpEntryOptions,
  type HttpListener,
  type ListenOptions,
} from './transports/http.js';
export type { TokenVerifier, VerifiedToken } from './auth/TokenVerifier.js';
export { InvalidTokenError } from './auth/TokenVerifier.js';
export { bearerGate, type BearerAuthOptions, type BearerGate } from './auth/bearer.js';
export {
  tokenFileVerifier,
  addTokenToFile,
  loadTokenFile,
  tokenDigest,
  TokenFileError,
  MIN_TOKEN_LENGTH,
  type TokenFileOptions,
  type TokenFileVerifier,
} from './auth/tokenFile.js';
export { jwtVerifier, JwtConfigError, type JwtVerifierOptions } from './auth/jwt.js';
export { serveStdio, type StdioOptions } from './transports/stdio.js';
export { listenWebSocket, type WebSocketListenOptions, type WebSocketListener } from './transports/websocket.js';
export { WebSocketServerTransport, type WebSocketServerTransportOptions } from './transports/WebSocketServerTransport.js';
export * from './store/index.js';
export { ClusterNode, type ClusterNodeOptions } from './cluster/ClusterNode.js';
export type { TaskRecord } from './tasks/TaskRecord.js';
export { toCreateTaskResult, toDetailedTask } from './protocol/wire.js';
export { taskMachine, statusOf, TASK_MACHINE_VERSION, type TaskStatus } from '../machines/task/index.js';
export { MACHINES, findMachine, type MachineEntry } from '../machines/index.js';
export { toStatelyJson, toMermaid, toDot } from './inspection/exportMachine.js';
export { createTraceInspector, type TraceInspector, type TraceInspectorOptions, type TraceLine } from './inspection/trace.js';
export { attachStatelyInspector, type StatelyInspector, type StatelyInspectorOptions } from './inspection/statelyInspector.js';
export { composeInspectors, REDACTED } from './inspection/redact.js';
// YAML workflows (docs/workflows.md)
export { workflowMachine, WORKFLOW_MACHINE_VERSION } from '../machines/workflow/index.js';
export {
  WorkflowCatalog,
  workflowTool,
  DEFAULT_WORKFLOW_PREFIX,
  type WorkflowCatalogOptions,
  type WorkflowReloadReport,
} from './workflows/WorkflowCatalog.js';
export { ToolInvoker, type ToolInvocation } from './workflows/ToolInvoker.js';
export { parseWorkflow, loadWorkflowFile, loadWorkflowDir, checkWorkflowSet, WorkflowError } from './workflows/loadWorkflows.js';
export type { WorkflowDefinition, WorkflowStep, WorkflowSubStep, WorkflowArg, WorkflowCondition } from './workflows/definition.js';
export type { StepRecord, WorkflowCheckpoint } from './workflows/WorkflowRunner.js';
export { RunHistory, type RunHistoryOptions, type RunSummary, type RunDetail, type RunStatus } from './workflows/RunHistory.js';
export { EXECUTION_LIST_TOOL, EXECUTION_GET_TOOL } from './workflows/historyTools.js';
// Resource limits (docs/security-limits.md).
export { DEFAULT_LIMITS, LIMIT_EXCEEDED, resolveLimits, type Limits } from './limits/Limits.js';
export { StdioLineTransport, type StdioLineTransportOptions } from './transports/StdioLineTransport.js';
// Aggregator: upstream MCP servers as supervised actors (docs/aggregator.md).
export { UpstreamManager, type UpstreamStatus, type UpstreamManagerOptions } from './upstreams/UpstreamManager.js';
export type { UpstreamSpec, UpstreamTransportSpec } from './upstreams/UpstreamSpec.js';
export { TaskForwarder } from './upstreams/TaskForwarder.js';
export { WrappedTaskIds } from './upstreams/WrappedTaskIds.js';
export { forwardedToolName, DEFAULT_TOOL_NAMESPACE } from './upstreams/toolNames.js';
export { RuntimeStateFile, type RuntimeState, type UpstreamHealth } from './state/RuntimeStateFile.js';
export {
  upstreamMachine,
  upstreamSupervisorMachine,
  UPSTREAM_MACHINE_VERSION,
  UPSTREAM_SUPERVISOR_MACHINE_VERSION,
  backoffDelay,
  type UpstreamState,
  type BackoffPolicy,
} from '../machines/upstream/index.js';
// Operating it: health, readiness, metrics, diagnostics channels (docs/operations.md, issue 16).
export {
  createOperations,
  HEALTH_PATH,
  READY_PATH,
  METRICS_PATH,
  type Operations,
  type OperationsOptions,
} from './operations/Operations.js';
export { TaskvisorMetrics, type MetricsOptions } from './operations/TaskvisorMetrics.js';
export { TaskActivity, type TaskActivityEvent, type TimelineEntry } from './operations/TaskActivity.js';
export { OperatorGate, DEFAULT_OPERATOR_SCOPE, type OperatorGateOptions } from './operations/OperatorGate.js';
export { observeStore } from './store/ObservedTaskStore.js';
// Trace context (issue 16.3).
export { traceContextOf, traceMeta, isTraceparent, type TraceContext } from './core/traceContext.js';
export { enableOpenTelemetry, OpenTelemetryUnavailableError, type OpenTelemetryOptions } from './operations/openTelemetry.js';
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
} from './core/diagnostics.js';
export {
  HealthMonitor,
  type HealthOptions,
  type HealthReport,
  type ReadinessReport,
  type ReadinessCheck,
} from './operations/HealthMonitor.js';
export { listenOperations, type OperationsListenOptions, type OperationsListener } from './operations/listenOperations.js';
export type { OperationsRuntime } from './operations/OperationsRuntime.js';
export type { HttpRoutes, HttpClientInfo } from './transports/HttpRoutes.js';
export type { RuntimePhase } from './core/runtimePhase.js';
