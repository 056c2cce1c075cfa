/**
 * Closed-loop HTTP load generator: `concurrency` workers, each sending its
 * next request as soon as the previous reply is read, over keep-alive
 * connections (`node:http` Agent, one socket per worker). Every reply is
 * parsed and checked: a JSON-RPC error, a non-200 status or a failed
 * `check` counts as an error and is not in the latency figures.
 *
 * Throughput is the median over `slices` equal slices of the measured
 * window (the machine is noisy); latencies are pooled over the window.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { encodeRequest, parseReply, type Json, type RpcCall } from './protocol.js';
import { median, summarize } from './stats.js';
import { readThreads, sumThreads, threadDelta, type ThreadReading } from './threadStats.js';

export interface LoadOptions {
  url: string;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** Throughput is the median over this many slices of the window. Default 3. */
  slices?: number;
  /** The request worker `worker` sends as its `seq`-th request. */
  next: (seq: number, worker: number) => RpcCall;
  /** Returns a problem with a successful result, or undefined. */
  check?: (result: Json) => string | undefined;
  /** Called with each successful result (e.g. to collect created task ids). */
  onResult?: (result: Json) => void;
  /** Also return every latency sample (for merging interleaved slices). */
  keepSamples?: boolean;
  /** The server's pid: read its CPU and both sides' sleeps over the window (bench/threadStats.ts). */
  serverPid?: number;
}

export interface LoadResult {
  concurrency: number;
  /** Successful replies completed inside the window. */
  requests: number;
  errors: number;
  firstError?: string;
  /** Median of the per-slice rates, req/s. */
  throughput: number;
  /** requests / window, req/s. */
  throughputAll: number;
  sliceThroughputs: number[];
  /** Latency of the successful replies completed inside the window, ms. */
  latency: { mean: number; p50: number; p90: number; p99: number; max: number };
  /** Measured window, ms (summed over slices for a merged result). */
  windowMs: number;
  samples?: number[];
  /** Over the window, when `serverPid` was given and /proc is there. */
  threads?: ThreadReading;
}

export interface Reply {
  status: number;
  contentType: string;
  text: string;
}

