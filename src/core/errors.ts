/**
 * Error codes of MCP 2026-07-28 and the Tasks extension, and the domain
 * errors the runtime raises. Codes follow the spec digest §1.10 and §2.4.
 *
 * The domain never throws an SDK type: each error here carries the JSON-RPC
 * `code`, `message` and `data` it answers with, and `src/protocol/errors.ts`
 * maps it to the SDK's `ProtocolError` at the wire boundary.
 */
import { clipClientText, clipQuotedSegments } from './clientText.js';
import { TASKS_EXTENSION_ID, tasksCapability } from './tasksExtension.js';

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

/** @deprecated import from `core/tasksExtension.js`; kept here because it was public API. */
export { TASKS_EXTENSION_ID };

/** An error the runtime answers a request with: a JSON-RPC error `{code, message, data}`. */
export class TaskvisorError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * The one "not found" every task operation answers for an unknown, purged or
 * foreign task id, so another principal's task is indistinguishable from a
 * missing one (T-14, T-10, I-7).
 */
export class TaskNotFoundError extends TaskvisorError {
  constructor() {
    super(ErrorCode.InvalidParams, 'Failed to retrieve task: Task not found');
  }
}

/** A finished task past its ttl and retention: answered like a miss, with its own message (T-14). */
export class TaskExpiredError extends TaskvisorError {
  constructor() {
    super(ErrorCode.InvalidParams, 'Failed to retrieve task: Task has expired');
  }
}

/**
 * A task whose stored record is damaged — its bytes do not parse, or do not
 * make the record of that task — and was set aside. One error from the store
 * up to the wire: a store rejects `get` with it, and clients get its stable
 * text, never a path, a byte of the record or what the parser said. `taskId`
 * and `reason` are for the server's log (reported once, by the store).
 */
export class TaskRecordDamagedError extends TaskvisorError {
  constructor(
    readonly taskId?: string,
    readonly reason?: string,
  ) {
    super(
      ErrorCode.InternalError,
      "Failed to retrieve task: the server cannot read this task's stored record; it was set aside for the operator",
    );
  }
}

/**
 * `-32021` naming the tasks extension, for a `tasks/*` request or a tool that
 * needs a task from a client that did not declare it on this request (T-03, T-33).
 */
export class MissingTasksCapabilityError extends TaskvisorError {
  declare readonly data: { requiredCapabilities: ReturnType<typeof tasksCapability> };
  constructor(what: string) {
    super(
      ErrorCode.MissingRequiredClientCapability,
      `Missing required client capability: ${what} needs the ${TASKS_EXTENSION_ID} extension declared in this request's _meta clientCapabilities`,
      { requiredCapabilities: tasksCapability() },
    );
  }
}

/** `tools/call` named a tool that is not registered. */
export class UnknownToolError extends TaskvisorError {
  constructor(name: string) {
    super(ErrorCode.InvalidParams, `Unknown tool: ${clipClientText(name)}`);
  }
}

/** `tools/call` arguments that fail the tool's input schema. */
export class InvalidToolArgumentsError extends TaskvisorError {
  constructor(tool: string, detail: string) {
    // The detail quotes the client's keys and values (a schema's message): each quote is cut.
    super(ErrorCode.InvalidParams, `Invalid arguments for tool ${tool}: ${clipQuotedSegments(detail)}`);
  }
}

/**
 * A store operation ran past its operation timeout (`TimeoutTaskStore`): the
 * store is stalled, and a request must not hang for the whole stall.
 * Retryable: nothing was acknowledged (a create that lands late is removed).
 * Names the operation, never the store's address.
 */
export class StoreTimeoutError extends TaskvisorError {
  constructor(
    readonly operation: string,
    readonly timeoutMs: number,
  ) {
    super(ErrorCode.InternalError, `The task store did not answer within ${timeoutMs} ms; nothing was stored. Retry the request.`, {
      retryable: true,
    });
  }
}

/**
 * The server is recovering its unfinished tasks after a start and this one
 * is not running here yet: an input response or a cancel
 * given now could not reach it. Retryable: nothing was done; `tasks/get`
 * answers from the store meanwhile.
 */
export class RecoveringError extends TaskvisorError {
  constructor() {
    super(ErrorCode.InternalError, 'The server is recovering its tasks; retry the request shortly', {
      retryable: true,
      state: 'recovering',
    });
  }
}

/** The runtime is closing and takes no new work (I-9). */
export class ShuttingDownError extends TaskvisorError {
  constructor() {
    super(ErrorCode.InternalError, 'The server is shutting down');
  }
}

/** A call answered without a task ended with this JSON-RPC error (T-15). */
export class CallFailedError extends TaskvisorError {}

/** A call answered without a task was cancelled before it finished. */
export class CallCancelledError extends TaskvisorError {
  constructor() {
    super(ErrorCode.InternalError, 'The call was cancelled');
  }
}

/** See {@link MissingTasksCapabilityError}. */
export function missingTasksCapability(what: string): MissingTasksCapabilityError {
  return new MissingTasksCapabilityError(what);
}

/** See {@link TaskNotFoundError}. */
export function taskNotFound(): TaskNotFoundError {
  return new TaskNotFoundError();
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
