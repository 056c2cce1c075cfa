/**
 * Attack scenario: replies a client asks for and never reads. Many sockets
 * each pipeline `tools/call echo` requests with a big text and never read a
 * byte of the answers, while a bystander (another client that reads) keeps
 * calling `echo`. A server that keeps every unread answer grows its memory by
 * sockets × pipelined × text size; one with outbound budgets stops reading
 * those sockets and closes them, and the bystander barely notices.
 *
 * Targets a server on 127.0.0.1 only (`taskvisor serve --demo`, or any
 * server with the demo's `echo` tool). Every loop is bounded in count and in
 * time. Run by hand:
 *
 *   node --import tsx scripts/attack/outboundReplies.ts --url http://127.0.0.1:3000/mcp [--pid PID] [--read]
 */
import { readFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

export interface OutboundRepliesOptions {
  /** The MCP endpoint, e.g. `http://127.0.0.1:3000/mcp`; its host must be 127.0.0.1. */
  baseUrl: string;
  /** The server's process id: its peak RSS growth is measured (Linux `/proc`). */
  pid?: number;
  /** Attacking sockets. Default 30. */
  sockets?: number;
  /** Requests each socket pipelines. Default 10. */
  pipelined?: number;
  /** Size of each echoed text, bytes. Default 3 MB. */
  textBytes?: number;
  /**
   * Longest the attack is held, ms: it ends earlier once the server has closed
   * every attacking socket. Default 40 s (the default grace period is 10 s).
   */
  durationMs?: number;
  /** Bystander calls measured while the server is idle, before the attack. Default 20. */
  idleCalls?: number;
  /** Longest a bystander call may take before the server counts as not serving, ms. Default 10 s. */
  callTimeoutMs?: number;
  /**
   * The control run: the same sockets read (and drop) their answers. What the
   * server's memory grows by then is the cost of the requests themselves,
   * not of the unread replies. Default false.
   */
  readReplies?: boolean;
  /** Extra headers of the attacking requests (e.g. the attacker's `authorization`). */
  headers?: Record<string, string>;
  /** Extra headers of the bystander's requests (e.g. another principal's `authorization`). */
  bystanderHeaders?: Record<string, string>;
}

export interface OutboundRepliesOutcome {
  /** Peak RSS during the attack minus RSS before it, bytes (with `pid` only). */
  peakRssDeltaBytes: number | undefined;
  /** The bystander's echo latency with the server idle, ms. */
  idleP50Ms: number;
  /** The bystander's echo latency during the attack, ms. */
  bystanderP50Ms: number;
  bystanderWorstMs: number;
  bystanderCalls: number;
  /** True when every bystander call was answered (200, its text echoed) within `callTimeoutMs`. */
  servedThroughout: boolean;
  /** Attacking sockets the server had closed when the attack was let go. */
  attackersClosed: number;
  /** How long the attack was held, ms. */
  heldMs: number;
  attackers: number;
}

/** Upper bound on bystander calls during the attack, whatever the duration. */
const MAX_BYSTANDER_CALLS = 1_000;
const RSS_SAMPLE_MS = 50;
const WARM_UP_CALLS = 20;

export async function outboundReplies(options: OutboundRepliesOptions): Promise<OutboundRepliesOutcome> {
  const url = new URL(options.baseUrl);
  if (url.hostname !== '127.0.0.1') throw new Error(`outboundReplies: only attacks 127.0.0.1, not ${url.hostname}`);
  const sockets = options.sockets ?? 30;
  const pipelined = options.pipelined ?? 10;
  const textBytes = options.textBytes ?? 3_000_000;
  const durationMs = options.durationMs ?? 40_000;
  const callTimeoutMs = options.callTimeoutMs ?? 10_000;

  let served = true;
  const bystander = async (): Promise<number> => {
    const started = performance.now();
    const ok = await echo(url, 'bystander', callTimeoutMs, options.bystanderHeaders);
    if (!ok) served = false;
    return performance.now() - started;
  };
  // Warm-up first: the idle figure is a warm server's, as the attack's is.
  for (let i = 0; i < WARM_UP_CALLS; i++) await bystander();
  const idle: number[] = [];
  for (let i = 0; i < (options.idleCalls ?? 20); i++) idle.push(await bystander());
  served = true;

  const rssBefore = options.pid === undefined ? undefined : await rssOf(options.pid);
  let rssPeak = rssBefore ?? 0;
  const sampler =
    options.pid === undefined
      ? undefined
      : setInterval(
          () =>
            void rssOf(options.pid!).then(
              (rss) => (rssPeak = Math.max(rssPeak, rss)),
              () => {},
            ),
          RSS_SAMPLE_MS,
        );

  const request = pipelinedEchoes(url, pipelined, textBytes, options.headers);
  const attackers = await Promise.all(Array.from({ length: sockets }, () => attack(url, request, options.readReplies === true)));
  const latencies: number[] = [];
  const until = performance.now() + durationMs;
  try {
    while (performance.now() < until && latencies.length < MAX_BYSTANDER_CALLS && !attackers.every((attacker) => attacker.closed()))
      latencies.push(await bystander());
  } finally {
    clearInterval(sampler);
  }
  const attackersClosed = attackers.filter((attacker) => attacker.closed()).length;
  const heldMs = durationMs - (until - performance.now());
  for (const attacker of attackers) attacker.socket.destroy();
  return {
    peakRssDeltaBytes: rssBefore === undefined ? undefined : rssPeak - rssBefore,
    idleP50Ms: percentile(idle, 0.5),
    bystanderP50Ms: percentile(latencies, 0.5),
    bystanderWorstMs: Math.max(0, ...latencies),
    bystanderCalls: latencies.length,
    servedThroughout: served,
    attackersClosed,
    attackers: sockets,
    heldMs: Math.round(heldMs),
  };
}

/** One `tools/call echo` over fetch; true when answered 200 with the text echoed. */
async function echo(url: URL, text: string, timeoutMs: number, extra: Record<string, string> = {}): Promise<boolean> {
  const params = { name: 'echo', arguments: { text }, _meta: envelope() };
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { ...headers('tools/call', 'echo'), ...extra },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return response.status === 200 && (await response.text()).includes(text);
  } catch {
    return false;
  }
}

