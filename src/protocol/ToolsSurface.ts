/**
 * `tools/list` and `tools/call` on one SDK server instance. `tools/call`
 * answers a `CallToolResult`, an MRTR `input_required`, or a
 * `CreateTaskResult` — the last only when this request declared the tasks
 * extension (T-01, T-04).
 */
import { traceContextOf, type TraceContext } from '../core/traceContext.js';
import type { Server, ServerContext } from '@modelcontextprotocol/server';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import type { Grants } from '../core/principal.js';
import { clientCapabilitiesOf } from './envelope.js';
import { mappingErrors } from './errors.js';
import type { Logger } from '../runtime/Logger.js';
import type { CallerRelay } from '../tools/CallerRelay.js';
import type { ToolCalls } from './ToolCalls.js';
import { sdkToolCallResult, sdkTools } from './sdkShapes.js';

export type { MrtrState } from './ToolCalls.js';

export interface ToolsSurfaceOptions {
  tools: ToolRegistry;
  /** The decisions of `tools/call`, shared with the HTTP fast lane. */
  calls: ToolCalls;
  principal: string;
  /** What the principal holds: `tools/list` shows only the tools policy lets it call, `tools/call` refuses the rest. */
  grants?: Grants | undefined;
  era: 'modern' | 'legacy';
  /** Where server faults go (the client gets a stable message and a reference id). */
  logger?: Logger;
}

export const ToolsSurface = {
  attach(server: Server, { tools, calls, principal, grants, era, logger }: ToolsSurfaceOptions): void {
    const caller = { id: principal, ...grants };
    // The domain's JSON named as the SDK's types: sdkShapes.ts says why that is an assertion, not a conversion.
    // Tool policy: a principal sees only what it may call (an unrestricted policy skips the filter).
    server.setRequestHandler('tools/list', () => ({
      tools: sdkTools(tools.policy.restricts ? tools.list().filter((tool) => tools.policy.allows(caller, tool.name)) : tools.list()),
    }));

    server.setRequestHandler(
      'tools/call',
      mappingErrors(async (request, ctx) => {
        const relay = callerRelay(ctx);
        const result = await calls.answer({
          name: request.params.name,
          args: request.params.arguments,
          principal,
          grants,
          era,
          clientCapabilities: clientCapabilitiesOf(ctx),
          state: ctx.mcpReq.requestState(),
          inputResponses: ctx.mcpReq.inputResponses,
          signal: ctx.mcpReq.signal,
          relay,
          ...traceOf(ctx),
        });
        // Progress and log messages sent during the call go out before its answer: a client drops progress for a
        // request it has seen answered, so the last `ctx.progress` before `return` would otherwise be lost.
        await relay.sent();
        return sdkToolCallResult(result);
      }, logger),
    );
  },
};

/** The W3C trace context in this request's `_meta`, as a spreadable field. */
function traceOf(ctx: ServerContext): { trace?: TraceContext } {
  const trace = traceContextOf(ctx.mcpReq._meta);
  return trace ? { trace } : {};
}

/**
 * Progress goes to the caller's own `progressToken` (only when it sent one);
 * log messages go as `notifications/message`, filtered by the client's level. Both ride on this request's
 * response stream (`notify` relates them to it) and are dropped once it ended.
 */
function callerRelay(ctx: ServerContext): CallerRelay & { sent(): Promise<void> } {
  const token = (ctx.mcpReq._meta as { progressToken?: unknown } | undefined)?.progressToken;
  /** Sends still in flight (each removes itself when done). */
  const inFlight = new Set<Promise<unknown>>();
  const track = (sending: Promise<unknown>) => {
    const settled = sending.catch(() => undefined).finally(() => inFlight.delete(settled));
    inFlight.add(settled);
  };
  const send = (method: string, params: Record<string, unknown>) => {
    if (ctx.mcpReq.signal.aborted) return;
    track(ctx.mcpReq.notify({ method, params }));
  };
  return {
    ...(typeof token === 'string' || typeof token === 'number'
      ? { progress: (update) => send('notifications/progress', { ...update, progressToken: token }) }
      : {}),
    // The SDK applies the client's level: logging/setLevel (2025-11-25) or the request's logLevel (2026-07-28; none: nothing sent).
    log: (message) => {
      if (ctx.mcpReq.signal.aborted) return;
      track(ctx.mcpReq.log(message.level, message.data, message.logger));
    },
    sent: async () => {
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
  };
}
