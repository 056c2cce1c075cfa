/**
 * The red-team harness behind `npm run attack`: a real `taskvisor serve`
 * child (HTTP, WebSocket, the operator surfaces, a token file with an
 * attacker, a bystander and an operator), a bystander that keeps calling
 * while an attack runs, and the figures every scenario reports: peak RSS of
 * the server, the bystander's latency against its idle latency in the same
 * run, and whether the server served throughout (every bystander call and
 * every `/healthz` answered, the process alive at the end).
 *
 * Every request goes to 127.0.0.1 only, and every loop is bounded in count
 * and in time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request as httpRequest } from 'node:http';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(REPO_ROOT, 'bin', 'taskvisor.js');
const DEMO_TOOLS = join(REPO_ROOT, 'examples', 'demo', 'tools.ts');
const TSX_IMPORT = import.meta.resolve('tsx');

export const PROTOCOL_VERSION = '2026-07-28';
export const TASKS_CAPABILITIES = { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/tasks': {} } };

/** The principals of the token file every attack server is started with. */
export const TOKENS = {
  attacker: 'attacker-token-0123456789abcdef',
  attacker2: 'attacker2-token-0123456789abcdef',
  bystander: 'bystander-token-0123456789abcdef',
  operator: 'operator-token-0123456789abcdef',
} as const;

/** A running attack target. */
export interface AttackTarget {
  /** `http://127.0.0.1:PORT` */
  readonly base: string;
  /** `http://127.0.0.1:PORT/mcp` */
  readonly url: string;
  readonly port: number;
  /** The WebSocket endpoint, `ws://127.0.0.1:PORT/mcp`. */
  readonly wsUrl: string;
  readonly wsPort: number;
  /** The server process id (its RSS is read from /proc). */
  readonly pid: number;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** True while the server process runs. */
  alive(): boolean;
}

/** One scenario of the suite. */
export interface AttackScenario {
  /** Short id, used by `--only`. */
  readonly name: string;
  /** The resource a client tries to hold (a row of docs/security.md's table). */
  readonly resource: string;
  /** The limit that bounds it: config key and default. */
  readonly limit: string;
  /** Part of the quick subset `npm test` runs. */
  readonly quick?: boolean;
  /** Extra `limits:` keys for this scenario's server at this scale (e.g. smaller budgets so the quick run stays small). */
  limits?(scale: number): Readonly<Record<string, number>>;
  /** Runs the attack; `scale` is 1 for the full run and smaller for the quick one. Resolves when the attack is over. */
  run(target: AttackTarget, scale: number): Promise<string | void>;
}

/** What one scenario measured. */
export interface AttackResult {
  name: string;
  resource: string;
  limit: string;
  /** RSS of the server before the attack and its peak during it, in bytes. */
  rssBefore: number;
  rssPeak: number;
  /** The bystander's echo latency, idle and under attack, in ms. */
  idleP50: number;
  p50: number;
  worst: number;
  calls: number;
  failedCalls: number;
  healthFailures: number;
  /** The process was alive and every bystander call and health probe succeeded. */
  servedThroughout: boolean;
  /** What the scenario itself reported (e.g. "closed 30 of 30 sockets"). */
  note: string;
  error?: string;
}

/**
 * `count` distinct TCP ports that were free a moment ago on 127.0.0.1: held open together while they
 * are picked, so the system cannot hand the same port out twice.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Server>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as { port: number }).port);
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  return ports;
}

export const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The `_meta` envelope of a 2026-07-28 request that declared the Tasks extension. */
export function envelope(): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
    'io.modelcontextprotocol/clientInfo': { name: 'taskvisor-attack', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': TASKS_CAPABILITIES,
  };
}

/** The headers of a 2026-07-28 POST (SEP-2243). */
export function requestHeaders(method: string, params: Record<string, unknown>, token: string): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL_VERSION,
    'mcp-method': method,
    authorization: `Bearer ${token}`,
  };
  const name = method === 'tools/call' ? params.name : method.startsWith('tasks/') ? params.taskId : undefined;
  if (typeof name === 'string') headers['mcp-name'] = name;
  return headers;
}

let requestCounter = 0;

