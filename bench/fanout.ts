/**
 * Status change → `notifications/tasks` frame latency over HTTP (benchmark 5).
 *
 * Per target server: one `bench_step` task and `listeners` SSE streams
 * (`subscriptions/listen` with `notifications.taskIds: [it]`), each on its
 * own connection. Then `pokes` rounds: in each, every target in turn gets a
 * `bench_poke` tools/call that changes the task's `statusMessage` inside
 * that request, and every stream records when the frame carrying the new
 * message arrived. Latency = frame arrival − poke sent, per listener, on the
 * client's clock (so it includes the poke request's own trip to the server
 * and the client's reading of the sockets).
 *
 * Targets are interleaved poke by poke (the order alternating each round),
 * so each one's figures are taken under the same machine load as the
 * others': the bench compares taskvisor with a bare `node:http` SSE server
 * (bench/sseFloor.ts) writing the same frames to as many listeners.
 *
 * The listeners are raw TCP sockets with a minimal HTTP/1.1 reader (a
 * search for the marker bytes in each chunk), not `http.request`: the
 * client shares the machine's two cores with the server, and Node's HTTP
 * client spends several times more per chunk than the server does per write.
 *
 * Over WebSocket (a target whose `listenUrl` is `ws://…`) each listener is
 * the same raw socket: it sends the upgrade request by hand, then the listen
 * request as one masked text frame, and searches what arrives for the same
 * marker bytes — server frames are unmasked and uncompressed (no
 * permessage-deflate offered), so a frame's JSON is in the byte stream as is.
 * The poke and the rest still go over HTTP, to `url`.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { rpc } from './loadgen.js';
import { encodeRequest } from './protocol.js';
import { summarize } from './stats.js';

export interface FanoutTarget {
  name: string;
  url: string;
  /** Where the listens go when not `url`: a `ws://` endpoint opens them over WebSocket. Default `url`. */
  listenUrl?: string;
  /** The server process's CPU time so far, µs (user + system); sampled around each change. */
  cpuMicros?: () => Promise<number>;
}

export interface FanoutResult {
  name: string;
  listeners: number;
  pokes: number;
  /** Per listener per poke, ms. */
  latency: { p50: number; p90: number; p99: number; max: number; mean: number };
  /** Per poke: the slowest listener, ms. */
  lastListenerMs: number[];
  /**
   * Per listener per poke: arrival (client `Date.now()`) − the frame's own
   * `lastUpdatedAt` (server `Date.now()` at the change; same machine clock,
   * 1 ms resolution). Excludes the poke request's trip to the server.
   */
  sinceChange: { p50: number; p99: number };
  /** Round trip of the poke request itself, ms. */
  pokeRtt: { p50: number; p99: number };
  /** Server CPU per change (the poke and its fan-out), µs: median over pokes; NaN without `cpuMicros`. */
  cpuPerChangeMicros: number;
  openMs: number;
  missed: number;
}

interface Listener {
  socket: Socket;
  /** Arrival time of each marker seen. */
  seen: Map<string, number>;
  /** Arrival wall-clock time − the frame's `lastUpdatedAt`, per marker. */
  sinceChange: Map<string, number>;
}

/** One target's streams and what it measured. */
interface Cell {
  target: FanoutTarget;
  taskId: string;
  control: http.Agent;
  listeners: Listener[];
  openMs: number;
  latencies: number[];
  lastListener: number[];
  rtts: number[];
  sinceChange: number[];
  cpu: number[];
  missed: number;
  /** The marker the streams watch for now (its bytes and as a key), and the callback counting its arrivals. */
  watched: { bytes: Buffer; key: string } | undefined;
  onMarker: (() => void) | undefined;
}

const markerOf = (k: number) => {
  const key = `"statusMessage":"poke-${k}"`;
  return { bytes: Buffer.from(key), key };
};
const LAST_UPDATED = /"lastUpdatedAt":"([^"]+)"/;
const ACK = Buffer.from('notifications/subscriptions/acknowledged');
const TASK_FRAME = Buffer.from('"method":"notifications/tasks"');
/** Streams opened at once. */
const OPEN_BATCH = 50;

