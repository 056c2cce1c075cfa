/**
 * Two instances on one PostgreSQL schema (benchmark 12, `--only cluster`), each figure beside
 * PostgreSQL's own floor for the same thing, measured in the same run:
 *
 * - **listen across instances**: a `bench_step` task on A changed by a poke sent to A; one listen
 *   stream on A (local fan-out) and one on B (A's write → `NOTIFY` → B reads the row → B's frame),
 *   poke by poke (bench/fanout.ts). Baseline: PostgreSQL's own LISTEN/NOTIFY round trip (a
 *   `NOTIFY` on one connection until the notification arrives on another), sampled between the pokes.
 * - **`tasks/get` of a task live on A**: on A (from the actor) and on B (from the row), interleaved
 *   request by request; baseline: the local get plus one read of the row (`SELECT record … WHERE
 *   task_id = $1` and parsing it), the read sampled in the same loop.
 * - **adoption after `kill -9`**: A runs `bench_wait` tasks (`resume: 'fail'`), is killed, and B is
 *   polled until it has adopted them (the task ends `failed`): time from the kill, against the lease.
 * - **throughput**: durable creates with the load on A alone vs the same load split over A and B,
 *   in alternating slices, with both servers' CPU over each window (what limits it on 2 cores).
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Notification, Pool, PoolClient } from 'pg';
import { startServer, type ServerChild } from './child.js';
import { runFanout, type FanoutResult } from './fanout.js';
import { mergeLoads, rpc, runLoad, type LoadResult } from './loadgen.js';
import type { Json, RpcCall } from './protocol.js';
import { summarize, type BenchRow, type Summary, type Verdict } from './stats.js';

export interface ClusterOptions {
  pgUrl: string;
  schema: string;
  leaseMs: number;
  pokes: number;
  gets: number;
  adoptions: number;
  concurrency: number;
  sliceMs: number;
  rounds: number;
  log: (line: string) => void;
}

export interface ClusterResult {
  leaseMs: number;
  /** PostgreSQL LISTEN/NOTIFY round trip between two connections, ms. */
  notifyRtt: Summary;
  listen: { local: FanoutResult; remote: FanoutResult };
  /** `tasks/get` of a task live on A, ms. */
  get: { local: Summary; remote: Summary; rowRead: Summary };
  /** kill -9 of the owner → the adopter has ended the task, ms, per round. */
  adoptionMs: number[];
  throughput: { one: LoadResult; two: LoadResult; oneCpuMs: number; twoCpuMs: number };
}

const createCall = (): RpcCall => ({ method: 'tools/call', params: { name: 'bench_work', arguments: { ms: 50 } } });
const checkTask = (result: Json) => (typeof result.taskId === 'string' ? undefined : 'no taskId in the create result');

/** PostgreSQL's own LISTEN/NOTIFY round trip: NOTIFY on `sender`, until `listener` hears it. */
async function notifyRoundTrip(listener: PoolClient, sender: Pool, channel: string): Promise<number> {
  const payload = String(Math.random());
  const heard = new Promise<number>((resolve) => {
    const onNotification = (message: Notification) => {
      if (message.channel !== channel || message.payload !== payload) return;
      listener.off('notification', onNotification);
      resolve(performance.now());
    };
    listener.on('notification', onNotification);
  });
  const sent = performance.now();
  await sender.query('SELECT pg_notify($1, $2)', [channel, payload]);
  return (await heard) - sent;
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  return performance.now() - started;
}

