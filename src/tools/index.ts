/**
 * `taskvisor/tools`: what a tool module needs and nothing else (issue 15.5):
 * `defineTool`, `ToolError` and the types. A module a config names imports
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
} from './ToolDefinition.js';
export { ToolError, ErrorCode } from '../core/errors.js';
