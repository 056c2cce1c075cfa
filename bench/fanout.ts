/**
 * Status change → `notifications/tasks` frame latency over HTTP.
 *
 * One `bench_step` task; `listeners` SSE streams (`subscriptions/listen` with
 * `notifications.taskIds: [it]`), each on its own connection. Then `pokes`
 * times: a `bench_poke` tools/call makes the task's `statusMessage` change
 * inside that request, and every stream records when the frame carrying the
 * new message arrived. Latency = frame arrival − poke sent, per listener, on
 * the client's clock (so it includes the poke request's own trip to the
 * server and the client's reading of the 1,000 sockets).
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { rpc } from './loadgen.js';
import { encodeRequest } from './protocol.js';
import { summarize } from './stats.js';

export interface FanoutResult {
  listeners: number;
  pokes: number;
  /** Per listener per poke, ms. */
  latency: { p50: number; p90: number; p99: number; max: number; mean: number };
  /** Per poke: the slowest listener, ms (median over pokes). */
  lastListenerMs: number[];
  /**
   * Per listener per poke: arrival (client `Date.now()`) − the frame's own
   * `lastUpdatedAt` (server `Date.now()` at the change; same machine clock,
   * 1 ms resolution). Excludes the poke request's trip to the server.
   */
  sinceChange: { p50: number; p99: number };
  /** Round trip of the poke request itself, ms. */
  pokeRtt: { p50: number; p99: number };
  openMs: number;
  missed: number;
}

interface Stream {
  request: http.ClientRequest;
  acked: boolean;
  buffer: string;
  /** Arrival time of each marker seen. */
  seen: Map<string, number>;
  /** Arrival wall-clock time − the frame's `lastUpdatedAt`, per marker. */
  sinceChange: Map<string, number>;
}

const markerOf = (k: number) => `"statusMessage":"poke-${k}"`;
const LAST_UPDATED = /"lastUpdatedAt":"([^"]+)"/;

export async function runFanout(url: string, options: { listeners: number; pokes: number; timeoutMs?: number }): Promise<FanoutResult> {
  const target = new URL(url);
  const control = new http.Agent({ keepAlive: true, maxSockets: 2 });
  const streamAgent = new http.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const created = await rpc(control, url, { method: 'tools/call', params: { name: 'bench_step', arguments: {} } });
  const taskId = created.taskId as string;
  const streams: Stream[] = [];
  let watchedMarker = '';
  let onMarker: (() => void) | undefined;

  const open = (index: number) =>
    new Promise<Stream>((resolve, reject) => {
      const { headers, body } = encodeRequest(`listen-${index}`, {
        method: 'subscriptions/listen',
        params: { notifications: { taskIds: [taskId] } },
      });
      const stream: Stream = {
        request: undefined as unknown as http.ClientRequest,
        acked: false,
        buffer: '',
        seen: new Map(),
        sinceChange: new Map(),
      };
      stream.request = http.request(
        { agent: streamAgent, hostname: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers },
        (response) => {
          if (response.statusCode !== 200) {
            reject(new Error(`listen ${index}: HTTP ${response.statusCode}`));
            return;
          }
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            const now = performance.now();
            if (watchedMarker && chunk.includes(watchedMarker) && !stream.seen.has(watchedMarker)) {
              stream.seen.set(watchedMarker, now);
              const stamp = LAST_UPDATED.exec(chunk.slice(chunk.indexOf(watchedMarker)));
              if (stamp) stream.sinceChange.set(watchedMarker, Date.now() - Date.parse(stamp[1]!));
              onMarker?.();
            }
            if (!stream.acked) {
              stream.buffer += chunk;
              // Ready once the acknowledgement and the task's current state (the frame right after it) arrived.
              if (stream.buffer.includes('notifications/subscriptions/acknowledged') && stream.buffer.includes('notifications/tasks')) {
                stream.acked = true;
                stream.buffer = '';
                resolve(stream);
              }
            }
          });
          response.on('error', () => {});
        },
      );
      stream.request.on('error', (error) => {
        if (!stream.acked) reject(error);
      });
      stream.request.end(body);
    });

  const opened = performance.now();
  for (let i = 0; i < options.listeners; i += 50) {
    streams.push(...(await Promise.all(Array.from({ length: Math.min(50, options.listeners - i) }, (_, j) => open(i + j)))));
  }
  const openMs = performance.now() - opened;

  const poke = async (k: number) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await rpc(control, url, {
          method: 'tools/call',
          params: { name: 'bench_poke', arguments: { taskId, message: `poke-${k}` } },
        });
      } catch (error) {
        // The stepper registers itself a tick after the task starts.
        if (attempt > 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  };

  const latencies: number[] = [];
  const lastListener: number[] = [];
  const rtts: number[] = [];
  const sinceChange: number[] = [];
  let missed = 0;
  for (let k = 0; k <= options.pokes; k++) {
    const marker = markerOf(k);
    let waiting = streams.length;
    const all = new Promise<void>((resolve) => {
      onMarker = () => {
        if (--waiting === 0) resolve();
      };
    });
    watchedMarker = marker;
    const sent = performance.now();
    await poke(k);
    rtts.push(performance.now() - sent);
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, options.timeoutMs ?? 10_000).unref());
    await Promise.race([all, timeout]);
    watchedMarker = '';
    if (k === 0) continue; // warm-up (and the stepper's registration)
    let slowest = 0;
    for (const stream of streams) {
      const at = stream.seen.get(marker);
      if (at === undefined) {
        missed++;
        continue;
      }
      latencies.push(at - sent);
      const since = stream.sinceChange.get(marker);
      if (since !== undefined) sinceChange.push(since);
      slowest = Math.max(slowest, at - sent);
    }
    lastListener.push(slowest);
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
  for (const stream of streams) stream.request.destroy();
  await rpc(control, url, { method: 'tasks/cancel', params: { taskId } }).catch(() => undefined);
  control.destroy();
  streamAgent.destroy();
  const summary = summarize(latencies);
  const rtt = summarize(rtts.slice(1));
  const since = summarize(sinceChange);
  return {
    listeners: options.listeners,
    pokes: options.pokes,
    latency: { p50: summary.p50, p90: summary.p90, p99: summary.p99, max: summary.max, mean: summary.mean },
    lastListenerMs: lastListener,
    sinceChange: { p50: since.p50, p99: since.p99 },
    pokeRtt: { p50: rtt.p50, p99: rtt.p99 },
    openMs,
    missed,
  };
}