/** A whole HTTP/1.1 request as bytes, for raw sockets that pipeline and never read. */
export function rawRequest(port: number, method: string, params: Record<string, unknown>, token: string, path = '/mcp'): Buffer {
  const full = { ...params, _meta: envelope() };
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: `attack:${++requestCounter}`, method, params: full }));
  const headers = { ...requestHeaders(method, full, token), host: `127.0.0.1:${port}`, 'content-length': String(body.length) };
  const head = `POST ${path} HTTP/1.1\r\n${Object.entries(headers)
    .map(([key, value]) => `${key}: ${value}`)
    .join('\r\n')}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/**
 * One HTTP exchange on a connection of its own (no keep-alive pool, so a
 * server closing an idle pooled connection cannot fail the next call).
 */
export function exchange(
  url: string,
  {
    method = 'GET',
    headers = {},
    body,
    timeoutMs = 30_000,
  }: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers, agent: false, timeout: timeoutMs }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString('utf8') }),
      );
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}

/** One JSON-RPC POST; resolves with the HTTP status and the parsed message (JSON body or first SSE data event). */
export async function call(
  target: AttackTarget,
  method: string,
  params: Record<string, unknown>,
  token: string = TOKENS.bystander,
  { timeoutMs = 30_000 }: { timeoutMs?: number } = {},
): Promise<{ status: number; message: { result?: Record<string, unknown>; error?: { code: number; message: string } } | undefined }> {
  const full = { ...params, _meta: params._meta ?? envelope() };
  const response = await exchange(target.url, {
    method: 'POST',
    headers: requestHeaders(method, full, token),
    body: JSON.stringify({ jsonrpc: '2.0', id: `attack:${++requestCounter}`, method, params: full }),
    timeoutMs,
  });
  let message;
  if (response.text) {
    const data = String(response.headers['content-type'] ?? '').includes('text/event-stream')
      ? (/^data:\s?(.*)$/m.exec(response.text)?.[1] ?? '')
      : response.text;
    try {
      message = JSON.parse(data) as { result?: Record<string, unknown>; error?: { code: number; message: string } };
    } catch {
      message = undefined;
    }
  }
  return { status: response.status, message };
}

/** The server's resident set size in bytes (from /proc; 0 when the process is gone). */
export async function rssOf(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kib = /^VmRSS:\s+(\d+) kB/m.exec(status);
    return kib ? Number(kib[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Starts a `taskvisor serve` child for one scenario; `stop()` ends it and removes its files. */
export async function startTarget(limits: Readonly<Record<string, number>> = {}): Promise<AttackTarget & { stop(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'taskvisor-attack-'));
  const tokenFile = join(dir, 'tokens.yaml');
  await writeFile(
    tokenFile,
    `tokens:\n${Object.entries(TOKENS)
      .map(
        ([principal, token]) =>
          `  - principal: ${principal}\n    token: ${token}${principal === 'operator' ? '\n    scopes: [taskvisor:operator]' : ''}`,
      )
      .join('\n')}\n`,
  );
  await chmod(tokenFile, 0o600);
  const [port, wsPort] = (await freePorts(2)) as [number, number];
  const limitLines = Object.entries(limits).map(([key, value]) => `  ${key}: ${value}`);
  await writeFile(
    join(dir, 'taskvisor.yaml'),
    [
      'server: { name: attack-target, version: 0.0.0 }',
      `http: { host: 127.0.0.1, port: ${port}, path: /mcp }`,
      'store: { kind: lowdb, dir: ./store }',
      'tasks: { promoteAfterMs: 200 }',
      `tools: [${JSON.stringify(DEMO_TOOLS)}]`,
      'auth: { kind: token-file, file: ./tokens.yaml }',
      'operations: { metrics: true, ui: true }',
      ...(limitLines.length > 0 ? ['limits:', ...limitLines] : []),
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      TSX_IMPORT,
      CLI,
      'serve',
      '--config',
      join(dir, 'taskvisor.yaml'),
      '--http',
      `127.0.0.1:${port}`,
      '--ws',
      `127.0.0.1:${wsPort}`,
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  let exited = false;
  child.stderr?.on('data', (chunk: Buffer) => {
    if (stderr.length < 1 << 20) stderr += chunk.toString('utf8');
  });
  child.stdout?.resume();
  const exit = new Promise<void>((resolve) => child.once('exit', () => ((exited = true), resolve())));
  const base = `http://127.0.0.1:${port}`;
  const target: AttackTarget & { stop(): Promise<void> } = {
    base,
    url: `${base}/mcp`,
    port,
    wsPort,
    wsUrl: `ws://127.0.0.1:${wsPort}/mcp`,
    pid: child.pid ?? 0,
    stderr: () => stderr,
    alive: () => !exited,
    async stop() {
      if (!exited) child.kill('SIGTERM');
      await Promise.race([exit, delay(10_000)]);
      if (!exited) child.kill('SIGKILL');
      await exit;
      await rm(dir, { recursive: true, force: true });
    },
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`the attack target did not start:\n${stderr}`);
    try {
      if ((await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2_000) })).ok && (await accepts(wsPort))) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await target.stop();
      throw new Error(`the attack target did not answer /healthz within 60 s:\n${stderr}`);
    }
    await delay(100);
  }
  return target;
}

