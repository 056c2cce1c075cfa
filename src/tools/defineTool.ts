/**
 * Tools as values, for modules a config file points at:
 * `export default [defineTool('echo', {...}, handler)]`.
 */
import type { z } from 'zod';
import type { JsonObject } from '../core/json.js';
import type { ToolDefinition, ToolHandler, ToolOptions } from './ToolDefinition.js';

/** Declares a tool without a runtime at hand; register it with `runtime.use(...)` or a config file. */
export function defineTool<S extends z.ZodType<JsonObject>>(
  name: string,
  options: ToolOptions<S>,
  handler: ToolHandler<z.output<S>>,
): ToolDefinition {
  // Cast: a handler of the schema's output type stored as one of JSON args; the runtime validates args with that schema first.
  return { name, options: options, handler: handler as ToolHandler };
}

/** What a tool module may export (default export or `tools`): definitions, or a function registering them. */
export type ToolModuleExport =
  | ToolDefinition[]
  | ToolDefinition
  | ((registrar: { tool: (name: string, options: ToolOptions, handler: ToolHandler) => unknown }) => unknown);
