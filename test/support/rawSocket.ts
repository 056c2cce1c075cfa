/**
 * Bytes over a raw TCP socket, as an attacker sends them: no client library
 * fixes up the request line, the Host header or the framing. Used by the
 * request-head and byte-level fuzz tests (issue 12).
 */
import { connect } from 'node:net';

export interface RawSocketReply {
  /** The HTTP status of the answer; undefined when the server closed the socket without one (or timed out). */
  status: number | undefined;
  /** Everything received (latin1), head and whatever body arrived. */
  text: string;
  /** True when the server ended or destroyed the connection. */
  closed: boolean;
}

/**
 * Writes `bytes` to `host:port` and resolves once a complete response head
 * (and its Content-Length body) arrived, the server closed the socket, or `timeoutMs` passed. The socket is
 * destroyed afterwards.
 */
export function sendRaw(
  port: number,
  bytes: string | Buffer,
  { host = '127.0.0.1', timeoutMs = 20_000 }: { host?: string; timeoutMs?: number } = {},
): Promise<RawSocketReply> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let text = '';
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      socket.destroy();
      resolve({ status: match ? Number(match[1]) : undefined, text, closed });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const headEnd = text.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      // With a Content-Length, wait for the whole body (so callers can read it); otherwise the head is enough.
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, headEnd));
      if (!length || Buffer.byteLength(text.slice(headEnd + 4), 'latin1') >= Number(length[1])) finish(false);
    });
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('connect', () => socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes));
  });
}
