/** What one run of a tool handler is given ({@link ToolExecution}) and how it ends. */
import type { Grants } from '../core/principal.js';
import type { InputRequest, TaskError } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import type { TraceContext } from '../core/traceContext.js';
import type { CallerRelay } from '../tools/CallerRelay.js';
import type { ToolDefinition } from '../tools/ToolDefinition.js';

/** How a run ended. */
export type ExecutionOutcome =
  | { kind: 'done'; result: JsonObject }
  | { kind: 'failed'; error: TaskError }
  | { kind: 'aborted' }
  /** Synchronous MRTR calls only: the handler asked for input nobody has given yet. */
  | { kind: 'input-required'; key: string; request: InputRequest };

/** What an unanswered input request does. */
export type InputMode =
  /** Wait for the answer (a task, or a call that may become one). */
  | 'wait'
  /** End the run with `input-required` so the caller can answer with MRTR (T-08). */
  | 'return';

export interface ToolExecutionOptions {
  tool: ToolDefinition;
  args: JsonObject;
  principal: string;
  /** What the principal holds (`ctx.grants`): calls the run makes are judged with it (tool policy). */
  grants?: Grants;
  taskId?: string;
  inputMode: InputMode;
  /** Answers already given, by key: replayed on a restart or carried by an MRTR retry. */
  answers?: Record<string, unknown>;
  /** `answers` came from the client with this request (MRTR), unchecked: each is checked against its form when asked for. */
  answersFromClient?: boolean;
  /** Keys issued before (a restored task): never issued again (T-18). */
  issuedKeys?: readonly string[];
  /** Keys outstanding in the restored task: waited for without asking again. */
  outstandingKeys?: readonly string[];
  /** Client capabilities of the creating request: input kinds it did not declare are refused (D-10, T-19). */
  clientCapabilities?: JsonObject;
  /** Wake times of the sleeps an earlier run of the task slept, by key (`ctx.sleep`): a sleep of one wakes then. */
  sleeps?: Record<string, number>;
  /** The checkpoint a `resume: 'resume'` run starts from (`ctx.checkpoint`). */
  checkpoint?: unknown;
  /** Input requests the run may have outstanding at once; one more fails with a limit error. Default: unbounded. */
  maxPendingInputRequests?: number;
  /** W3C trace context of the creating call (`ctx.trace`). */
  trace?: TraceContext;
  /** Progress and log messages for the synchronous request (`ctx.progress`, `ctx.log`), until the call is a task. */
  relay?: CallerRelay;
  now?: () => number;
}
