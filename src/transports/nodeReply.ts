/**
 * A JSON reply handed to the Node response in one write, so nothing but its
 * bytes waits for a client that does not read it.
 *
 * The SDK's Node adapter copies a `Response` body to `res` chunk by chunk and
 * awaits `drain` after a write that fills the connection. For a client that
 * never reads, that await never ends, and everything the request's scope
 * holds stays alive with it: the web `Request` and its body, the parsed
 * body, the `Response`. Measured with unread 3 MB echoes, that was about
 * four times the reply's own bytes per connection, none of it counted by the
 * outbound budget (which sees the bytes queued on the socket).
 *
 * Here a complete (non-streaming) body is read into one buffer, and the
 * `Response` handed to the adapter carries no bytes: its first `pull`, which
 * comes once the adapter wrote the head, writes the buffer to `res` and ends
 * the body, so the adapter ends the response and returns at once. The bytes
 * then wait in the socket, where the connection's budget counts them.
 * An SSE stream (`text/event-stream`) or an empty body is returned as is.
 */
import type { ServerResponse } from 'node:http';

/** `response`, with its complete body written straight to `res` instead of through the adapter's loop. */
export async function detachedReply(response: Response, res: ServerResponse): Promise<Response> {
  if (response.body === null || (response.headers.get('content-type') ?? '').includes('text/event-stream')) return response;
  const bytes = new Uint8Array(await response.arrayBuffer());
  const body = new ReadableStream<Uint8Array>(
    {
      pull: (controller) => {
        if (bytes.byteLength > 0 && !res.destroyed) res.write(bytes);
        controller.close();
      },
    },
    { highWaterMark: 0 },
  );
  // Its length is known now: Node sends it as such instead of chunked.
  const headers = new Headers(response.headers);
  headers.set('content-length', String(bytes.byteLength));
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}