/** One client→server WebSocket text frame (RFC 6455 §5.2: masked, FIN set). */
function maskedTextFrame(payload: Buffer): Buffer {
  if (payload.length >= 65_536) throw new Error('listen request too large for this client');
  const header =
    payload.length < 126
      ? Buffer.from([0x81, 0x80 | payload.length])
      : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  const mask = randomBytes(4);
  const masked = Buffer.alloc(payload.length);
  for (let i = 0; i < payload.length; i++) masked[i] = payload[i]! ^ mask[i & 3]!;
  return Buffer.concat([header, mask, masked]);
}

/** Opens one listen stream on a raw socket; resolves once the acknowledgement and the task's current state arrived. */
function openListener(cell: Cell, index: number): Promise<Listener> {
  const url = new URL(cell.target.listenUrl ?? cell.target.url);
  const websocket = url.protocol === 'ws:';
  const { headers, body } = encodeRequest(`listen-${index}`, {
    method: 'subscriptions/listen',
    params: { notifications: { taskIds: [cell.taskId] } },
  });
  // Over WebSocket: the upgrade first, the listen request as a frame once it is accepted (101).
  const head = websocket
    ? `GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`
    : `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\n${Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('')}\r\n`;
  const expected = websocket ? '101' : '200';
  return new Promise<Listener>((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), noDelay: true });
    const listener: Listener = { socket, seen: new Map(), sinceChange: new Map() };
    let opening: Buffer | undefined = Buffer.alloc(0);
    let upgraded = false;
    let tail: Buffer = Buffer.alloc(0);
    socket.on('error', (error) => {
      if (opening) reject(error);
    });
    socket.write(websocket ? head : Buffer.concat([Buffer.from(head), body]));
    socket.on('data', (chunk: Buffer) => {
      const now = performance.now();
      if (opening) {
        opening = Buffer.concat([opening, chunk]);
        if (opening.length >= 12 && opening.subarray(9, 12).toString() !== expected) {
          reject(new Error(`listen ${index}: ${opening.subarray(0, 200).toString()}`));
          socket.destroy();
          return;
        }
        if (websocket && !upgraded && opening.indexOf('\r\n\r\n') >= 0) {
          upgraded = true;
          socket.write(maskedTextFrame(body));
        }
        // Ready once the acknowledgement and the task's current state (the frame right after it) arrived.
        const ack = opening.indexOf(ACK);
        if (ack >= 0 && opening.indexOf(TASK_FRAME, ack) >= 0) {
          opening = undefined;
          resolve(listener);
        }
        return;
      }
      const watched = cell.watched;
      if (!watched || listener.seen.has(watched.key)) {
        tail = chunk;
        return;
      }
      // The marker may straddle two reads: search the end of the previous chunk with this one.
      const text = tail.length > 0 ? Buffer.concat([tail.subarray(-watched.bytes.length), chunk]) : chunk;
      tail = chunk;
      const at = text.indexOf(watched.bytes);
      if (at < 0) return;
      listener.seen.set(watched.key, now);
      const stamp = LAST_UPDATED.exec(text.subarray(at, at + 400).toString('latin1'));
      if (stamp) listener.sinceChange.set(watched.key, Date.now() - Date.parse(stamp[1]!));
      cell.onMarker?.();
    });
  });
}

