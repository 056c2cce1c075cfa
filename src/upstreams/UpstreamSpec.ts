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
};

export const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 500, maxMs: 30_000, factor: 2, maxAttempts: null };
export const DEFAULT_UPSTREAM_TIMEOUT_MS = 30_000;