/** Polls `tasks/get` on `server` until the task is in `status`; rejects after `timeoutMs`. */
async function waitForStatus(agent: http.Agent, server: ServerChild, taskId: string, status: string, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const task = await rpc(agent, server.url, { method: 'tasks/get', params: { taskId } });
    if (task.status === status) return;
    if (performance.now() > deadline) throw new Error(`task ${taskId} still ${String(task.status)} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function cpuMs(server: ServerChild): Promise<number> {
  return server.command<{ cpuMicros: number }>('stats').then((stats) => stats.cpuMicros / 1000);
}

export async function runCluster(options: ClusterOptions): Promise<ClusterResult> {
  const { default: pg } = await import('pg');
  const store = { kind: 'postgres', url: options.pgUrl, schema: options.schema, poolSize: 10, leaseMs: options.leaseMs };
  const start = () => startServer({ mode: 'taskvisor', store, ttlMs: 3_600_000 }, { timeoutMs: 60_000 });
  const pool = new pg.Pool({ connectionString: options.pgUrl, max: 2 });
  const feed = await pool.connect();
  const channel = `${options.schema}.bench`;
  await feed.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
  const servers: ServerChild[] = [];
  try {
    const a = await start();
    servers.push(a);
    const b = await start();
    servers.push(b);
    options.log(`cluster: A pid ${a.pid}, B pid ${b.pid}, lease ${options.leaseMs} ms`);

    // Listen across instances, with the NOTIFY round trip sampled between the pokes.
    const notifyRtts: number[] = [];
    for (let i = 0; i < 20; i++) await notifyRoundTrip(feed, pool, channel); // warm-up
    const sampler = setInterval(() => void notifyRoundTrip(feed, pool, channel).then((ms) => notifyRtts.push(ms)), 37);
    let listen: FanoutResult[];
    try {
      listen = await runFanout(
        [
          { name: 'local', url: a.url, listenUrl: a.url },
          { name: 'remote', url: a.url, listenUrl: b.url },
        ],
        { listeners: 1, pokes: options.pokes },
      );
    } finally {
      clearInterval(sampler);
    }
    options.log(`cluster listen: local p50 ${listen[0]!.latency.p50} ms, remote p50 ${listen[1]!.latency.p50} ms`);

    // tasks/get of a task live on A: on A, on B, and the row read, interleaved.
    const { taskId } = (await rpc(agent, a.url, { method: 'tools/call', params: { name: 'bench_wait', arguments: {} } })) as {
      taskId: string;
    };
    const get: RpcCall = { method: 'tasks/get', params: { taskId } };
    const local: number[] = [];
    const remote: number[] = [];
    const rowRead: number[] = [];
    const readRow = async () => {
      const rows = await pool.query<{ record: string }>(
        `SELECT record FROM ${pg.escapeIdentifier(options.schema)}.tasks WHERE task_id = $1`,
        [taskId],
      );
      const record: unknown = typeof rows.rows[0]?.record === 'string' ? JSON.parse(rows.rows[0].record) : rows.rows[0]?.record;
      if (!record) throw new Error('the task row is missing');
    };
    for (let i = 0; i < options.gets + 20; i++) {
      const samples = [await timed(() => rpc(agent, a.url, get)), await timed(() => rpc(agent, b.url, get)), await timed(readRow)];
      if (i < 20) continue; // warm-up
      local.push(samples[0]!);
      remote.push(samples[1]!);
      rowRead.push(samples[2]!);
    }
    await rpc(agent, a.url, { method: 'tasks/cancel', params: { taskId } });

    // Throughput: the load on A alone vs split over A and B, alternating slices.
    const oneSlices: LoadResult[] = [];
    const twoSlices: LoadResult[] = [];
    let oneCpuMs = 0;
    let twoCpuMs = 0;
    const load = (server: ServerChild, concurrency: number) =>
      runLoad({
        url: server.url,
        concurrency,
        warmupMs: 500,
        durationMs: options.sliceMs,
        slices: 1,
        next: createCall,
        check: checkTask,
        keepSamples: true,
      });
    for (let round = 0; round < options.rounds; round++) {
      for (const mode of round % 2 === 0 ? ['one', 'two'] : ['two', 'one']) {
        const before = (await cpuMs(a)) + (await cpuMs(b));
        if (mode === 'one') oneSlices.push(await load(a, options.concurrency));
        else {
          const [onA, onB] = await Promise.all([load(a, options.concurrency / 2), load(b, options.concurrency / 2)]);
          twoSlices.push({
            ...onA,
            requests: onA.requests + onB.requests,
            throughputAll: onA.throughputAll + onB.throughputAll,
            samples: [...(onA.samples ?? []), ...(onB.samples ?? [])],
          });
        }
        const spent = (await cpuMs(a)) + (await cpuMs(b)) - before;
        if (mode === 'one') oneCpuMs += spent;
        else twoCpuMs += spent;
        await Promise.all([a.command('flush'), b.command('flush')]);
      }
    }
    const throughput = { one: mergeLoads(oneSlices), two: mergeLoads(twoSlices), oneCpuMs, twoCpuMs };
    options.log(
      `cluster creates c=${options.concurrency}: one instance ${Math.round(throughput.one.throughput)}/s, two ${Math.round(throughput.two.throughput)}/s`,
    );

    // Adoption after kill -9, last: each round kills the instance holding the task.
    const adoptionMs: number[] = [];
    const survivor = b;
    for (let round = 0; round < options.adoptions; round++) {
      const victim = round === 0 ? a : await start();
      if (round > 0) servers.push(victim);
      const created = (await rpc(agent, victim.url, { method: 'tools/call', params: { name: 'bench_wait', arguments: {} } })) as {
        taskId: string;
      };
      await victim.command('flush');
      const killed = performance.now();
      process.kill(victim.pid, 'SIGKILL');
      await waitForStatus(agent, survivor, created.taskId, 'failed', options.leaseMs * 4 + 10_000);
      adoptionMs.push(performance.now() - killed);
      options.log(`cluster adoption ${round + 1}: ${Math.round(adoptionMs.at(-1)!)} ms (lease ${options.leaseMs} ms)`);
    }

    return {
      leaseMs: options.leaseMs,
      notifyRtt: summarize(notifyRtts),
      listen: { local: listen[0]!, remote: listen[1]! },
      get: { local: summarize(local), remote: summarize(remote), rowRead: summarize(rowRead) },
      adoptionMs,
      throughput,
    };
  } finally {
    agent.destroy();
    feed.release();
    await pool.end();
    await Promise.all(servers.map((server) => server.stop().catch(() => undefined)));
  }
}

/** The table rows of one cluster run; `verdict` turns a goal check into the table's verdict. */
export function clusterRows(r: ClusterResult, verdict: (ok: boolean) => Verdict): BenchRow[] {
  const bench = '10. two instances, one PostgreSQL';
  const ratio = (value: number, baseline: number) => (baseline > 0 ? value / baseline : Number.NaN);
  const rows: BenchRow[] = [];
  const { local, remote } = r.listen;
  // What crossing instances adds to a change's delivery: B's frame − A's frame for the same poke.
  const addedP50 = remote.latency.p50 - local.latency.p50;
  const addedP99 = remote.latency.p99 - local.latency.p99;
  rows.push({
    bench,
    case: `change on A → listen stream on B, ${remote.pokes} pokes`,
    figure: 'added over a listen on A, p50',
    value: addedP50,
    unit: 'ms',
    baseline: 'PostgreSQL LISTEN/NOTIFY round trip, p50',
    baselineValue: r.notifyRtt.p50,
    baselineUnit: 'ms',
    ratio: ratio(addedP50, r.notifyRtt.p50),
    target: '≤ 2×',
    verdict: verdict(ratio(addedP50, r.notifyRtt.p50) <= 2),
    note: `on B p50 ${remote.latency.p50.toFixed(2)} / p99 ${remote.latency.p99.toFixed(2)} ms; on A p50 ${local.latency.p50.toFixed(2)} / p99 ${local.latency.p99.toFixed(2)} ms${remote.missed ? `; ${remote.missed} frames missing` : ''}`,
  });
  rows.push({
    bench,
    case: 'change on A → listen stream on B',
    figure: 'added over a listen on A, p99',
    value: addedP99,
    unit: 'ms',
    baseline: 'PostgreSQL LISTEN/NOTIFY round trip, p99',
    baselineValue: r.notifyRtt.p99,
    baselineUnit: 'ms',
    ratio: ratio(addedP99, r.notifyRtt.p99),
    target: '≤ 2×',
    verdict: verdict(ratio(addedP99, r.notifyRtt.p99) <= 2),
  });
  const floor = r.get.local.p50 + r.get.rowRead.p50;
  rows.push({
    bench,
    case: `tasks/get on B of a task live on A, ${r.get.remote.n} requests`,
    figure: 'p50',
    value: r.get.remote.p50,
    unit: 'ms',
    baseline: 'tasks/get on A + one row read (SELECT + parse)',
    baselineValue: floor,
    baselineUnit: 'ms',
    ratio: ratio(r.get.remote.p50, floor),
    target: '≤ 1.5×',
    verdict: verdict(ratio(r.get.remote.p50, floor) <= 1.5),
    note: `on A ${r.get.local.p50.toFixed(2)} ms, row read ${r.get.rowRead.p50.toFixed(2)} ms; p99 on B ${r.get.remote.p99.toFixed(2)} ms`,
  });
  const adoption = [...r.adoptionMs].sort((x, y) => x - y);
  const worst = adoption.at(-1) ?? Number.NaN;
  rows.push({
    bench,
    case: `kill -9 of the owner, ${adoption.length} rounds`,
    figure: 'kill → task ended by the adopter, worst',
    value: worst,
    unit: 'ms',
    baseline: 'lease',
    baselineValue: r.leaseMs,
    baselineUnit: 'ms',
    ratio: ratio(worst, r.leaseMs),
    target: '≤ lease + 1 s',
    verdict: verdict(worst <= r.leaseMs + 1_000),
    note: `each: ${adoption.map((ms) => Math.round(ms)).join(', ')} ms (a heartbeat every lease/3)`,
  });
  const { one, two, oneCpuMs, twoCpuMs } = r.throughput;
  rows.push({
    bench,
    case: `durable creates, c=${one.concurrency} on A vs c=${one.concurrency / 2} on each of A and B`,
    figure: 'two instances, throughput',
    value: two.throughput,
    unit: 'req/s',
    baseline: 'one instance',
    baselineValue: one.throughput,
    baselineUnit: 'req/s',
    ratio: ratio(two.throughput, one.throughput),
    note: `servers' CPU per create, warm-up included: ${((twoCpuMs / Math.max(1, two.requests)) * 1000).toFixed(0)} µs (two) vs ${((oneCpuMs / Math.max(1, one.requests)) * 1000).toFixed(0)} µs (one); the load generator, both servers and PostgreSQL share the machine's cores`,
  });
  return rows;
}
