/**
 * The SDK's low-level `Server`, with the one change a Tasks server needs:
 * a `CreateTaskResult` returned from `tools/call` leaves as it is.
 *
 * Stock 2.4.0 runs every `tools/call` result through `normalizeContentlessToolResult`
 * and CallToolResult validation, which adds `content: []` to the flat task
 * shape (P1). The override keeps the SDK's request validation and MRTR seam
 * for every other result.
 */
import { Server, type JSONRPCRequest, type Result, type ServerContext, type Transport } from '@modelcontextprotocol/server';
import { malformedInputResponses } from './inputResponsesShape.js';

/** The accessor pair of `key` on `target` or its prototype chain, if it is an accessor property. */
function accessorOf(target: object, key: string): PropertyDescriptor | undefined {
  for (let at: object | null = target; at; at = Object.getPrototypeOf(at)) {
    const descriptor = Object.getOwnPropertyDescriptor(at, key);
    if (descriptor) return descriptor.get || descriptor.set ? descriptor : undefined;
  }
  return undefined;
}

type Handler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>;

/** Carries a task result past the SDK's CallToolResult normalisation. */
class TaskCreated {
  constructor(readonly result: Result) {}
}

export class TaskvisorServer extends Server {
  /**
   * Screens inbound messages before the SDK lifts `inputResponses` out of
   * them (§1.6: a non-object `inputResponses` is -32602, not an empty
   * update). The transport's `onmessage` is wrapped as the SDK installs it,
   * so no message can slip past, on any transport.
   */
  override async connect(transport: Transport): Promise<void> {
    let dispatch: Transport['onmessage'];
    const screened: NonNullable<Transport['onmessage']> = (message, extra) => {
      const refusal = malformedInputResponses(message);
      if (refusal) {
        transport.send(refusal).catch((error: unknown) => this.onerror?.(error instanceof Error ? error : new Error(String(error))));
        return;
      }
      dispatch?.(message, extra);
    };
    // Keep the transport's own onmessage mechanics (a wrapper transport may store it behind an accessor).
    const own = accessorOf(transport, 'onmessage');
    let stored: Transport['onmessage'] = transport.onmessage;
    Object.defineProperty(transport, 'onmessage', {
      configurable: true,
      enumerable: true,
      get: () => (own?.get ? own.get.call(transport) : stored),
      set: (handler: Transport['onmessage']) => {
        dispatch = handler;
        const value = handler ? screened : undefined;
        if (own?.set) own.set.call(transport, value);
        else stored = value;
      },
    });
    await super.connect(transport);
  }

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
