/**
 * `taskvisor/tools`: what a tool module needs and nothing else:
 * `defineTool`, `defineResource`, `defineResourceTemplate`, `definePrompt`, `ToolError` and the types. A module a config names imports
 * from here, not from the root entry, so loading it costs no start-up time.
 */
export { defineTool, type ToolModuleExport } from './defineTool.js';
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
} from './ToolDefinition.js';
// Modules a config names may serve resources and prompts too (docs/resources-and-prompts.md).
export { defineResource, defineResourceTemplate } from '../resources/defineResource.js';
export type {
  ResourceOptions,
  ResourceReader,
  ResourceContext,
  ReadResourceResult,
  ResourceTemplateOptions,
  ResourceTemplateReader,
} from '../resources/ResourceDefinition.js';
export type { Completer, CompletionContext } from '../resources/Completer.js';
export { definePrompt } from '../prompts/definePrompt.js';
export type { PromptOptions, PromptArgument, PromptHandler, PromptContext, PromptResult } from '../prompts/PromptDefinition.js';
export { ToolError, ErrorCode } from '../core/errors.js';
