/**
 * What a handler's run ends with, shaped for the task: its return value as a
 * `CallToolResult` (checked against the tool's `outputSchema`), or what it
 * threw as the JSON-RPC error of a failed task (I-5).
 */
import { boundedTaskError } from '../tasks/storedText.js';
import type { TaskError } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import { ErrorCode, ToolError } from '../core/errors.js';
import type { ToolDefinition, ToolResult } from '../tools/ToolDefinition.js';
import { schemasOf } from '../tools/ToolSchema.js';

/** A handler's return value as a `CallToolResult`; a string is one text block. */
export function normalizeResult(toolName: string, returned: ToolResult | string): JsonObject {
  if (typeof returned === 'string') return { content: [{ type: 'text', text: returned }] };
  if (returned === null || typeof returned !== 'object' || !Array.isArray(returned.content)) {
    throw new ToolError(
      ErrorCode.InternalError,
      `Tool ${toolName} returned an invalid result: expected a string or an object with a content array`,
    );
  }
  const { resultType: _ignored, ...result } = returned as ToolResult & { resultType?: unknown };
  return result;
}

/**
 * A tool that declares an `outputSchema` must answer `structuredContent`
 * matching it (MCP tools: "servers MUST provide structured results that
 * conform to this schema"); an `isError` result is exempt. A mismatch is the
 * tool's bug, so the call fails rather than handing clients data their
 * schema says cannot exist.
 */
export function checkStructuredContent(tool: ToolDefinition, result: JsonObject): JsonObject {
  const output = schemasOf(tool).output;
  if (!output || result.isError === true) return result;
  const checked =
    result.structuredContent === undefined
      ? { ok: false as const, problems: ['(root): structuredContent is missing'] }
      : output.check(result.structuredContent);
  if (checked.ok) return result;
  throw new ToolError(
    ErrorCode.InternalError,
    `Tool ${tool.name} returned structuredContent that does not match its outputSchema: ${checked.problems.join('; ')}`,
  );
}

/** A thrown value as the JSON-RPC error of a failed task (T-15, I-5). */
export function toTaskError(toolName: string, error: unknown): TaskError {
  if (error instanceof ToolError || isCodedError(error)) {
    const coded = error as { code: number; message: string; data?: unknown };
    // A failed task keeps its error for its whole life: bounded here, where the tool's text enters.
    return boundedTaskError({
      code: coded.code,
      message: String(coded.message),
      ...(coded.data !== undefined ? { data: coded.data } : {}),
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return boundedTaskError({ code: ErrorCode.InternalError, message: `Tool ${toolName} failed: ${message}` });
}

function isCodedError(error: unknown): boolean {
  return error instanceof Error && 'code' in error && typeof error.code === 'number' && Number.isInteger(error.code);
}
