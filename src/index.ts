/**
 * taskvisor: durable XState task actors for long-running MCP tool calls
 * (MCP Tasks extension, SEP-2663, protocol revision 2026-07-28).
 *
 * @example
 * ```ts
 * const runtime = createRuntime();
 * runtime.tool('slow', { inputSchema: z.object({ ms: z.number() }) }, async ({ ms }, ctx) => { ... });
 * await runtime.start();
 * await listenHttp(runtime, { port: 3000 }); // from 'taskvisor/transports'
 * ```
 *
 * The root entry is the embedding API only: the runtime, tool/resource/prompt
 * definitions, errors, principals, limits and the types they use. Everything
 * else is on a subpath (docs/api.md): `taskvisor/transports`, `/stores`,
 * `/auth`, `/inspection`, `/operations`, `/workflows`, `/tools`, `/client`.
 * @packageDocumentation
 */
export {
  createRuntime,
  TaskvisorRuntime,
  DEFAULT_STORE_DIR,
  type RuntimeOptions,
  type StartReport,
  type Definition,
  type WorkflowsOption,
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
export { DEFAULT_LIMITS, LIMIT_EXCEEDED, resolveLimits, type Limits } from './limits/Limits.js';
// Types the runtime's options and answers are made of.
export type { TaskRecord } from './tasks/TaskRecord.js';
export type { TaskStatus } from '../machines/task/index.js';
export type { TaskStore, TaskStoreConfig } from './store/index.js';
export type { TokenVerifier, VerifiedToken } from './auth/TokenVerifier.js';
export type { UpstreamSpec, UpstreamTransportSpec } from './upstreams/UpstreamSpec.js';
export type { UpstreamIdentity, TokenExchangeIdentity } from './upstreams/identity/UpstreamIdentity.js';
export {
  UpstreamAuthorizationRequiredError,
  type UpstreamCredentialSource,
  type UpstreamConnectionAuth,
} from './upstreams/identity/UpstreamCredentialSource.js';
export type { TraceContext } from './core/traceContext.js';
export type { RuntimePhase } from './core/statuses.js';
