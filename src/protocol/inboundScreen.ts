/**
 * SDK workaround for P2 / D-21 (sdk-v2-notes pitfalls): the SDK's protocol
 * layer lifts `params.inputResponses` out of every inbound request and turns
 * a non-object value into `{}` before any handler runs, so a stock
 * `tasks/update` handler acknowledges `inputResponses: []` as an empty
 * update. The SDK has no hook between the transport and that lifting, so the
 * transport's `onmessage` is wrapped as the SDK installs it (in `connect`),
 * on any transport: a screened message never reaches the SDK.
 *
 * Pinned by test/conformance/sdk-pins.integration.test.ts: it fails once a stock Server
 * stops coercing a non-object `inputResponses` (then this can go).
 */
import type { JSONRPCMessage, MessageExtraInfo, Transport } from '@modelcontextprotocol/server';

/** Returns the answer to send instead of dispatching `message`, or `undefined` to let it through. */
export type InboundScreen = (message: JSONRPCMessage) => JSONRPCMessage | undefined;

/** The accessor pair of `key` on `target` or its prototype chain, if it is an accessor property. */
function accessorOf(target: object, key: string): PropertyDescriptor | undefined {
  for (let at: object | null = target; at; at = Object.getPrototypeOf(at)) {
    const descriptor = Object.getOwnPropertyDescriptor(at, key);
    if (descriptor) return descriptor.get || descriptor.set ? descriptor : undefined;
  }
  return undefined;
}

/**
 * From now on, whatever handler is installed as `transport.onmessage` (the
 * SDK's, in `connect`) sees only messages `screen` lets through; refused ones
 * are answered with what `screen` returned.
 */
export function screenInbound(transport: Transport, screen: InboundScreen, onError: (error: Error) => void): void {
  let dispatch: Transport['onmessage'];
  const screened = (message: JSONRPCMessage, extra?: MessageExtraInfo): void => {
    const refusal = screen(message);
    if (refusal) {
      transport.send(refusal).catch((error: unknown) => onError(error instanceof Error ? error : new Error(String(error))));
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
}
