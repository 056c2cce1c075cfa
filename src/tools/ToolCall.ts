/**
 * One inbound call of a tool as the runtime sees it, and how it ended. Kept
 * with the tool types (not in runtime/ToolCaller) so that `ToolDefinition`'s
 * forwarded calls and the runtime that makes calls import one way.
 */
import type { InputRequest } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { CallerRelay } from './CallerRelay.js';
import type { TraceContext } from '../core/traceContext.js';
import type { Grants } from '../core/principal.js';

export interface ToolCallRequest {
  name: string;
  args: unknown;
  principal: string;
  /** What the principal holds (scopes, groups): tool policy asks it, and a task keeps it for its workflow steps. */
  grants?: Grants;
  /** Whether *this* request declared the tasks extension (T-01). */
  declaresTasks: boolean;
  clientCapabilities?: JsonObject;
  /** Answers carried by an MRTR retry (earlier rounds and this one). */
  answers?: Record<string, unknown>;
  /** Fires when the synchronous request goes away; it no longer matters once the call is a task (T-25). */
  signal?: AbortSignal;
  /** Progress and log messages for the caller while the request is open (forwarded upstream calls use it). */
  relay?: CallerRelay;
  /**
   * What the tool handed back with its last `input-required` outcome, returned
   * by the MRTR retry (integrity-protected in the `requestState`, spec §4.4).
   * Only forwarded tools use it: the upstream task or round that waits for the answers.
   */
  resume?: JsonObject;
  /**
   * The caller cannot carry an input round back to anyone (a workflow step
   * calling an upstream tool): input requests end the call with an error
   * instead of an `input-required` outcome.
   */
  cannotAnswerInput?: boolean;
  /** W3C trace context of the request (`_meta.traceparent`...), kept on a task and sent on upstream. */
  trace?: TraceContext;
}

export type ToolCallOutcome =
  | { kind: 'result'; result: JsonObject }
  | { kind: 'task'; task: TaskRecord }
  /** A task another server created (a forwarded upstream tool): the wire `CreateTaskResult`, id already wrapped. */
  | { kind: 'forwarded-task'; task: JsonObject }
  /**
   * MRTR (T-08): the caller must answer `requests` and call again; `answers` are the ones given so far,
   * `resume` what the tool needs to go on (see {@link ToolCallRequest.resume}).
   */
  | { kind: 'input-required'; requests: Record<string, InputRequest>; answers: Record<string, unknown>; resume?: JsonObject };
