/**
 * SDK workaround for P5 (sdk-v2-notes §3): the SDK `Client` cannot decode a
 * `resultType: "task"` answer (`UNSUPPORTED_RESULT_TYPE`) and has no hook to
 * take a response before it does, so task traffic travels on the Client's
 * own transport with request ids of our own, and their responses (and the
 * frames of our own listen streams) are taken off that transport before the
 * Client sees them. This is the one place an SDK client transport's
 * `onmessage` is rewired; the ext-tasks client (`src/client/rawDispatch.ts`)
 * and the aggregator's upstream connections both go through it.
 *
 * Pinned by test/conformance/sdk-pins.integration.test.ts: it fails once the SDK Client
 * decodes task results itself (then this goes), or once `connect` no longer
 * installs `onmessage` (then the tap would be installed too early).
 */
import type { JSONRPCMessage, MessageExtraInfo, Transport } from '@modelcontextprotocol/client';

/** Looks at an inbound message first: `true` when it was ours (the Client never sees it). */
export type InboundTap = (message: JSONRPCMessage, extra?: MessageExtraInfo) => boolean;

/**
 * Puts `tap` in front of the handler the SDK Client installed on `transport`
 * in `connect` (so the Client must be connected first).
 */
export function tapInbound(transport: Transport, tap: InboundTap): void {
  const client = transport.onmessage;
  if (!client) throw new Error('tapInbound: connect the Client to the transport first');
  const tapped = (message: JSONRPCMessage, extra?: MessageExtraInfo): void => {
    if (!tap(message, extra)) client.call(transport, message, extra);
  };
  transport.onmessage = tapped;
}

/** The id of a response (result or error), or `undefined` for requests and notifications. */
export function responseId(message: JSONRPCMessage): string | number | undefined {
  return ('result' in message || 'error' in message) && 'id' in message ? (message.id ?? undefined) : undefined;
}
