/**
 * Types of the upstream connection machine and of its supervisor. Pure data:
 * the machines never touch a socket, the runtime provides the actors.
 */

/** How a failed connection is retried: capped exponential backoff with jitter. */
export interface BackoffPolicy {
  /** First retry delay. */
  initialMs: number;
  /** Upper bound of any delay. */
  maxMs: number;
  /** Growth per failed attempt. */
  factor: number;
  /** Connection attempts in a row before the upstream is `failed` for good; `null` = retry forever. */
  maxAttempts: number | null;
}

export interface UpstreamInput {
  name: string;
  backoff: BackoffPolicy;
  /** Failed pings in a row before a degraded upstream is reconnected. */
  maxPingFailures: number;
}

/** What a successful connect reports. */
export interface ConnectOutput {
  toolCount: number;
  /** Negotiated protocol revision (e.g. `2026-07-28`, `2025-11-25`). */
  protocolVersion: string;
  /** Whether the upstream declared the tasks extension. */
  tasks: boolean;
}

export interface UpstreamContext {
  name: string;
  backoff: BackoffPolicy;
  maxPingFailures: number;
  /** Failed connection attempts since the last success. */
  attempt: number;
  pingFailures: number;
  lastError: string | null;
  /** Epoch ms of the next connection attempt while in `backoff`. */
  retryAt: number | null;
  toolCount: number;
  protocolVersion: string | null;
  tasks: boolean;
}

/** Events the monitor and backoff timer send, and what the owner sends. */
export type UpstreamEvent =
  | { type: 'PING_OK' }
  | { type: 'PING_FAILED'; error: string }
  | { type: 'CATALOG'; toolCount: number }
  | { type: 'DISCONNECTED'; error: string }
  | { type: 'RETRY_SCHEDULED'; at: number }
  | { type: 'RETRY' }
  | { type: 'RECONNECT' }
  | { type: 'STOP' };

export interface BackoffTimerInput {
  attempt: number;
  backoff: BackoffPolicy;
}

export interface MonitorInput {
  name: string;
}

/** Supervisor events: add an upstream (spawned as a child with id `upstream:<name>`), or stop one. */
export type UpstreamSupervisorEvent = { type: 'UPSTREAM.ADD'; upstream: UpstreamInput } | { type: 'UPSTREAM.STOP'; name: string };

export interface UpstreamSupervisorContext {
  /** The input of every added upstream, to respawn one that crashed. */
  upstreams: Record<string, UpstreamInput>;
  /** How often each child crashed (an `xstate.error.actor.*` contained here). */
  crashes: Record<string, number>;
}
