/**
 * SDK workaround for P1 (sdk-v2-notes §1.3): stock 2.4.0 runs every
 * `tools/call` result through `normalizeContentlessToolResult` and
 * CallToolResult validation inside `Server._wrapHandler`, which adds
 * `content: []` to the flat `CreateTaskResult` shape. The SDK has no option
 * to let a result through, so a task result is thrown past that wrapper as
 * a {@link TaskCreated} and caught again outside it; every other result
 * (and the SDK's request validation and MRTR seam) is left to the SDK.
 *
 * Pinned by test/conformance/sdk-pins.integration.test.ts: it fails once a stock Server
 * answers a task result without `content` (then this can go).
 */
import type { JSONRPCRequest, Result, ServerContext } from '@modelcontextprotocol/server';

export type Handler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>;

/** Carries a task result past the SDK's CallToolResult normalisation. */
class TaskCreated {
  constructor(readonly result: Result) {}
}

/**
 * `handler` wrapped by the SDK's `wrap` (its `_wrapHandler`), except that a
 * `resultType: "task"` result leaves untouched.
 */
export function passTaskResults(wrap: (handler: Handler) => Handler, handler: Handler): Handler {
  const wrapped = wrap(async (request, ctx) => {
    const result = await handler(request, ctx);
    // T-05: `resultType: "task"` only ever comes from tools/call, and it passes untouched (P1).
    if ((result as { resultType?: unknown }).resultType === 'task') throw new TaskCreated(result);
    return result;
  });
  return async (request, ctx) => {
    try {
      return await wrapped(request, ctx);
    } catch (outcome) {
      if (outcome instanceof TaskCreated) return outcome.result;
      throw outcome;
    }
  };
}
