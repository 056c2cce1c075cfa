/**
 * SDK workaround (types only): `@modelcontextprotocol/node`'s `NodeIncomingMessageLike` declares
 * `method?: string` and `url?: string`, while Node types `IncomingMessage.method`/`url` as
 * `string | undefined` (undefined on a client-side response). Under `exactOptionalPropertyTypes`
 * a server's `IncomingMessage` is therefore not accepted by `toNodeHandler`'s handler. A request
 * an `http.Server` hands us always carries both (Node: "only valid for request obtained from
 * http.Server"), so this checks that and passes the request on narrowed, with no cast.
 *
 * Pinned by test/conformance/sdk-pins.integration.test.ts: a `@ts-expect-error` there stops typechecking once
 * the SDK's type accepts an `IncomingMessage`; then this file can go.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toNodeHandler, type FetchLikeMcpHandler } from '@modelcontextprotocol/node';

/** An `IncomingMessage` as an `http.Server` delivers it. */
type ServerRequest = IncomingMessage & { method: string; url: string };

function isServerRequest(req: IncomingMessage): req is ServerRequest {
  return req.method !== undefined && req.url !== undefined;
}

/**
 * A Node request listener: what `toNodeHandler` returns, typed for Node's own request. `parsedBody` is a body a
 * host framework already parsed: the adapter hands it on and reads nothing from `req`.
 */
export type NodeRequestHandler = (req: IncomingMessage, res: ServerResponse, parsedBody?: unknown) => Promise<void>;

/** `toNodeHandler(handler)`, taking Node's `IncomingMessage` as an `http.Server` delivers it. */
export function nodeRequestHandler(handler: FetchLikeMcpHandler): NodeRequestHandler {
  const adapter = toNodeHandler(handler);
  return async (req, res, parsedBody) => {
    if (!isServerRequest(req)) throw new TypeError('nodeRequestHandler: a request without a method or target (not from an http.Server)');
    await adapter(req, res, parsedBody);
  };
}
