/**
 * The SDK's refusals, with the client's strings they quote cut short
 * (`core/clientText.ts`). The SDK answers a header/body mismatch (-32020) by
 * quoting the body's value in its message and again in `data`: a 3 MB task
 * id made a 6 MB answer. Only answers with an error status are read (never
 * a success, a stream, or a tool's error, which travel in a 200, D-19).
 */
import { clipErrorStrings } from '../core/clientText.js';

/** Below this many bytes an error answer is passed on unread: it cannot quote much. */
const SHORT_ANSWER = 1024;

/** `response`, or the same answer with its JSON-RPC error's strings cut. */
export async function clippedErrorResponse(response: Response): Promise<Response> {
  if (response.status < 400 || !response.headers.get('content-type')?.startsWith('application/json')) return response;
  const declared = response.headers.get('content-length');
  if (declared !== null && Number(declared) <= SHORT_ANSWER) return response;
  const text = await response.text();
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  const init = { status: response.status, statusText: response.statusText, headers };
  if (text.length <= SHORT_ANSWER) return new Response(text, init);
  let message: { error?: { message: string; data?: unknown } };
  try {
    message = JSON.parse(text) as typeof message;
  } catch {
    return new Response(text, init);
  }
  if (!message.error || typeof message.error.message !== 'string') return new Response(text, init);
  return new Response(JSON.stringify({ ...message, error: clipErrorStrings(message.error) }), init);
}
