/**
 * The SDK's low-level `Server`, with the one change a Tasks server needs:
 * a `CreateTaskResult` returned from `tools/call` leaves as it is.
 *
 * Stock 2.4.0 runs every `tools/call` result through `normalizeContentlessToolResult`
 * and CallToolResult validation, which adds `content: []` to the flat task
 * shape (P1). The override keeps the SDK's request validation and MRTR seam
 * for every other result. Each SDK workaround lives in its own file with the
 * pitfall it answers and a pin test (docs/conformance.md, "SDK workarounds").
 */
import { Server, type Transport } from '@modelcontextprotocol/server';
import { screenInbound } from './inboundScreen.js';
import { malformedInputResponses } from './inputResponsesShape.js';
import { passTaskResults, type Handler } from './taskResultPassThrough.js';

export class TaskvisorServer extends Server {
  /**
   * Screens inbound messages before the SDK lifts `inputResponses` out of
   * them (§1.6: a non-object `inputResponses` is -32602, not an empty
   * update; P2, see inboundScreen.ts), on any transport.
   */
  override async connect(transport: Transport): Promise<void> {
    screenInbound(transport, malformedInputResponses, (error) => this.onerror?.(error));
    await super.connect(transport);
  }

  /** `tools/call` answers a `CreateTaskResult` as it is (P1, see taskResultPassThrough.ts). */
  protected override _wrapHandler(method: string, handler: Handler): Handler {
    if (method !== 'tools/call') return super._wrapHandler(method, handler);
    return passTaskResults((inner) => super._wrapHandler(method, inner), handler);
  }
}
