/**
 * The one internal tool-call path: validates arguments, then decides per
 * request whether the call answers synchronously, asks for input (MRTR), or
 * becomes a task — server-directed creation (ARCHITECTURE, T-01, T-02).
 */
import type { JsonObject } from '../core/json.js';
import { publish } from '../core/diagnostics.js';
import { internJson } from '../core/sharedJson.js';
import {
  CallCancelledError,
  CallFailedError,
  InvalidToolArgumentsError,
  ToolForbiddenError,
  missingTasksCapability,
  UnknownToolError,
} from '../core/errors.js';
import type { ToolCallOutcome, ToolCallRequest } from '../tools/ToolCall.js';
import type { ForwardedToolCall, ToolDefinition } from '../tools/ToolDefinition.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import { schemasOf } from '../tools/ToolSchema.js';
import type { TaskSupervisor } from './TaskSupervisor.js';
import type { PollPolicy } from './PollPolicy.js';
import { ToolExecution, type ExecutionOutcome, type InputMode } from './ToolExecution.js';
import { capTtl, DEFAULT_LIMITS, limitExceeded, type Limits } from '../limits/Limits.js';

/** Defaults a runtime applies to tools that do not set their own. */
export interface TaskDefaults {
  /** Task lifetime from creation; `null` = unlimited. */
  ttlMs: number | null;
  /** `auto` tools become tasks after this long. */
  promoteAfterMs: number;
  /** Synchronous call timeout, ttl cap, pending input requests per run. Default: `DEFAULT_LIMITS`. */
  limits?: Pick<Limits, 'requestTimeoutMs' | 'maxTaskTtlMs' | 'maxPendingInputRequestsPerTask'>;
}

export type { ToolCallOutcome, ToolCallRequest } from '../tools/ToolCall.js';

export class ToolCaller {
  constructor(
    private readonly tools: ToolRegistry,
    private readonly supervisor: TaskSupervisor,
    private readonly defaults: TaskDefaults,
    private readonly pollPolicy: PollPolicy,
  ) {
    this.limits = defaults.limits ?? DEFAULT_LIMITS;
  }

  private readonly limits: Pick<Limits, 'requestTimeoutMs' | 'maxTaskTtlMs' | 'maxPendingInputRequestsPerTask'>;

  /**
   * Calls a tool. Unknown tools and bad arguments raise `-32602`; a tool's
   * JSON-RPC error raises that error (I-5).
   */
  async call(request: ToolCallRequest): Promise<ToolCallOutcome> {
    const tool = this.tools.get(request.name);
    if (!tool) throw new UnknownToolError(request.name);
    // Before anything runs: no task, no store write, no upstream request for a principal the policy refuses.
    if (!this.tools.policy.allows({ id: request.principal, ...request.grants }, tool.name)) {
      publish('taskvisor:tool.forbidden', () => ({ tool: tool.name }));
      throw new ToolForbiddenError(tool.name);
    }
    if (tool.forward) return this.callForwarded(tool, tool.forward, request);
    const args = this.parseArgs(tool, request.args);
    const behavior = tool.options.taskBehavior ?? 'auto';

    if (createsTaskAtOnce(tool)) {
      // A task whenever this request permits one; without the extension the tool cannot run (T-03).
      if (!request.declaresTasks) throw missingTasksCapability(`the tool ${tool.name}`);
      return this.createAtOnce(tool, args, request);
    }
    if (behavior === 'auto' && request.declaresTasks) return this.callAuto(tool, args, request);
    return this.callSync(tool, args, request);
  }

  /**
   * Whether a call of `name` that declares the tasks extension is decided
   * before any tool code runs, by {@link call}'s first steps alone: an
   * unknown tool or bad arguments (-32602), or a new task of a local
   * `always` tool (or a limit refusing it). No input round, no synchronous
   * result, no upstream (the HTTP fast lane answers only such calls).
   */
  decidedAtOnce(name: string): boolean {
    const tool = this.tools.get(name);
    return tool === undefined || createsTaskAtOnce(tool);
  }

  /**
   * An upstream's tool: forwarded as is (the upstream validates and decides),
   * unless this request may take a task and the tool has none of its own
   * upstream: then the call is held here, its upstream request the task's
   * worker, promoted like a local tool's (`taskBehavior`, `promoteAfterMs`).
   */
  private callForwarded(tool: ToolDefinition, forward: ForwardedToolCall, request: ToolCallRequest): Promise<ToolCallOutcome> {
    const behavior = tool.options.taskBehavior ?? 'auto';
    const args = request.args ?? {};
    // Arguments that are not an object go up as they came: the upstream's error says what is wrong with them.
    if (!request.declaresTasks || behavior === 'never' || !tool.held?.holds(request) || !isJsonObject(args)) return forward(request);
    if (behavior === 'always') return this.createAtOnce(tool, args, request);
    return this.callAuto(tool, args, request);
  }

  private async createAtOnce(tool: ToolDefinition, args: JsonObject, request: ToolCallRequest): Promise<ToolCallOutcome> {
    return { kind: 'task', task: await this.supervisor.create(this.taskOptions(tool, args, request)) };
  }

