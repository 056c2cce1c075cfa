/**
 * Bytes over a raw TCP socket, as an attacker sends them: no client library
 * fixes up the request line, the Host header or the framing. Used by the
 * request-head and byte-level fuzz tests.
 */
import { connect, type Socket } from 'node:net';

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

/** One WebSocket frame as a client sends it (masked unless `mask: false`); `length` overrides the encoded payload length. */
export function wsFrame(
  opcode: number,
  payload: Buffer | string = Buffer.alloc(0),
  { fin = true, mask = true, rsv = 0, length }: { fin?: boolean; mask?: boolean; rsv?: number; length?: number | bigint } = {},
): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const size = length ?? body.length;
  const head: number[] = [(fin ? 0x80 : 0) | ((rsv & 7) << 4) | (opcode & 0x0f)];
  const maskBit = mask ? 0x80 : 0;
  let extended = Buffer.alloc(0);
  if (BigInt(size) < 126n) head.push(maskBit | Number(size));
  else if (BigInt(size) < 65536n) {
    head.push(maskBit | 126);
    extended = Buffer.alloc(2);
    extended.writeUInt16BE(Number(size));
  } else {
    head.push(maskBit | 127);
    extended = Buffer.alloc(8);
    extended.writeBigUInt64BE(BigInt(size));
  }
  if (!mask) return Buffer.concat([Buffer.from(head), extended, body]);
  const key = Buffer.from([0x12, 0x34, 0x56, 0x78]);
  const masked = Buffer.from(body);
  for (let i = 0; i < masked.length; i++) masked[i]! ^= key[i % 4]!;
  return Buffer.concat([Buffer.from(head), extended, key, masked]);
}

/**
 * A WebSocket opened over a raw TCP socket (the handshake written by hand),
 * so a test controls every byte afterwards — including not reading at all.
 * Resolves once the server answered 101; rejects on any other answer.
 */
export function openRawWebSocket(
  port: number,
  { path = '/mcp', headers = {}, host = '127.0.0.1' }: { path?: string; headers?: Record<string, string>; host?: string } = {},
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      if (!text.startsWith('HTTP/1.1 101')) {
        socket.destroy();
        reject(new Error(`upgrade refused: ${text.slice(0, 200)}`));
        return;
      }
      const rest = Buffer.from(text.slice(end + 4), 'latin1');
      if (rest.length > 0) socket.unshift(rest);
      resolve(socket);
    };
    socket.on('data', onData);
    socket.once('error', reject);
    const extra = Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.on('connect', () =>
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
          `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: mcp\r\n${extra}\r\n`,
      ),
    );
  });
}

/** Resident set size of process `pid` in bytes (Linux `/proc`). */
export async function rssOf(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  if (!kb) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb[1]) * 1024;
}
