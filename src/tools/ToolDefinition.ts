/**
 * How a user declares a tool: `runtime.tool(name, options, handler)`.
 */
import type { Grants } from '../core/principal.js';
import type { TraceContext } from '../core/traceContext.js';
import type { z } from 'zod';
import type { JsonSchemaDocument } from './ToolSchema.js';
import type { InputRequest } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import type { ToolCallOutcome, ToolCallRequest } from './ToolCall.js';
import type { LogLevel } from './CallerRelay.js';

export { LOG_LEVELS, type LogLevel } from './CallerRelay.js';

/** Whether calls of a tool become tasks (ARCHITECTURE "Server-directed creation", T-02). */
export type TaskBehavior = 'auto' | 'always' | 'never';

/** What a restarted server does with a task of this tool that was still running. */
export type ResumePolicy = 'fail' | 'replay' | 'resume';

/** MCP tool annotations (hints for clients; never trusted for security). */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** A `CallToolResult` (without `resultType`: the runtime stamps it, D-04). */
export interface ToolResult {
  content: Array<{ type: string; [key: string]: unknown }>;
  structuredContent?: JsonObject;
  isError?: boolean;
  _meta?: JsonObject;
}

export interface ToolOptions<S extends z.ZodType<JsonObject> = z.ZodType<JsonObject>> {
  title?: string;
  description?: string;
  /**
   * The arguments' schema: a zod object schema, or a JSON Schema document
   * describing an object (published unchanged, checked with Ajv; draft
   * 2020-12 unless its `$schema` says otherwise). Default: any object.
   */
  inputSchema?: S | JsonSchemaDocument;
  /**
   * The schema of `structuredContent` (zod or JSON Schema), advertised as
   * `outputSchema`; a result that is not `isError` must then carry
   * `structuredContent` matching it, or the call fails.
   */
  outputSchema?: z.ZodType<JsonObject> | JsonSchemaDocument;
  annotations?: ToolAnnotations;
  /**
   * `auto` (default): run the call and make it a task only if it has not
   * finished within `promoteAfterMs` or it asks for input. `always`: a task
   * whenever the client declared the extension, `-32021` otherwise (T-03).
   * `never`: always answer synchronously.
   */
  taskBehavior?: TaskBehavior;
  /** Task lifetime from creation; `null` = unlimited (T-26). Default: the runtime's. */
  ttlMs?: number | null;
  /** Polling hint sent with the task (T-27). Default: the runtime's. */
  pollIntervalMs?: number;
  /** `auto` only: how long a call may run before it becomes a task. Default: the runtime's (200 ms). */
  promoteAfterMs?: number;
  /**
   * After a restart, `fail` (default) ends a running task `failed` with a
   * clear `statusMessage`; `replay` runs the handler again from the start with
   * the input answers already given replayed (the handler must be
   * deterministic up to its inputs); `resume` runs it again like `replay` and
   * hands it the last checkpoint it saved (`ctx.checkpoint`) so it continues
   * from there instead of from the start.
   */
  resume?: ResumePolicy;
}

/** Result of an elicitation (`elicitation/create`) as the client answered it. */
export interface ElicitResult {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, string | number | boolean | string[]>;
}

/** Form-mode elicitation parameters (spec §1.6). */
export interface ElicitParams {
  message: string;
  requestedSchema: { type: 'object'; properties: Record<string, JsonObject>; required?: string[] };
}

