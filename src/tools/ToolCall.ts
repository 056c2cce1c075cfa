/**
 * One inbound call of a tool as the runtime sees it, and how it ended. Kept
 * with the tool types (not in runtime/ToolCaller) so that `ToolDefinition`'s
 * forwarded calls and the runtime that makes calls import one way.
 */
import type { InputRequest, JsonObject } from '../../machines/task/index.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { CallerRelay } from './CallerRelay.js';

export interface ToolCallRequest {
  name: string;
  args: unknown;
  principal: string;
  /** Whether *this* request declared the tasks extension (T-01). */
  declaresTasks: boolean;
  clientCapabilities?: JsonObject;
  /** Answers carried by an MRTR retry (earlier rounds and this one). */
  answers?: Record<string, unknown>;
  /** Fires when the synchronous request goes away; it no longer matters once the call is a task (T-25). */
  signal?: AbortSignal;
  /** Progress and log messages for the caller while the request is open (forwarded upstream calls use it). */
  relay?: CallerRelay;
}

export type ToolCallOutcome =
  | { kind: 'result'; result: JsonObject }
  | { kind: 'task'; task: TaskRecord }
  /** A task another server created (a forwarded upstream tool): the wire `CreateTaskResult`, id already wrapped. */
  | { kind: 'forwarded-task'; task: JsonObject }
  | { kind: 'input-required'; key: string; request: InputRequest; answers: Record<string, unknown> };
