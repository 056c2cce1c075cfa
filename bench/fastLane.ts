/**
 * The HTTP fast lane cell: `tasks/get` through the fast
 * lane and through the SDK path (the same runtime code with `fastLane:
 * false`), next to the bare v2 SDK echo and a raw `node:http` JSON-RPC echo
 * (the floor), all at one concurrency, in slices interleaved `p1…p4 p4…p1`
 * so a noisy phase of the shared machine hits all four alike.
 *
 * Load generator: autocannon (pinned devDependency), not bench/loadgen.ts:
 * near the raw floor our own `node:http` client is the bottleneck (it
 * parses every reply; measured here too, against the raw echo). Autocannon
 * checks every reply body byte for byte against one taken before the run
 * (`expectBody`): the request and therefore the answer never change, so a
 * mismatch, a non-2xx or a transport error is counted and reported.
 */
import autocannon from 'autocannon';
import http from 'node:http';
import { startServer, type ServerChild } from './child.js';
import { post, rpc, runLoad } from './loadgen.js';
import { encodeRequest, type RpcCall } from './protocol.js';
import { median } from './stats.js';
import { readThreads, threadDelta } from './threadStats.js';

export type LaneKey = 'lane' | 'sdk' | 'bare' | 'raw';

export interface LaneSlice {
  rate: number;
  p50: number;
  p99: number;
  errors: number;
}

export interface FastLaneResult {
  concurrency: number;
  sliceMs: number;
  rounds: number;
  generator: string;
  /** What each partner serves. */
  what: Record<LaneKey, string>;
  slices: Record<LaneKey, LaneSlice[]>;
  /** Median slice rate, req/s. */
  rate: Record<LaneKey, number>;
  /** Median over slices of the slice p50 / p99 latency, ms. */
  p50: Record<LaneKey, number>;
  p99: Record<LaneKey, number>;
  errors: number;
  firstError?: string;
  /** bench/loadgen.ts (our own generator) on the raw echo at the same concurrency: is it the bottleneck? */
  ownLoadgenOnRaw: number;
  /**
   * Server CPU (every thread, /proc) per answer over all measured slices, µs: what an answer costs the server
   * whatever the load generator and the other core do (undefined without /proc).
   */
  cpuPerAnswerUs?: Record<LaneKey, number>;
}

const echoCall: RpcCall = { method: 'tools/call', params: { name: 'echo', arguments: { text: 'hello' } } };

interface Target {
  key: LaneKey;
  pid: number;
  url: string;
  headers: Record<string, string>;
  body: string;
  expectBody: string;
}

/** The request for `call` (content-length left to autocannon) and the reply it must get every time. */
async function target(key: LaneKey, server: ServerChild, call: RpcCall): Promise<Target> {
  const url = server.url;
  const { headers, body } = encodeRequest(1, call);
  const agent = new http.Agent({ keepAlive: false });
  const reply = await post(agent, new URL(url), headers, body);
  agent.destroy();
  if (reply.status !== 200 || !reply.text.includes('"result"'))
    throw new Error(`${key}: ${call.method} failed: HTTP ${reply.status} ${reply.text.slice(0, 300)}`);
  delete headers['content-length'];
  return { key, pid: server.pid, url, headers, body: body.toString('utf8'), expectBody: reply.text };
}

/** One autocannon run of `ms` at `connections`. */
function cannon(t: Target, connections: number, ms: number): Promise<autocannon.Result> {
  return autocannon({
    url: t.url,
    method: 'POST',
    headers: t.headers,
    body: t.body,
    connections,
    pipelining: 1,
    duration: ms / 1000,
    expectBody: t.expectBody,
  });
}

