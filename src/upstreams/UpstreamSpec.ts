/**
 * What the runtime needs to know about one upstream MCP server: the
 * validated form of a config `upstreams[]` entry or a library caller's object.
 */
import type { BackoffPolicy } from '../../machines/upstream/index.js';
import type { ConnectionPoolLimits } from './identity/UpstreamConnectionPool.js';
import type { UpstreamIdentity } from './identity/UpstreamIdentity.js';

export type UpstreamTransportSpec =
  | { type: 'stdio'; command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  | { type: 'streamable-http'; url: string; headers?: Record<string, string> };

export type UpstreamSpec = UpstreamTransportSpec & {
  /** Unique; part of every wrapped task id and of the `Mcp-Name`-safe alphabet (`[A-Za-z0-9_-]`). */
  name: string;
  /** Prefix of the upstream's tools (`<namespace>_<toolPrefix>_<tool>`). Default: `name`. */
  toolPrefix?: string;
  /** Per-request timeout in ms (connect, ping, tools/call, tasks/*). Default 30 000. */
  timeout?: number;
  /** Connect when the runtime starts (default). `false`: only when `runtime.upstreams.start(name)` is called. */
  autoStart?: boolean;
  /** Ping period while connected, in ms. Default 15 000; 0 disables pings. */
  pingIntervalMs?: number;
  /** Failed pings in a row before reconnecting. Default 3. */
  maxPingFailures?: number;
  /** Reconnection backoff. Default 500 ms doubling up to 30 s, retried forever. */
  backoff?: Partial<BackoffPolicy>;
  /**
   * Whom the upstream sees behind a call (docs/aggregator.md "Identity"):
   * `static` (default) the configured `headers` on one shared connection;
   * otherwise each principal over a connection of its own.
   */
  identity?: UpstreamIdentity;
  /** Bounds of the per-principal connections (identity other than `static`). */
  connections?: Partial<ConnectionPoolLimits>;
  /** Calls to tools without task support of their own become taskvisor tasks (docs/aggregator.md "Promoted calls"). */
  promotion?: UpstreamPromotion;
};

/** Whether calls of an upstream tool become tasks, and what a restart does with one. */
export interface ToolPromotion {
  /** `auto` (default): a task once the call outlives `promoteAfterMs` or asks for input; `always`; `never`. */
  taskBehavior?: 'auto' | 'always' | 'never';
  /** Default: the runtime's `promoteAfterMs`. */
  promoteAfterMs?: number;
  /** `true`: a restart sends the held call again (`replay`); `false`: the task fails. Default: the tool's `idempotentHint`. */
  idempotent?: boolean;
}

/** An upstream's promotion settings: its defaults and per-tool overrides (by the upstream's own tool name). */
export interface UpstreamPromotion {
  taskBehavior?: ToolPromotion['taskBehavior'];
  promoteAfterMs?: number;
  /** How long a held call may wait for the upstream's answer. Default: no limit of its own (the task's ttl bounds it). */
  timeoutMs?: number;
  tools?: Record<string, ToolPromotion>;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 500, maxMs: 30_000, factor: 2, maxAttempts: null };
export const DEFAULT_UPSTREAM_TIMEOUT_MS = 30_000;
