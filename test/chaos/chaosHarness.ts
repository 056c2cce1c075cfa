/**
 * The crash checker: a real `taskvisor serve` child over a
 * real store, driven over HTTP by the ext-tasks client, killed with SIGKILL
 * at seeded random points while creates, input answers and polls are in
 * flight, restarted, and finally every acknowledged task id is checked:
 *
 * - lost: acknowledged, but unknown after the restarts (T-07, I-1);
 * - stuck: not finished once the last server had time to settle (input
 *   requests are answered, so waiting for input is no excuse);
 * - duplicated: run more often than documented — a `resume: fail` tool at
 *   most once, a `resume: replay` tool (and each workflow step) at most once
 *   plus once per kill it lived through (at-least-once);
 * - terminal changed: a status (with its result or error) seen terminal
 *   before a kill differs later (T-28, I-2);
 * - bad result: a completed task whose result is not the one its arguments
 *   determine.
 *
 * Used by `npm run chaos` (scripts/chaos.ts) and, bounded, by
 * test/chaos/chaos.system.test.ts.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { connect, envelope, type ConnectedClient } from '../support/extTasksClient.js';
import { freshSchema, TEST_PG_URL } from '../support/postgres.js';
import { CLI, freePort, rawRequest, spawnNode, tempDir, type Child, type RawOutcome } from '../support/processes.js';

export const CHAOS_TOOLS = fileURLToPath(new URL('../fixtures/tracked-tools.ts', import.meta.url));
export const CHAOS_STORES = ['lowdb', 'sqlite', 'postgres'] as const;
/** `memory` is not durable: the checker's negative control (every acknowledged task is lost at a kill). */
export type ChaosStore = (typeof CHAOS_STORES)[number] | 'memory';

export interface ChaosOptions {
  store: ChaosStore;
  /** Independent runs, each on a fresh store. */
  runs: number;
  /** kill -9 per run (the server is started kills + 1 times). */
  kills?: number;
  seed: number;
  /** Parallel creators while a server is up (default 3). */
  creators?: number;
  /** Longest time a server lives before its kill (default 2500 ms; the kill point is random below it). */
  maxLifeMs?: number;
  /** Progress lines. */
  log?: (line: string) => void;
}

export interface ChaosRow {
  store: ChaosStore;
  runs: number;
  kills: number;
  acked: number;
  lost: number;
  stuck: number;
  duplicated: number;
  terminalChanged: number;
  badResult: number;
  /** One line per finding (task id, what). */
  findings: string[];
}

type Kind = 'once' | 'replay' | 'ask' | 'flow';
const TOOL: Record<Kind, string> = { once: 'chaos_once', replay: 'chaos_replay', ask: 'chaos_ask', flow: 'workflow_chaos_flow' };
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const FLOW_STEPS = ['a', 'b'];

interface Acked {
  taskId: string;
  kind: Kind;
  tag: string;
  /** Round it was acknowledged in: it lived through the kills of this round and every later one. */
  round: number;
  /** First terminal state seen (status + result/error as JSON). */
  terminal?: string;
  status?: string;
  /** tasks/get answered an error after the last restart. */
  missing?: boolean;
}