/** Runs the cell; starts and stops its own four servers. */
export async function runFastLaneCell(options: {
  concurrency: number;
  sliceMs: number;
  warmupMs: number;
  rounds: number;
  prewarmMs: number;
  log: (message: string) => void;
}): Promise<FastLaneResult> {
  const servers: ServerChild[] = [];
  try {
    const start = async (config: Parameters<typeof startServer>[0]) => {
      const server = await startServer(config);
      servers.push(server);
      return server;
    };
    const lane = await start({ mode: 'taskvisor', store: { kind: 'memory' } });
    const sdk = await start({ mode: 'taskvisor', store: { kind: 'memory' }, fastLane: false });
    const bare = await start({ mode: 'bare' });
    const raw = await start({ mode: 'raw' });
    // One completed task on each runtime (read from its store: completed tasks leave memory once stored).
    const completedTask = async (server: ServerChild) => {
      const agent = new http.Agent({ keepAlive: false });
      const created = await rpc(agent, server.url, { method: 'tools/call', params: { name: 'bench_work', arguments: { ms: 0 } } });
      agent.destroy();
      await new Promise((resolve) => setTimeout(resolve, 200));
      await server.command('flush');
      return String(created.taskId);
    };
    const get = (taskId: string): RpcCall => ({ method: 'tasks/get', params: { taskId } });
    const targets = [
      await target('lane', lane, get(await completedTask(lane))),
      await target('sdk', sdk, get(await completedTask(sdk))),
      await target('bare', bare, echoCall),
      await target('raw', raw, echoCall),
    ];
    // Warm every server alike (JIT, heap sizing).
    for (const t of targets) await cannon(t, options.concurrency, options.prewarmMs);

    const slices = { lane: [], sdk: [], bare: [], raw: [] } as Record<LaneKey, LaneSlice[]>;
    let errors = 0;
    let firstError: string | undefined;
    const cpu = { lane: { ms: 0, answers: 0 }, sdk: { ms: 0, answers: 0 }, bare: { ms: 0, answers: 0 }, raw: { ms: 0, answers: 0 } };
    let cpuRead = true;
    const order = [...targets, ...[...targets].reverse()];
    for (let round = 0; round < options.rounds; round++) {
      for (const t of order) {
        if (options.warmupMs > 0) await cannon(t, options.concurrency, options.warmupMs);
        const before = readThreads(t.pid);
        const result = await cannon(t, options.concurrency, options.sliceMs);
        const used = threadDelta(before, readThreads(t.pid));
        if (used) {
          cpu[t.key].ms += used.serverCpuMs;
          cpu[t.key].answers += result.requests.total;
        } else cpuRead = false;
        const bad = result.errors + result.timeouts + result.non2xx + result.mismatches;
        if (bad > 0) {
          errors += bad;
          firstError ??= `${t.key}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx, ${result.mismatches} bodies not as expected`;
        }
        const good = result['2xx'] - result.mismatches;
        slices[t.key].push({ rate: good / result.duration, p50: result.latency.p50, p99: result.latency.p99, errors: bad });
      }
    }
    const pick = (f: (slice: LaneSlice) => number) =>
      Object.fromEntries(Object.entries(slices).map(([key, list]) => [key, median(list.map(f))])) as Record<LaneKey, number>;
    const rate = pick((s) => s.rate);
    options.log(
      `fast lane c=${options.concurrency}: lane ${rate.lane.toFixed(0)}, SDK path ${rate.sdk.toFixed(0)}, bare SDK echo ${rate.bare.toFixed(0)}, raw echo ${rate.raw.toFixed(0)} req/s${errors ? `; ${errors} errors (${firstError})` : ''}`,
    );
    // Our own generator on the floor, for the record: how far below autocannon it tops out.
    const own = await runLoad({
      url: raw.url,
      concurrency: options.concurrency,
      warmupMs: options.warmupMs,
      durationMs: options.sliceMs,
      slices: 1,
      next: () => echoCall,
    });
    return {
      concurrency: options.concurrency,
      sliceMs: options.sliceMs,
      rounds: options.rounds,
      generator: 'autocannon 9.0.0 (in the bench process; one keep-alive connection per worker, pipelining 1)',
      what: {
        lane: 'tasks/get of a completed task, HTTP fast lane',
        sdk: 'tasks/get of a completed task, SDK path (fastLane: false)',
        bare: 'bare v2 SDK, tools/call echo',
        raw: 'raw node:http JSON-RPC echo',
      },
      slices,
      rate,
      p50: pick((s) => s.p50),
      p99: pick((s) => s.p99),
      errors,
      ...(firstError !== undefined ? { firstError } : {}),
      ownLoadgenOnRaw: own.throughput,
      ...(cpuRead
        ? {
            cpuPerAnswerUs: Object.fromEntries(
              Object.entries(cpu).map(([key, { ms, answers }]) => [key, answers > 0 ? (ms * 1000) / answers : NaN]),
            ) as Record<LaneKey, number>,
          }
        : {}),
    };
  } finally {
    for (const server of servers) await server.stop();
  }
}
