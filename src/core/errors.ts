/**
 * Error codes of MCP 2026-07-28 and the Tasks extension, and the errors the
 * runtime raises. Codes follow the spec digest §1.10 and §2.4.
 */
import { MissingRequiredClientCapabilityError, ProtocolError } from '@modelcontextprotocol/server';

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** Header and body disagree (SEP-2243 as published; D-14). */
  HeaderMismatch: -32020,
  /** Missing required client capability (not the stale -32003, D-01). */
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
} as const;

export const TASKS_EXTENSION_ID = 'io.modelcontextprotocol/tasks';

/**
 * `-32021` naming the tasks extension, for a `tasks/*` request or a tool that
 * needs a task from a client that did not declare it on this request (T-03, T-33).
 */
export function missingTasksCapability(what: string): ProtocolError {
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID]: {} } } },
    `Missing required client capability: ${what} needs the ${TASKS_EXTENSION_ID} extension declared in this request's _meta clientCapabilities`,
  );
}

/**
 * The one "not found" every task operation answers for an unknown, purged or
 * foreign task id, so another principal's task is indistinguishable from a
 * missing one (T-14, T-10, I-7).
 */
export function taskNotFound(): ProtocolError {
  return new ProtocolError(ErrorCode.InvalidParams, 'Failed to retrieve task: Task not found');
}

/**
 * An error a tool raises to end its call with a JSON-RPC error: the task
 * ends `failed` with this `{code, message, data}` (T-15, I-5). Any other
 * thrown error is reported as `-32603` with its message.
 */
export class ToolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}