/** `pipelined` echo requests of `textBytes` each, as the bytes one socket sends. */
function pipelinedEchoes(url: URL, pipelined: number, textBytes: number, extra: Record<string, string> = {}): Buffer {
  const text = 'x'.repeat(textBytes);
  const one = (id: number) => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text }, _meta: envelope() },
    });
    const head = Object.entries({ ...headers('tools/call', 'echo'), ...extra, 'content-length': String(Buffer.byteLength(body)) })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    return Buffer.from(`POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\n${head}\r\n${body}`);
  };
  return Buffer.concat(Array.from({ length: pipelined }, (_, i) => one(i + 1)));
}

/** A socket that sends `bytes` and never reads; `closed()` says whether the server has closed it. */
async function attack(url: URL, bytes: Buffer, read: boolean): Promise<{ socket: Socket; closed: () => boolean }> {
  const socket = connect({ host: '127.0.0.1', port: Number(url.port) });
  let closed = false;
  socket.on('error', () => {});
  socket.once('close', () => (closed = true));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  if (read) socket.resume();
  else socket.pause();
  socket.write(bytes);
  // The server closing a socket it stopped reading resets it: the unsent part of `bytes` then fails to
  // write and 'close' fires although nothing is read. An unread socket the server keeps shows nothing.
  return { socket, closed: () => closed || socket.destroyed };
}

function headers(method: string, name: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL_VERSION,
    'mcp-method': method,
    'mcp-name': name,
  };
}

const PROTOCOL_VERSION = '2026-07-28';

function envelope(): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
    'io.modelcontextprotocol/clientInfo': { name: 'taskvisor-attack', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  if (!kb) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb[1]) * 1024;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { url: { type: 'string' }, pid: { type: 'string' }, read: { type: 'boolean' } } });
  const outcome = await outboundReplies({
    baseUrl: values.url ?? 'http://127.0.0.1:3000/mcp',
    readReplies: values.read === true,
    ...(values.pid ? { pid: Number(values.pid) } : {}),
  });
  process.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
}
