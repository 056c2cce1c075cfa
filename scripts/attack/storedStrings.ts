/**
 * Attack: strings a client makes a tool store, read back by the operator.
 *
 * As one ordinary principal, makes `tasks` tasks whose tool keeps a huge
 * string (by default the demo's `fail` tool, whose message becomes the failed
 * task's `error.message` and `statusMessage`), waits for them to end, then
 * reads the operator's task list (`GET /ops/api/tasks`) once and reports
 * whether it answered 200, how many bytes and how long it took, and, given
 * the server's pid, how far its RSS rose.
 *
 * Bounded: at most {@link MAX_TASKS} tasks of at most {@link MAX_MESSAGE_BYTES}
 * each, everything within `deadlineMs`; it only ever targets 127.0.0.1.
 *
 * @example
 * ```ts
 * const report = await storedStringsAttack({ url: 'http://127.0.0.1:3000/mcp' });
 * // { listStatus: 200, listBytes: 9120, ... } on a server that bounds what it stores
 * ```
 */
import { readFile } from 'node:fs/promises';
import { post, request, type Json } from '../../test/support/rawWire.js';

/** Most tasks one run makes. */
export const MAX_TASKS = 500;
/** Largest string one task is given, bytes. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export interface StoredStringsAttackOptions {
  /** The MCP endpoint, on 127.0.0.1 (e.g. `http://127.0.0.1:3000/mcp`). */
  url: string;
  /** Origin of the operator API; default the origin of `url`. Also 127.0.0.1 only. */
  operationsBase?: string;
  /** Headers of the attacking principal's requests (its credentials, if any). */
  headers?: Record<string, string>;
  /** Headers of the operator's request (its credentials, if any). */
  operatorHeaders?: Record<string, string>;
  /** Tasks to make. Default 72, at most {@link MAX_TASKS}. */
  tasks?: number;
  /** Length of each huge string. Default 4,000,000 (under the default 4 MiB body limit), at most {@link MAX_MESSAGE_BYTES}. */
  messageBytes?: number;
  /** The tool called; it must keep `arguments.message`. Default `fail` (the demo tool). */
  tool?: string;
  /** Arguments besides `message`. Default `{ ms: 300 }`: the demo's `fail` waits, so the call becomes a task first. */
  extraArguments?: Json;
  /** `limit` of the operator's list request. Default 50. */
  listLimit?: number;
  /** The server's pid: its peak RSS rise is reported (Linux, /proc). */
  pid?: number;
  /** The whole run gives up after this long, ms. Default 120,000. */
  deadlineMs?: number;
}

export interface StoredStringsAttackReport {
  /** Tasks the server accepted. */
  created: number;
  /** Calls refused (a limit, a 413...): their status or error code. */
  refused: string[];
  /** Status of `GET /ops/api/tasks` (0: no answer before the deadline). */
  listStatus: number;
  listOk: boolean;
  /** Bytes of its body. */
  listBytes: number;
  /** Time to its last byte, ms. */
  listMs: number;
  /** The reference id of a 500, when the answer named one. */
  listRef?: string;
  /** Peak RSS minus RSS at the start, bytes (with `pid`). */
  peakRssDeltaBytes?: number;
}

/** Runs the attack once; see the module comment. */
export async function storedStringsAttack(options: StoredStringsAttackOptions): Promise<StoredStringsAttackReport> {
  const url = loopbackOnly(options.url);
  const base = loopbackOnly(options.operationsBase ?? url.origin);
  const tasks = Math.min(Math.max(1, Math.floor(options.tasks ?? 72)), MAX_TASKS);
  const messageBytes = Math.min(Math.max(1, Math.floor(options.messageBytes ?? 4_000_000)), MAX_MESSAGE_BYTES);
  const deadline = Date.now() + (options.deadlineMs ?? 120_000);
  const rss = options.pid === undefined ? undefined : await RssSampler.start(options.pid);
  try {
    const message = 'x'.repeat(messageBytes);
    const taskIds: string[] = [];
    const refused: string[] = [];
    for (let i = 0; i < tasks && Date.now() < deadline; i++) {
      const call = request('tools/call', { name: options.tool ?? 'fail', arguments: { ms: 300, ...options.extraArguments, message } });
      const reply = await post(url.href, call, options.headers ?? {});
      const result = reply.message?.result as Json | undefined;
      if (result?.resultType === 'task' && typeof result.taskId === 'string') taskIds.push(result.taskId);
      else refused.push(String((reply.message?.error as Json | undefined)?.code ?? reply.status));
    }
    // Wait for every task to end, so the strings are stored (bounded by the deadline).
    for (const taskId of taskIds) {
      while (Date.now() < deadline) {
        const reply = await post(url.href, request('tasks/get', { taskId }), options.headers ?? {});
        const status = (reply.message?.result as Json | undefined)?.status;
        if (status !== 'working' && status !== 'input_required') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    const list = await readList(new URL(`/ops/api/tasks?limit=${options.listLimit ?? 50}`, base), options.operatorHeaders ?? {}, deadline);
    return {
      created: taskIds.length,
      refused,
      ...list,
      ...(rss ? { peakRssDeltaBytes: rss.peakDelta() } : {}),
    };
  } finally {
    rss?.stop();
  }
}

/** The list request: status, bytes and time, counted as they arrive (the body is never held whole). */
async function readList(
  url: URL,
  headers: Record<string, string>,
  deadline: number,
): Promise<Pick<StoredStringsAttackReport, 'listStatus' | 'listOk' | 'listBytes' | 'listMs' | 'listRef'>> {
  const startedAt = performance.now();
  const signal = AbortSignal.timeout(Math.max(1, deadline - Date.now()));
  try {
    const response = await fetch(url, { headers, signal });
    let bytes = 0;
    let head = '';
    for await (const chunk of response.body ?? []) {
      const piece = chunk as Uint8Array;
      bytes += piece.byteLength;
      if (head.length < 4096) head += Buffer.from(piece).toString('utf8', 0, 4096);
    }
    const ref = /"ref":"([0-9a-f]+)"/.exec(head)?.[1];
    return {
      listStatus: response.status,
      listOk: response.status === 200,
      listBytes: bytes,
      listMs: Math.round(performance.now() - startedAt),
      ...(ref ? { listRef: ref } : {}),
    };
  } catch {
    return { listStatus: 0, listOk: false, listBytes: 0, listMs: Math.round(performance.now() - startedAt) };
  }
}

/** `text` as a URL whose host is 127.0.0.1; anything else is refused. */
function loopbackOnly(text: string): URL {
  const url = new URL(text);
  if (url.hostname !== '127.0.0.1') throw new RangeError(`storedStringsAttack targets 127.0.0.1 only, not ${url.hostname}`);
  return url;
}

/** Samples a process's resident set (VmRSS) every 50 ms; keeps the peak. */
class RssSampler {
  #peak: number;
  readonly #timer: NodeJS.Timeout;

  private constructor(
    private readonly pid: number,
    private readonly initial: number,
  ) {
    this.#peak = initial;
    this.#timer = setInterval(() => void this.#sample(), 50);
    this.#timer.unref();
  }

  static async start(pid: number): Promise<RssSampler> {
    return new RssSampler(pid, await rssOf(pid));
  }

  peakDelta(): number {
    return this.#peak - this.initial;
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  async #sample(): Promise<void> {
    try {
      this.#peak = Math.max(this.#peak, await rssOf(this.pid));
    } catch {
      // The process ended: the peak so far stands.
    }
  }
}

async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kib) * 1024;
}