/** mulberry32: a small seeded generator, so a failing run can be replayed with its seed. */
function seeded(seed: number): { next(): number; int(min: number, max: number): number; pick<T>(items: readonly T[]): T } {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => items[Math.floor(next() * items.length)]!,
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs the checker for one store; the row sums every run. */
export async function runChaos(options: ChaosOptions): Promise<ChaosRow> {
  const kills = options.kills ?? 3;
  const row: ChaosRow = {
    store: options.store,
    runs: options.runs,
    kills: 0,
    acked: 0,
    lost: 0,
    stuck: 0,
    duplicated: 0,
    terminalChanged: 0,
    badResult: 0,
    findings: [],
  };
  for (let run = 0; run < options.runs; run++) {
    const seed = (options.seed + run * 7919) >>> 0;
    options.log?.(`${options.store} run ${run + 1}/${options.runs} (seed ${seed})`);
    await oneRun(options, kills, seed, row);
  }
  return row;
}

async function oneRun(options: ChaosOptions, kills: number, seed: number, row: ChaosRow): Promise<void> {
  const rng = seeded(seed);
  const dir = await tempDir(`taskvisor-chaos-${options.store}-`);
  const schema = options.store === 'postgres' ? await freshSchema('tv_chaos') : undefined;
  const runLog = join(dir.path, 'runs.log');
  const config = join(dir.path, 'taskvisor.yaml');
  const leaseMs = 3_000;
  await mkdir(join(dir.path, 'workflows'));
  await writeFile(
    join(dir.path, 'workflows', 'chaos_flow.yaml'),
    stringify({
      taskBehavior: 'always',
      args: { tag: { type: 'string', required: true } },
      steps: FLOW_STEPS.map((id) => ({ id, tool: 'chaos_step', args: { tag: '{{ input.tag }}', step: id, ms: 150 } })),
    }),
  );
  const store =
    options.store === 'memory'
      ? { kind: 'memory' }
      : options.store === 'lowdb'
        ? { kind: 'lowdb', dir: './store' }
        : options.store === 'sqlite'
          ? { kind: 'sqlite', file: './tasks.sqlite' }
          : { kind: 'postgres', url: TEST_PG_URL, schema: schema!.schema, poolSize: 4, leaseMs };
  await writeFile(
    config,
    stringify({ store, tasks: { reapIntervalMs: 0 }, tools: [CHAOS_TOOLS], workflows: { dir: './workflows', watch: false } }),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  const acked: Acked[] = [];
  let child: Child | undefined;
  let client: ConnectedClient | undefined;
  const start = async () => {
    child = spawnNode([CLI, 'serve', '--config', config, '--http', `127.0.0.1:${port}`], {
      cwd: dir.path,
      env: { ...process.env, TASKVISOR_RUNLOG: runLog },
    });
    await child.waitForOutput(/serving MCP over Streamable HTTP/, { timeoutMs: 120_000 });
    client = await connect({ kind: 'http', url });
  };
  const send = async (method: string, params: Record<string, unknown>): Promise<RawOutcome | undefined> => {
    try {
      return await rawRequest(client!, { method, params: { ...params, _meta: envelope() } });
    } catch {
      return undefined; // the server died under the request: it acknowledged nothing
    }
  };
  try {
    for (let round = 0; round < kills; round++) {
      await start();
      const lifeMs = rng.int(200, options.maxLifeMs ?? 2_500);
      const ackedBefore = acked.length;
      let alive = true;
      // Creators: each create counts once its CreateTaskResult arrived (acknowledged), never before.
      const create = async () => {
        while (alive) {
          const kind = rng.pick<Kind>(['once', 'replay', 'ask', 'flow']);
          const tag = `t${seed.toString(36)}-${round}-${Math.floor(rng.next() * 1e9).toString(36)}`;
          const args: Record<string, unknown> = kind === 'flow' ? { tag } : { tag, ms: rng.int(0, 800) };
          const outcome = await send('tools/call', { name: TOOL[kind], arguments: args });
          const result = outcome?.kind === 'result' ? (outcome.result as { taskId?: unknown }) : undefined;
          // An answer that arrived is an acknowledgement, even if the kill came right after it.
          if (typeof result?.taskId === 'string') acked.push({ taskId: result.taskId, kind, tag, round });
        }
      };
      // A watcher: observes states (terminal ones are remembered) and answers some input requests.
      const watch = async () => {
        while (alive) {
          for (const task of [...acked]) {
            if (!alive) break;
            await observe(task, rng.next() < 0.5);
          }
          await sleep(20);
        }
      };
      const observe = async (task: Acked, answer: boolean) => {
        const outcome = await send('tasks/get', { taskId: task.taskId });
        if (outcome?.kind !== 'result') return;
        const seen = outcome.result as { status?: string; result?: unknown; error?: unknown };
        noteState(task, seen, row);
        if (seen.status === 'input_required' && answer) await send('tasks/update', answerFor(task));
      };
      const workers = [...Array.from({ length: options.creators ?? 3 }, create), watch()];
      // The random kill point counts from this round's first acknowledgement (a loaded machine may take seconds
      // to answer the first create): every round kills a server that has acknowledged work.
      const firstAckBy = Date.now() + 30_000;
      while (acked.length === ackedBefore && Date.now() < firstAckBy) await sleep(10);
      await sleep(lifeMs);
      // kill -9 with requests in flight.
      await child!.kill('SIGKILL');
      row.kills++;
      alive = false;
      await Promise.all(workers);
      await client!.close().catch(() => undefined);
      options.log?.(`  round ${round + 1}: killed after ${lifeMs} ms, ${acked.length} acknowledged so far`);
    }

    // The last start: let everything finish, answering whatever waits for input.
    await start();
    const settleBy = Date.now() + 90_000 + leaseMs;
    let pending = acked.filter((task) => !task.terminal);
    while (pending.length > 0 && Date.now() < settleBy) {
      for (const task of pending) {
        const outcome = await send('tasks/get', { taskId: task.taskId });
        // Unknown to the server that has been up all along: lost, nothing to wait for (counted below).
        if (outcome?.kind === 'error') task.missing = true;
        if (outcome?.kind !== 'result') continue;
        const seen = outcome.result as { status?: string };
        noteState(task, seen, row);
        if (seen.status === 'input_required') await send('tasks/update', answerFor(task));
      }
      pending = pending.filter((task) => !task.terminal && !task.missing);
      if (pending.length > 0) await sleep(100);
    }

    // Every acknowledged id, once more: lost, stuck, changed, wrong.
    const starts = await countStarts(runLog);
    for (const task of acked) {
      const outcome = await send('tasks/get', { taskId: task.taskId });
      if (outcome?.kind !== 'result') {
        row.lost++;
        row.findings.push(`${task.taskId} (${task.kind}) lost: ${JSON.stringify(outcome ?? 'no answer')}`);
        continue;
      }
      const seen = outcome.result as { status?: string; result?: unknown };
      noteState(task, seen, row);
      if (!task.terminal) {
        row.stuck++;
        row.findings.push(`${task.taskId} (${task.kind}) stuck in ${seen.status}`);
        continue;
      }
      if (seen.status === 'completed') {
        const wrong = badResult(task, seen.result);
        if (wrong) {
          row.badResult++;
          row.findings.push(`${task.taskId} (${task.kind}) ${wrong}`);
        }
      }
      // Kills this task lived through (it was acknowledged in `round`, whose kill came after).
      const lived = kills - task.round;
      const allowed = task.kind === 'once' ? 1 : 1 + lived;
      const runs =
        task.kind === 'flow' ? FLOW_STEPS.map((step) => starts.get(`${task.tag} step:${step}`) ?? 0) : [starts.get(`${task.tag} run`) ?? 0];
      if (runs.some((count) => count > allowed)) {
        row.duplicated++;
        row.findings.push(`${task.taskId} (${task.kind}) ran ${runs.join('/')} times, at most ${allowed} documented`);
      }
    }
    row.acked += acked.length;
    // What the last server said, when something is wrong (its stderr is the log).
    if (!chaosClean(row)) row.findings.push(`last server's log (tail):\n${child!.stderr.slice(-3_000)}`);
  } finally {
    await client?.close().catch(() => undefined);
    await child?.kill('SIGKILL');
    await schema?.drop();
    await dir.remove();
  }
}

/** Remembers the first terminal state; any later different one is a changed terminal status. */
function noteState(task: Acked, seen: { status?: string; statusMessage?: string; result?: unknown; error?: unknown }, row: ChaosRow): void {
  const status = String(seen.status);
  task.status = status;
  const state = TERMINAL.has(status)
    ? JSON.stringify({ status, statusMessage: seen.statusMessage ?? null, result: seen.result ?? null, error: seen.error ?? null })
    : undefined;
  if (task.terminal === undefined) {
    if (state !== undefined) task.terminal = state;
    return;
  }
  if (state !== task.terminal) {
    row.terminalChanged++;
    row.findings.push(`${task.taskId} (${task.kind}) terminal changed: ${task.terminal} -> ${state ?? status}`);
    task.terminal = state ?? task.terminal;
  }
}

function answerFor(task: Acked): Record<string, unknown> {
  return { taskId: task.taskId, inputResponses: { answer: { action: 'accept', content: { answer: `a-${task.tag}` } } } };
}

/** What is wrong with a completed task's result, or undefined. */
function badResult(task: Acked, result: unknown): string | undefined {
  if (task.kind === 'flow') return undefined;
  const text = (result as { content?: Array<{ text?: unknown }> } | undefined)?.content?.[0]?.text;
  const expected =
    task.kind === 'once' ? `once ${task.tag}` : task.kind === 'replay' ? `replay ${task.tag}` : `ask ${task.tag} a-${task.tag}`;
  return text === expected ? undefined : `result ${JSON.stringify(text)}, expected ${JSON.stringify(expected)}`;
}

async function countStarts(runLog: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const line of (await readFile(runLog, 'utf8').catch(() => '')).split('\n')) {
    if (line) counts.set(line, (counts.get(line) ?? 0) + 1);
  }
  return counts;
}

/** The table `npm run chaos` prints: one line per store. */
export function chaosTable(rows: readonly ChaosRow[]): string {
  const header = ['store', 'runs', 'kills', 'acked', 'lost', 'stuck', 'duplicated', 'terminal changed', 'bad result'];
  const lines = rows.map((r) =>
    [r.store, r.runs, r.kills, r.acked, r.lost, r.stuck, r.duplicated, r.terminalChanged, r.badResult].map(String),
  );
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((line) => line[i]!.length)));
  const format = (cells: string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
  return [format(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(format)].join('\n');
}

/** Whether a row found nothing wrong. */
export const chaosClean = (row: ChaosRow) => row.lost + row.stuck + row.duplicated + row.terminalChanged + row.badResult === 0;
