/**
 * The SDK's low-level `Server`, with the one change a Tasks server needs:
 * a `CreateTaskResult` returned from `tools/call` leaves as it is.
 *
 * Stock 2.4.0 runs every `tools/call` result through `normalizeContentlessToolResult`
 * and CallToolResult validation, which adds `content: []` to the flat task
 * shape (P1). The override keeps the SDK's request validation and MRTR seam
 * for every other result.
 */
import { Server, type JSONRPCRequest, type Result, type ServerContext } from '@modelcontextprotocol/server';

type Handler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>;

/** Carries a task result past the SDK's CallToolResult normalisation. */
class TaskCreated {
  constructor(readonly result: Result) {}
}

export class TaskvisorServer extends Server {
  protected override _wrapHandler(method: string, handler: Handler): Handler {
    if (method !== 'tools/call') return super._wrapHandler(method, handler);
    const wrapped = super._wrapHandler(method, async (request, ctx) => {
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
}