/** One POST on `agent`; resolves with status and body. */
export function post(agent: http.Agent, url: URL, headers: Record<string, string>, body: Buffer): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { agent, hostname: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            contentType: String(response.headers['content-type'] ?? ''),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

let requestCounter = 0;

/** Sends one request and returns its result, throwing on any error (for setup steps). */
export async function rpc(agent: http.Agent, url: string, call: RpcCall): Promise<Json> {
  const { headers, body } = encodeRequest(`setup-${++requestCounter}`, call);
  const reply = await post(agent, new URL(url), headers, body);
  const message = parseReply(reply.contentType, reply.text);
  if (reply.status !== 200 || !message?.result) {
    throw new Error(`${call.method} failed: HTTP ${reply.status} ${reply.text.slice(0, 300)}`);
  }
  return message.result;
}

/** Runs the closed loop; resolves once every worker's last request has returned. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const url = new URL(options.url);
  const slices = options.slices ?? 3;
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency, maxFreeSockets: options.concurrency });
  const latencies: number[] = [];
  const sliceCounts = new Array<number>(slices).fill(0);
  let errors = 0;
  let firstError: string | undefined;
  const t0 = performance.now();
  const windowStart = t0 + options.warmupMs;
  const windowEnd = windowStart + options.durationMs;
  const sliceMs = options.durationMs / slices;
  let stop = false;
  const pid = options.serverPid;
  let threadsBefore: ThreadReading | undefined;
  let threadsAfter: ThreadReading | undefined;
  const startTimer = pid === undefined ? undefined : setTimeout(() => (threadsBefore = readThreads(pid)), options.warmupMs);
  const stopTimer = setTimeout(() => {
    stop = true;
    if (pid !== undefined) threadsAfter = readThreads(pid);
  }, options.warmupMs + options.durationMs);

  const fail = (message: string) => {
    errors++;
    firstError ??= message;
  };

  const worker = async (w: number) => {
    for (let seq = 0; !stop; seq++) {
      const { headers, body } = encodeRequest(`${w}:${seq}`, options.next(seq, w));
      const start = performance.now();
      let reply: Reply;
      try {
        reply = await post(agent, url, headers, body);
      } catch (error) {
        fail(`transport: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
        continue;
      }
      const end = performance.now();
      const inWindow = end >= windowStart && end < windowEnd;
      const message = parseReply(reply.contentType, reply.text);
      if (reply.status !== 200 || !message?.result) {
        if (inWindow || errors === 0) fail(`HTTP ${reply.status}: ${reply.text.slice(0, 200)}`);
        continue;
      }
      const problem = options.check?.(message.result);
      if (problem) {
        fail(problem);
        continue;
      }
      options.onResult?.(message.result);
      if (inWindow) {
        latencies.push(end - start);
        const slice = Math.min(slices - 1, Math.floor((end - windowStart) / sliceMs));
        sliceCounts[slice] = (sliceCounts[slice] ?? 0) + 1;
      }
    }
  };

  await Promise.all(Array.from({ length: options.concurrency }, (_, w) => worker(w)));
  clearTimeout(stopTimer);
  clearTimeout(startTimer);
  const threads = threadDelta(threadsBefore, threadsAfter);
  agent.destroy();
  const summary = summarize(latencies);
  const sliceThroughputs = sliceCounts.map((count) => count / (sliceMs / 1000));
  return {
    concurrency: options.concurrency,
    requests: latencies.length,
    errors,
    ...(firstError !== undefined ? { firstError } : {}),
    throughput: median(sliceThroughputs),
    throughputAll: latencies.length / (options.durationMs / 1000),
    sliceThroughputs,
    latency: { mean: summary.mean, p50: summary.p50, p90: summary.p90, p99: summary.p99, max: summary.max },
    windowMs: options.durationMs,
    ...(options.keepSamples ? { samples: latencies } : {}),
    ...(threads ? { threads } : {}),
  };
}

/** One side of an interleaved measurement. */
export interface Partner {
  key: string;
  url: string;
  next: LoadOptions['next'];
  check?: LoadOptions['check'];
  onResult?: LoadOptions['onResult'];
  /** The server's pid, for {@link LoadResult.threads}. */
  serverPid?: number;
  /** Measures a slice itself instead of over HTTP (a floor without a server, e.g. bench/pgFloor.ts); `url` is then unused. */
  measure?: (concurrency: number, warmupMs: number, durationMs: number) => Promise<LoadResult>;
}

/**
 * Measures several servers (or request kinds) at the same concurrency in
 * alternating slices — `p1…pk pk…p1`, `rounds` times — so slow phases of a
 * shared machine hit all of them alike and their ratios stay meaningful.
 * Each slice drops what completes in its first `warmupMs`. Per partner:
 * throughput = median of its slice rates; latencies pooled over its slices.
 */
export async function runInterleaved(
  partners: Partner[],
  options: { concurrency: number; sliceMs: number; warmupMs: number; rounds: number },
): Promise<Record<string, LoadResult>> {
  const slices = new Map<string, LoadResult[]>(partners.map((partner) => [partner.key, []]));
  const order = [...partners, ...[...partners].reverse()];
  for (let round = 0; round < options.rounds; round++) {
    for (const partner of order) {
      if (partner.measure) {
        slices.get(partner.key)!.push(await partner.measure(options.concurrency, options.warmupMs, options.sliceMs));
        continue;
      }
      const load = await runLoad({
        url: partner.url,
        concurrency: options.concurrency,
        warmupMs: options.warmupMs,
        durationMs: options.sliceMs,
        slices: 1,
        next: partner.next,
        ...(partner.check ? { check: partner.check } : {}),
        ...(partner.onResult ? { onResult: partner.onResult } : {}),
        ...(partner.serverPid !== undefined ? { serverPid: partner.serverPid } : {}),
        keepSamples: true,
      });
      slices.get(partner.key)!.push(load);
    }
  }
  const merged: Record<string, LoadResult> = {};
  for (const [key, loads] of slices) merged[key] = mergeLoads(loads);
  return merged;
}

/** Combines slices of one partner: median slice rate, pooled latencies. */
export function mergeLoads(loads: LoadResult[]): LoadResult {
  const samples = loads.flatMap((load) => load.samples ?? []);
  const windowMs = loads.reduce((total, load) => total + load.windowMs, 0);
  const rates = loads.map((load) => load.throughputAll);
  const summary = summarize(samples);
  const errors = loads.reduce((total, load) => total + load.errors, 0);
  const firstError = loads.find((load) => load.firstError !== undefined)?.firstError;
  const threads = sumThreads(loads.map((load) => load.threads));
  return {
    concurrency: loads[0]?.concurrency ?? 0,
    requests: samples.length,
    errors,
    ...(firstError !== undefined ? { firstError } : {}),
    throughput: median(rates),
    throughputAll: samples.length / (windowMs / 1000),
    sliceThroughputs: rates,
    latency: { mean: summary.mean, p50: summary.p50, p90: summary.p90, p99: summary.p99, max: summary.max },
    windowMs,
    ...(threads ? { threads } : {}),
  };
}