async function openCell(target: FanoutTarget, listeners: number): Promise<Cell> {
  const control = new http.Agent({ keepAlive: true, maxSockets: 2 });
  const created = await rpc(control, target.url, { method: 'tools/call', params: { name: 'bench_step', arguments: {} } });
  const cell: Cell = {
    target,
    taskId: created.taskId as string,
    control,
    listeners: [],
    openMs: 0,
    latencies: [],
    lastListener: [],
    rtts: [],
    sinceChange: [],
    cpu: [],
    missed: 0,
    watched: undefined,
    onMarker: undefined,
  };
  const opened = performance.now();
  for (let i = 0; i < listeners; i += OPEN_BATCH) {
    const batch = Array.from({ length: Math.min(OPEN_BATCH, listeners - i) }, (_, j) => openListener(cell, i + j));
    cell.listeners.push(...(await Promise.all(batch)));
  }
  cell.openMs = performance.now() - opened;
  return cell;
}

async function poke(cell: Cell, k: number): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await rpc(cell.control, cell.target.url, {
        method: 'tools/call',
        params: { name: 'bench_poke', arguments: { taskId: cell.taskId, message: `poke-${k}` } },
      });
      return;
    } catch (error) {
      // The stepper registers itself a tick after the task starts.
      if (attempt > 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** One change on `cell`'s task, waited for on every stream (or `timeoutMs`); round 0 is a warm-up. */
async function change(cell: Cell, k: number, timeoutMs: number): Promise<void> {
  const marker = markerOf(k);
  let waiting = cell.listeners.length;
  const all = new Promise<void>((resolve) => {
    cell.onMarker = () => {
      if (--waiting === 0) resolve();
    };
  });
  const cpuBefore = await cell.target.cpuMicros?.();
  cell.watched = marker;
  const sent = performance.now();
  await poke(cell, k);
  const rtt = performance.now() - sent;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([all, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  clearTimeout(timer);
  cell.watched = undefined;
  cell.onMarker = undefined;
  const cpuAfter = await cell.target.cpuMicros?.();
  if (k === 0) return; // warm-up (and the stepper's registration)
  cell.rtts.push(rtt);
  if (cpuBefore !== undefined && cpuAfter !== undefined) cell.cpu.push(cpuAfter - cpuBefore);
  const key = marker.key;
  let slowest = 0;
  for (const listener of cell.listeners) {
    const at = listener.seen.get(key);
    if (at === undefined) {
      cell.missed++;
      continue;
    }
    cell.latencies.push(at - sent);
    const since = listener.sinceChange.get(key);
    if (since !== undefined) cell.sinceChange.push(since);
    slowest = Math.max(slowest, at - sent);
  }
  cell.lastListener.push(slowest);
}

/**
 * Opens `listeners` streams on every target, then runs `pokes` changes on
 * each, interleaved; one result per target, in the order given.
 */
export async function runFanout(
  targets: FanoutTarget[],
  options: { listeners: number; pokes: number; timeoutMs?: number },
): Promise<FanoutResult[]> {
  const cells: Cell[] = [];
  try {
    for (const target of targets) cells.push(await openCell(target, options.listeners));
    for (let k = 0; k <= options.pokes; k++) {
      const order = k % 2 === 0 ? cells : [...cells].reverse();
      for (const cell of order) {
        await change(cell, k, options.timeoutMs ?? 10_000);
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
    }
  } finally {
    for (const cell of cells) {
      for (const listener of cell.listeners) listener.socket.destroy();
      await rpc(cell.control, cell.target.url, { method: 'tasks/cancel', params: { taskId: cell.taskId } }).catch(() => undefined);
      cell.control.destroy();
    }
  }
  return cells.map((cell) => {
    const summary = summarize(cell.latencies);
    const rtt = summarize(cell.rtts);
    const since = summarize(cell.sinceChange);
    return {
      name: cell.target.name,
      listeners: options.listeners,
      pokes: options.pokes,
      latency: { p50: summary.p50, p90: summary.p90, p99: summary.p99, max: summary.max, mean: summary.mean },
      lastListenerMs: cell.lastListener,
      sinceChange: { p50: since.p50, p99: since.p99 },
      pokeRtt: { p50: rtt.p50, p99: rtt.p99 },
      cpuPerChangeMicros: summarize(cell.cpu).p50,
      openMs: cell.openMs,
      missed: cell.missed,
    };
  });
}