  private parseArgs(tool: ToolDefinition, raw: unknown): JsonObject {
    const checked = schemasOf(tool).input.check(raw ?? {});
    if (checked.ok) return checked.value;
    throw new InvalidToolArgumentsError(tool.name, checked.problems.join('; '));
  }

  private taskOptions(tool: ToolDefinition, args: JsonObject, request: ToolCallRequest, execution?: ToolExecution) {
    return {
      tool,
      args,
      principal: request.principal,
      ...(request.grants ? { grants: request.grants } : {}),
      // T-26: the server may shorten a ttl; the cap bounds how long any task can hold memory and a store row.
      ttlMs: capTtl(tool.options.ttlMs !== undefined ? tool.options.ttlMs : this.defaults.ttlMs, this.limits.maxTaskTtlMs),
      pollIntervalMs: this.pollPolicy.initial(tool.name, tool.options.pollIntervalMs),
      // Kept in the task's context while it lives: one shared frozen copy for the capabilities every call repeats.
      ...(request.clientCapabilities ? { clientCapabilities: internJson(request.clientCapabilities) } : {}),
      ...(request.trace ? { trace: request.trace } : {}),
      ...(execution ? { execution } : {}),
    };
  }

  /** A run on behalf of `request`, with the answers its MRTR rounds carried. */
  private startExecution(tool: ToolDefinition, args: JsonObject, request: ToolCallRequest, inputMode: InputMode): ToolExecution {
    return new ToolExecution({
      tool,
      args,
      principal: request.principal,
      ...(request.grants ? { grants: request.grants } : {}),
      inputMode,
      answers: request.answers ?? {},
      answersFromClient: true,
      maxPendingInputRequests: this.limits.maxPendingInputRequestsPerTask,
      ...(request.clientCapabilities ? { clientCapabilities: request.clientCapabilities } : {}),
      ...(request.trace ? { trace: request.trace } : {}),
      ...(request.relay ? { relay: request.relay } : {}),
    });
  }

  /** Runs to the end on the request; input requests go back as MRTR `input_required` (T-08). */
  private async callSync(tool: ToolDefinition, args: JsonObject, request: ToolCallRequest): Promise<ToolCallOutcome> {
    const execution = this.startExecution(tool, args, request, 'return');
    const release = linkAbort(request.signal, execution);
    const timeoutMs = this.limits.requestTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    try {
      const outcome = await Promise.race([execution.outcome, timedOut]);
      if (outcome === 'timeout') {
        // The handler is told through its signal; the request is answered now, whatever it does.
        execution.abort(new DOMException('The request timed out', 'TimeoutError'));
        throw limitExceeded('requestTimeoutMs', timeoutMs, `the tool ${tool.name} did not finish in time; long work belongs in a task`);
      }
      return this.settleSync(outcome, request);
    } finally {
      clearTimeout(timer);
      release();
    }
  }

  /**
   * `auto`: run the call; if it finishes within the threshold answer it
   * plainly, otherwise (or as soon as it asks for input) make it a task. The
   * task is stored before the answer leaves (I-1).
   */
  private async callAuto(tool: ToolDefinition, args: JsonObject, request: ToolCallRequest): Promise<ToolCallOutcome> {
    const execution = this.startExecution(tool, args, request, 'wait');
    const release = linkAbort(request.signal, execution);
    const threshold = tool.options.promoteAfterMs ?? this.defaults.promoteAfterMs;
    let timer: NodeJS.Timeout | undefined;
    let unlisten: () => void = () => {};
    const promote = new Promise<'promote'>((resolve) => {
      timer = setTimeout(() => resolve('promote'), threshold);
      unlisten = execution.onInputNeeded(() => resolve('promote'));
    });
    try {
      const first = await Promise.race([execution.outcome, promote]);
      if (first !== 'promote') return this.settleSync(first, request);
      // From here on the request's own signal no longer cancels the work (T-25).
      release();
      return { kind: 'task', task: await this.supervisor.create(this.taskOptions(tool, args, request, execution)) };
    } finally {
      clearTimeout(timer);
      unlisten();
      release();
    }
  }

  private settleSync(outcome: ExecutionOutcome, request: ToolCallRequest): ToolCallOutcome {
    switch (outcome.kind) {
      case 'done':
        return { kind: 'result', result: outcome.result };
      case 'failed':
        throw new CallFailedError(outcome.error.code, outcome.error.message, outcome.error.data);
      case 'aborted':
        throw new CallCancelledError();
      case 'input-required':
        // Every request can carry it: 2026-07-28 natively (MRTR), 2025-11-25 through the SDK's legacy shim.
        return { kind: 'input-required', requests: { [outcome.key]: outcome.request }, answers: request.answers ?? {} };
    }
  }
}

/** A local tool whose every call is a task, created before any of its code runs (`taskBehavior: 'always'`). */
function createsTaskAtOnce(tool: ToolDefinition): boolean {
  return !tool.forward && (tool.options.taskBehavior ?? 'auto') === 'always';
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Aborts `execution` when `signal` fires, until the returned release is called. */
function linkAbort(signal: AbortSignal | undefined, execution: ToolExecution): () => void {
  if (!signal) return () => {};
  const onAbort = () => execution.abort(signal.reason);
  if (signal.aborted) onAbort();
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}