/** True when something accepts TCP connections on 127.0.0.1:`port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/** The p-th percentile (0..1) of `values` (which it sorts). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  values.sort((a, b) => a - b);
  return values[Math.min(values.length - 1, Math.floor(p * values.length))]!;
}

/**
 * A bystander: an `echo` call every `intervalMs` (one at a time), a
 * `/healthz` probe beside it, and an RSS sample of the server; until `stop()`.
 */
export function startBystander(target: AttackTarget, { intervalMs = 50 } = {}) {
  const latencies: number[] = [];
  let failedCalls = 0;
  let healthFailures = 0;
  let rssPeak = 0;
  let running = true;
  const echoes = (async () => {
    while (running) {
      const started = performance.now();
      try {
        const { status, message } = await call(target, 'tools/call', { name: 'echo', arguments: { text: 'bystander' } }, TOKENS.bystander);
        if (status !== 200 || !message?.result) failedCalls += 1;
      } catch {
        failedCalls += 1;
      }
      latencies.push(performance.now() - started);
      await delay(intervalMs);
    }
  })();
  const health = (async () => {
    while (running) {
      try {
        if ((await exchange(`${target.base}/healthz`, { timeoutMs: 10_000 })).status !== 200) healthFailures += 1;
      } catch {
        healthFailures += 1;
      }
      await delay(250);
    }
  })();
  const rss = (async () => {
    while (running) {
      rssPeak = Math.max(rssPeak, await rssOf(target.pid));
      await delay(25);
    }
  })();
  return {
    async stop() {
      running = false;
      await Promise.all([echoes, health, rss]);
      return { latencies, failedCalls, healthFailures, rssPeak };
    },
  };
}

/** Runs one scenario against a fresh server: idle baseline first, then the attack with the bystander beside it. */
export async function runScenario(scenario: AttackScenario, scale: number): Promise<AttackResult> {
  const target = await startTarget(scenario.limits?.(scale));
  try {
    // Warm up, then the idle baseline in the same run.
    const idle = startBystander(target, { intervalMs: 10 });
    await delay(1_500);
    const idleFigures = await idle.stop();
    const rssBefore = await rssOf(target.pid);
    const bystander = startBystander(target);
    let note = '';
    let error: string | undefined;
    try {
      note = (await scenario.run(target, scale)) ?? '';
    } catch (caught) {
      error = caught instanceof Error ? caught.message : String(caught);
    }
    // A short tail: the server must be serving after the attack too.
    await delay(500);
    const figures = await bystander.stop();
    const alive = target.alive();
    return {
      name: scenario.name,
      resource: scenario.resource,
      limit: scenario.limit,
      rssBefore,
      rssPeak: Math.max(figures.rssPeak, rssBefore),
      idleP50: percentile(idleFigures.latencies.slice(10), 0.5),
      p50: percentile([...figures.latencies], 0.5),
      worst: Math.max(...figures.latencies),
      calls: figures.latencies.length,
      failedCalls: figures.failedCalls,
      healthFailures: figures.healthFailures,
      servedThroughout: alive && figures.failedCalls === 0 && figures.healthFailures === 0,
      note,
      ...(error !== undefined ? { error } : {}),
    };
  } finally {
    await target.stop();
  }
}

const MiB = 1024 * 1024;

/** One markdown row of the report. */
export function reportRow(result: AttackResult): string {
  const grew = ((result.rssPeak - result.rssBefore) / MiB).toFixed(0);
  return `| ${result.name} | ${result.resource} | ${result.limit} | ${(result.rssPeak / MiB).toFixed(0)} MiB (+${grew}) | ${result.idleP50.toFixed(1)} → ${result.p50.toFixed(1)} / ${result.worst.toFixed(0)} ms | ${result.servedThroughout ? 'yes' : `no (${result.failedCalls} calls, ${result.healthFailures} probes failed)`} | ${result.error ? `attack failed: ${result.error}` : result.note} |`;
}

export const REPORT_HEADER =
  '| scenario | resource | limit | peak RSS | bystander echo p50 idle → attack / worst | served throughout | what the attack saw |\n|---|---|---|---|---|---|---|';

/** The sum of a Prometheus metric's samples on `/metrics` (read with the operator's token); 0 when absent. */
export async function metric(target: AttackTarget, name: string): Promise<number> {
  const { text } = await exchange(`${target.base}/metrics`, { headers: { authorization: `Bearer ${TOKENS.operator}` } });
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Polls `probe` every 100 ms until it is true or `ms` passed; resolves with the last answer. */
export async function within(ms: number, probe: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > deadline) return false;
    await delay(100);
  }
}
