/**
 * The internal tool-call path: how a workflow step (or any server-side code)
 * calls a tool the runtime can reach — local tools, other workflows, upstream
 * tools registered by an aggregator — by name, through the one ToolRegistry.
 *
 * The callee runs as a {@link ToolExecution} inside the caller's task: no task
 * of its own. Its input requests go to the caller's `requestInput` sink (the
 * caller's task asks the client), its cancellation follows the caller's
 * signal, its arguments are validated by its own schema.
 */
import type { TraceContext } from '../../core/traceContext.js';
import type { InputRequest, TaskEvent } from '../../../machines/task/index.js';
import type { JsonObject } from '../../core/json.js';
import { ErrorCode, ToolError, ToolForbiddenError } from '../../core/errors.js';
import type { Grants } from '../../core/principal.js';
import { isInputRequiredSignal, ToolExecution } from '../../runtime/ToolExecution.js';
import type { ToolRegistry } from '../../tools/ToolRegistry.js';
import { schemasOf } from '../../tools/ToolSchema.js';
import type { ForwardedToolCall } from '../../tools/ToolDefinition.js';

/** One call through the {@link ToolInvoker}. */
export interface ToolInvocation {
  name: string;
  args: JsonObject;
  /** The principal the call is made for (the caller's). */
  principal: string;
  /** What that principal holds: the call passes tool policy with the caller's rights, never taskvisor's. */
  grants?: Grants | undefined;
  /** Aborting it cancels the callee (its `ctx.signal` fires). */
  signal: AbortSignal;
  /** Where the callee's input requests go; without it they fail the call. */
  requestInput?: (key: string, request: InputRequest) => Promise<unknown>;
  /** Where the callee's status messages go. */
  onStatus?: (message: string) => void;
  /** Client capabilities of the original request: input kinds it did not declare are refused (D-10). */
  clientCapabilities?: JsonObject;
  /** W3C trace context the callee runs under (`ctx.trace`) and sends upstream, so one run is one trace. */
  trace?: TraceContext;
}

export class ToolInvoker {
  constructor(private readonly tools: ToolRegistry) {}

  /** Whether a tool of that name is registered now (local, forwarded or a workflow). */
  has(name: string): boolean {
    return this.tools.has(name);
  }

  /**
   * Calls the tool and resolves its `CallToolResult` (an `isError: true`
   * result is a result, not a rejection). Rejects with a {@link ToolError}
   * for an unknown tool or bad arguments (-32602), with the callee's JSON-RPC
   * error when it failed, and with the abort reason when `signal` fired.
   */
  async invoke(invocation: ToolInvocation): Promise<JsonObject> {
    const tool = this.tools.get(invocation.name);
    if (!tool) throw new ToolError(ErrorCode.InvalidParams, `Unknown tool: ${invocation.name}`);
    if (!this.tools.policy.allows({ id: invocation.principal, ...invocation.grants }, tool.name)) {
      const refused = new ToolForbiddenError(tool.name);
      throw new ToolError(refused.code, refused.message);
    }
    if (tool.forward) return this.invokeForwarded(tool.forward, invocation);
    const checked = schemasOf(tool).input.check(invocation.args);
    if (!checked.ok) {
      throw new ToolError(ErrorCode.InvalidParams, `Invalid arguments for tool ${invocation.name}: ${checked.problems.join('; ')}`);
    }
    invocation.signal.throwIfAborted();
    const execution = new ToolExecution({
      tool,
      args: checked.value,
      principal: invocation.principal,
      ...(invocation.grants ? { grants: invocation.grants } : {}),
      inputMode: 'wait',
      ...(invocation.clientCapabilities ? { clientCapabilities: invocation.clientCapabilities } : {}),
      ...(invocation.trace ? { trace: invocation.trace } : {}),
    });
    // An MRTR unwinding from the caller's requestInput must reach the caller as it is, not as a callee failure.
    let unwinding: unknown;
    const onAbort = () => execution.cancel();
    invocation.signal.addEventListener('abort', onAbort, { once: true });
    execution.attach((event: TaskEvent) => {
      if (event.type === 'STATUS') invocation.onStatus?.(event.message);
      if (event.type !== 'INPUT_NEEDED') return;
      const key = event.key;
      if (!invocation.requestInput) {
        execution.abort(new ToolError(ErrorCode.InternalError, `Tool ${invocation.name} asked for input, which this call cannot give`));
        return;
      }
      invocation.requestInput(key, event.request).then(
        (answer) => execution.deliver({ [key]: answer }),
        (error: unknown) => {
          if (isInputRequiredSignal(error)) unwinding = error;
          execution.abort(error);
        },
      );
    });
    try {
      const outcome = await execution.outcome;
      if (unwinding !== undefined) throw unwinding;
      switch (outcome.kind) {
        case 'done':
          return outcome.result;
        case 'failed':
          throw new ToolError(outcome.error.code, outcome.error.message, outcome.error.data);
        case 'aborted':
          throw invocation.signal.reason ?? new DOMException('The call was cancelled', 'AbortError');
        case 'input-required':
          throw new ToolError(ErrorCode.InternalError, `Tool ${invocation.name} needs input`);
      }
    } finally {
      invocation.signal.removeEventListener('abort', onAbort);
      execution.detach();
    }
  }

  /**
   * An upstream's tool (src/upstreams): called as a request that did not
   * declare the tasks extension, so the forwarder collapses any upstream task
   * to its final result here and cancels it when `signal` fires — the step
   * already runs inside the caller's task. The upstream validates the
   * arguments; its input requests cannot be relayed through a collapsed call
   * and come back as the forwarder's -32021 (docs/aggregator.md).
   */
  private async invokeForwarded(forward: ForwardedToolCall, invocation: ToolInvocation): Promise<JsonObject> {
    invocation.signal.throwIfAborted();
    const outcome = await forward({
      name: invocation.name,
      args: invocation.args,
      principal: invocation.principal,
      ...(invocation.grants ? { grants: invocation.grants } : {}),
      declaresTasks: false,
      cannotAnswerInput: true,
      ...(invocation.clientCapabilities ? { clientCapabilities: invocation.clientCapabilities } : {}),
      ...(invocation.trace ? { trace: invocation.trace } : {}),
      signal: invocation.signal,
    });
    invocation.signal.throwIfAborted();
    if (outcome.kind === 'result') return outcome.result;
    // A request without the extension never gets a task back (T-01); an input round cannot be carried here.
    throw new ToolError(
      ErrorCode.InternalError,
      outcome.kind === 'input-required'
        ? `Tool ${invocation.name} asked for input, which a workflow step calling an upstream tool cannot relay`
        : `Tool ${invocation.name} answered a call without the tasks extension with a task`,
    );
  }
}