/** What a tool handler gets besides its arguments. Its functions may be called on `ctx` or destructured from it. */
export interface ToolContext {
  /** Fires when the call is cancelled (`tasks/cancel`, or the synchronous request was aborted). */
  signal: AbortSignal;
  /** Id of the task running this call, once it is one. */
  readonly taskId: string | undefined;
  /** The principal that made the call. */
  principal: string;
  /** What that principal holds (scopes, groups): calls this run makes on its behalf are judged with it (tool policy). */
  readonly grants?: Grants | undefined;
  /**
   * The client capabilities the call's request declared (its `_meta`
   * envelope on 2026-07-28), kept with the task; `undefined` when it declared
   * none. Input requests of kinds it did not declare are refused (T-19).
   */
  readonly clientCapabilities?: JsonObject | undefined;
  /**
   * Asks the client for input with a form elicitation under `key` (unique for
   * the call: T-18). In a task the task goes `input_required` until
   * `tasks/update` answers; in a synchronous 2026-07-28 call the runtime
   * answers `input_required` (MRTR) and runs the handler again on the retry.
   */
  readonly elicit: (key: string, params: ElicitParams) => Promise<ElicitResult>;
  /** Like `elicit` for any input request kind (`sampling/createMessage`, `roots/list`). */
  readonly requestInput: (key: string, request: InputRequest) => Promise<unknown>;
  /** Sets the task's `statusMessage`: progress for tasks goes there (T-32). */
  readonly setStatus: (message: string) => void;
  /**
   * Reports progress. On a synchronous call whose request carried
   * `_meta.progressToken` it is sent as `notifications/progress` on that
   * request's stream; once the call is a task it becomes the task's
   * `statusMessage` (`3/10: message`, T-32). `progress` should grow with every call.
   */
  readonly progress: (progress: number, total?: number, message?: string) => void;
  /**
   * Sends a log message to the caller as `notifications/message` while the
   * call is answered synchronously, if the client's log level lets it through
   * (`logging/setLevel` on 2025-11-25, the request's
   * `io.modelcontextprotocol/logLevel` on 2026-07-28, which sends nothing
   * without it). Dropped once the call is a task (its request is over).
   */
  readonly log: (level: LogLevel, data: unknown, logger?: string) => void;
  /**
   * The checkpoint this run was resumed with (`resume: 'resume'` after a
   * restart), else `undefined`.
   */
  readonly checkpoint: unknown;
  /**
   * Saves durable progress (plain JSON, replacing the previous checkpoint) as
   * the task's `checkpoint`. Resolves once it is stored when the call is a
   * task; outside a task it is kept in memory only and handed to the task if
   * the call is promoted to one.
   */
  readonly saveCheckpoint: (checkpoint: unknown) => Promise<void>;
  /**
   * A durable sleep: resolves `ms` milliseconds after the first time this
   * call sleeps `key` (unique for the call's life, like an input key). In a
   * task the wake time is stored with the task, so a run of the handler again
   * (`resume: 'replay' | 'resume'` after a restart, or a passivated task woken
   * up) that sleeps `key` again resolves at the stored time, at once if it has
   * passed, not `ms` from then. A task of a re-runnable tool that only sleeps
   * leaves memory while it does (passivation) and runs again from the start
   * at its wake time: use it for waits, not alongside other work in flight.
   * Before the call is a task it is a plain timer whose wake time goes to the
   * task if the call is promoted. Rejects with the abort reason when the call
   * is cancelled, and with a `TypeError` when `ms` is not a finite number >= 0.
   */
  readonly sleep: (key: string, ms: number) => Promise<void>;
  /**
   * The W3C trace context of the call that started this run (`traceparent`,
   * `tracestate`, `baggage` from its `_meta`), kept across restarts; send it on
   * with the requests the tool makes so they join the caller's trace.
   */
  readonly trace: TraceContext | undefined;
}

export type ToolHandler<A extends JsonObject = JsonObject> = (
  args: A,
  ctx: ToolContext,
) => Promise<ToolResult | string> | ToolResult | string;

/** A registered tool. */
export interface ToolDefinition<A extends JsonObject = JsonObject> {
  name: string;
  options: ToolOptions;
  handler: ToolHandler<A>;
  /**
   * Set on tools another server runs (aggregated upstream tools, see
   * `ToolRegistry.addForwarded`): calls go to it instead of `handler`, with
   * no local argument validation (the upstream validates).
   */
  forward?: ForwardedToolCall;
  /**
   * Set on forwarded tools whose calls may be held here as tasks
   * (server-directed promotion of upstream calls): `handler` then holds one
   * upstream request, and `options` carry its `taskBehavior`,
   * `promoteAfterMs` and `resume`.
   */
  held?: HeldForwarding;
}

/** How a forwarded tool's calls are held as tasks of this server. */
export interface HeldForwarding {
  /** The upstream that runs the tool (named in what a restart says). */
  upstream: string;
  /**
   * Whether this request's call is held here: the tool has no task support
   * of its own upstream now. Otherwise it is forwarded as is (`forward`).
   */
  holds(request: ToolCallRequest): boolean;
}

/** Runs one call of a forwarded tool; gets the inbound request as the runtime saw it. */
export type ForwardedToolCall = (request: ToolCallRequest) => Promise<ToolCallOutcome>;
