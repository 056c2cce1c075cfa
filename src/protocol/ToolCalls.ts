/**
 * The decisions behind `tools/call`, once, for both ways a request reaches
 * them: the SDK handler of {@link ToolsSurface} and the Streamable HTTP fast
 * lane (transports/tasksFastLane.ts), which answers the calls that create a
 * task at once. Both paths decode the request their own way and hand the same
 * values here, so they can differ only in parsing and writing, never in what
 * they decide — as {@link TaskRequests} does for `tasks/*`.
 *
 * Errors are thrown as the runtime throws them (`TaskvisorError`s,
 * `ProtocolError`s); each path maps them with `toProtocolError`.
 */
import { inputRequired, ProtocolError, type RequestStateCodec } from '@modelcontextprotocol/server';
import type { JsonObject } from '../core/json.js';
import type { Grants } from '../core/principal.js';
import { definedProps } from '../core/definedProps.js';
import { ErrorCode } from '../core/errors.js';
import { declaresTasksExtension } from '../core/tasksExtension.js';
import type { TraceContext } from '../core/traceContext.js';
import type { ToolCaller } from '../runtime/ToolCaller.js';
import type { CallerRelay } from '../tools/CallerRelay.js';
import { toCreateTaskResult } from './wire.js';
import { sdkInputRequests } from './sdkShapes.js';

/** What an MRTR round carries back to us, integrity-protected by the SDK codec (spec §4.4). */
export interface MrtrState {
  principal: string;
  tool: string;
  answers: Record<string, unknown>;
  /** A forwarded tool's place in the upstream (the task or round waiting for these answers). */
  resume?: JsonObject;
}

/** One decoded `tools/call`, as either path hands it over. */
export interface ToolCallParams {
  name: string;
  args: unknown;
  principal: string;
  /** What the principal holds (scopes, groups), for tool policy. */
  grants?: Grants | undefined;
  era: 'modern' | 'legacy';
  /** This request's own `clientCapabilities` (T-01, T-33). */
  clientCapabilities: JsonObject | undefined;
  /** The verified `requestState` of an MRTR retry (`undefined`: none). */
  state?: unknown;
  /** The answers this request carried (MRTR, P2: as the SDK lifted them). */
  inputResponses?: Record<string, unknown> | undefined;
  trace?: TraceContext | undefined;
  signal?: AbortSignal | undefined;
  relay?: CallerRelay | undefined;
}

export interface ToolCallsOptions {
  caller: ToolCaller;
  requestState: RequestStateCodec<MrtrState>;
}

/** The shared answers of `tools/call`; one per runtime. */
export class ToolCalls {
  constructor(private readonly options: ToolCallsOptions) {}

  /**
   * Whether a modern call of `name` declaring the tasks extension is decided
   * before any tool code runs: a new task (a local `always` tool) or an
   * error (unknown tool, bad arguments, a limit). Such a call has no input
   * round, no synchronous result and no upstream: the fast lane may answer it.
   */
  decidedAtOnce(name: string): boolean {
    return this.options.caller.decidedAtOnce(name);
  }

  /** `tools/call`: a `CallToolResult`, an MRTR `input_required`, or a `CreateTaskResult` (T-01, T-04, T-05). */
  async answer(call: ToolCallParams): Promise<JsonObject> {
    const { caller, requestState } = this.options;
    const { name, principal } = call;
    const state = call.state as MrtrState | undefined;
    if (state !== undefined && (typeof state !== 'object' || state.principal !== principal || state.tool !== name)) {
      throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid params: requestState does not belong to this call');
    }
    const answers = { ...(state?.answers ?? {}), ...(call.inputResponses ?? {}) };
    const outcome = await caller.call({
      name,
      args: call.args,
      principal,
      ...(call.grants ? { grants: { ...definedProps({ scopes: call.grants.scopes, groups: call.grants.groups }) } } : {}),
      // T-01: only this request's own declaration counts; never on the legacy era (T-37).
      declaresTasks: call.era === 'modern' && declaresTasksExtension(call.clientCapabilities),
      ...(call.clientCapabilities ? { clientCapabilities: call.clientCapabilities } : {}),
      answers,
      ...(call.signal ? { signal: call.signal } : {}),
      ...(call.relay ? { relay: call.relay } : {}),
      ...(call.trace ? { trace: call.trace } : {}),
      ...(state?.resume ? { resume: state.resume } : {}),
    });
    switch (outcome.kind) {
      case 'result':
        return outcome.result;
      case 'task':
        return toCreateTaskResult(outcome.task); // T-05
      case 'forwarded-task':
        return outcome.task;
      case 'input-required':
        return inputRequired({
          inputRequests: sdkInputRequests(outcome.requests),
          requestState: await requestState.mint({
            principal,
            tool: name,
            answers: outcome.answers,
            ...(outcome.resume ? { resume: outcome.resume } : {}),
          }),
        });
    }
  }
}
