/**
 * The passivation cell's HTTP half ("a get/update on a
 * passivated task within 2× of a live one"): two taskvisor servers on the
 * SQLite store, alike but for `passivateIdleAfterMs` — 0 (every task that
 * waits for input leaves memory as soon as it is stored) and `false` (never)
 * — each holding `pool` `bench_ask` tasks waiting for input. `tasks/get` and
 * then `tasks/update` go to both in interleaved slices (bench/loadgen.ts), so
 * the ratio compares figures taken side by side.
 *
 * Each update answers the task's outstanding question (`q<k>`), so it is
 * accepted: on the passivated server it reads the stored record, takes it
 * through the machine, rehydrates the task (its handler runs again with its
 * answers replayed) and the task asks `q<k+1>` and leaves memory again; on the
 * live server the actor takes it. Tasks are visited round-robin, so a task is
 * asked again only after the whole pool (seconds later: passivated again by
 * then). At the end every task's outstanding key is read back and compared
 * with the answers sent: an update the server ignored (a wrong key, T-22 — the
 * cheap path) would show as a mismatch.
 */
import http from 'node:http';
import { startServer, type ServerChild } from './child.js';
import { rpc, runInterleaved, type LoadResult } from './loadgen.js';
import { TASKS_CAPABILITIES, type Json, type RpcCall } from './protocol.js';
import { sqliteConfig } from './seed.js';
import type { ServerConfig } from './server.js';

export interface PassivationHttpOptions {
  dataDir: string;
  pool: number;
  concurrency: number;
  sliceMs: number;
  warmupMs: number;
  rounds: number;
  log: (message: string) => void;
}

export interface PassivationHttpResult {
  pool: number;
  concurrency: number;
  get: { passivated: LoadResult; live: LoadResult };
  update: { passivated: LoadResult; live: LoadResult };
  /** Server stats (tasks live / passivated) after the pools were made and after the updates. */
  stats: Record<'passivated' | 'live', { ready: Json; end: Json }>;
  /** Updates sent per side, and tasks whose outstanding key was not the one the answers sent lead to. */
  updates: Record<'passivated' | 'live', { sent: number; mismatched: number }>;
}

/** A client that answers form elicitations (`bench_ask` asks one after every answer). */
const CAPABILITIES: Json = { elicitation: { form: {} }, ...TASKS_CAPABILITIES };

interface Side {
  key: 'passivated' | 'live';
  server: ServerChild;
  ids: string[];
  /** Answers sent per task (the next question is `q<answered>`). */
  answered: number[];
  next: number;
}

export async function runPassivationHttp(options: PassivationHttpOptions): Promise<PassivationHttpResult> {
  const sides: Side[] = [];
  try {
    for (const [key, passivateIdleAfterMs] of [
      ['passivated', 0],
      ['live', false],
    ] as const) {
      const server = await startServer({
        mode: 'taskvisor',
        store: sqliteConfig(`${options.dataDir}/passivation-${key}.sqlite`),
        passivateIdleAfterMs,
      });
      sides.push({ key, server, ids: [], answered: [], next: 0 });
    }
    for (const side of sides) {
      side.ids = await createWaiting(side.server.url, options.pool);
      side.answered = side.ids.map(() => 0);
    }
    const ready = await Promise.all(sides.map((side) => waitSettled(side, options.pool)));
    options.log(
      `passivation http: ${options.pool} waiting tasks each; ${ready.map((s, i) => `${sides[i]!.key} ${JSON.stringify(s)}`).join(', ')}`,
    );

    const run = (call: (side: Side) => RpcCall) =>
      runInterleaved(
        sides.map((side) => ({ key: side.key, url: side.server.url, next: () => call(side) })),
        { concurrency: options.concurrency, sliceMs: options.sliceMs, warmupMs: options.warmupMs, rounds: options.rounds },
      );
    const gets = await run((side) => ({ method: 'tasks/get', params: { taskId: side.ids[side.next++ % side.ids.length]! } }));
    options.log(`passivation http get: passivated p50 ${gets.passivated!.latency.p50} ms, live p50 ${gets.live!.latency.p50} ms`);
    // The get slices moved each side's cursor: updates start where they are, every task's count kept by index.
    const updates = await run((side) => {
      const index = side.next++ % side.ids.length;
      const question = side.answered[index]!;
      side.answered[index] = question + 1;
      return {
        method: 'tasks/update',
        params: { taskId: side.ids[index]!, inputResponses: { [`q${question}`]: { action: 'accept', content: { v: 'x' } } } },
      };
    });
    options.log(`passivation http update: passivated p50 ${updates.passivated!.latency.p50} ms, live p50 ${updates.live!.latency.p50} ms`);
    const end = await Promise.all(sides.map((side) => waitSettled(side, options.pool)));
    const mismatched = await Promise.all(sides.map((side) => countMismatched(side)));
    return {
      pool: options.pool,
      concurrency: options.concurrency,
      get: { passivated: gets.passivated!, live: gets.live! },
      update: { passivated: updates.passivated!, live: updates.live! },
      stats: { passivated: { ready: ready[0]!, end: end[0]! }, live: { ready: ready[1]!, end: end[1]! } },
      updates: {
        passivated: { sent: sum(sides[0]!.answered), mismatched: mismatched[0]! },
        live: { sent: sum(sides[1]!.answered), mismatched: mismatched[1]! },
      },
    };
  } finally {
    await Promise.all(sides.map((side) => side.server.stop()));
  }
}

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

/** Creates `count` `bench_ask` tasks, a few requests in flight; returns their ids. */
async function createWaiting(url: string, count: number): Promise<string[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const ids: string[] = [];
  try {
    for (let i = 0; i < count; i += 8) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(8, count - i) }, () =>
          rpc(agent, url, { method: 'tools/call', params: { name: 'bench_ask', arguments: {} }, capabilities: CAPABILITIES }),
        ),
      );
      for (const result of batch) {
        if (result.resultType !== 'task' || typeof result.taskId !== 'string')
          throw new Error(`bench_ask made no task: ${JSON.stringify(result)}`);
        ids.push(result.taskId);
      }
    }
  } finally {
    agent.destroy();
  }
  return ids;
}

/** Waits until every task of the side waits for input as its server keeps it (passivated, or live); returns the server's stats. */
async function waitSettled(side: Side, pool: number): Promise<Json> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    await side.server.command('flush');
    const stats = await side.server.command('stats');
    const settled = side.key === 'passivated' ? stats.passivatedTasks === pool && stats.liveTasks === 0 : stats.liveTasks === pool;
    if (settled) return stats;
    if (Date.now() > deadline) throw new Error(`the ${side.key} server never settled: ${JSON.stringify(stats)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Tasks whose outstanding question is not `q<answers sent>` (an update ignored or lost), read back over HTTP. */
async function countMismatched(side: Side): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  let mismatched = 0;
  try {
    for (let i = 0; i < side.ids.length; i += 8) {
      const records = await Promise.all(
        side.ids.slice(i, i + 8).map((taskId) => rpc(agent, side.server.url, { method: 'tasks/get', params: { taskId } })),
      );
      records.forEach((record, offset) => {
        const keys = Object.keys((record.inputRequests as Json | undefined) ?? {});
        if (record.status !== 'input_required' || keys.join() !== `q${side.answered[i + offset]}`) mismatched++;
      });
    }
  } finally {
    agent.destroy();
  }
  return mismatched;
}
