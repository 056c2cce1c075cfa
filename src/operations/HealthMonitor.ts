/**
 * Liveness and readiness.
 *
 * - Liveness (`/healthz`): the process answers and its event loop is
 *   responsive: the p99 of the event-loop delay over the last window (and
 *   the window in progress) stays under `maxEventLoopDelayMs`. A balancer or
 *   supervisor restarts a process that fails it.
 * - Readiness (`/readyz`): the runtime finished recovery (phase `ready`), the
 *   store is open (and locked, when the store reports a lock), the cluster
 *   lease is held (shared stores), every tracked listener is up; upstream
 *   states are reported and gate readiness only with
 *   `upstreamsGateReadiness`. A balancer stops sending new work to an
 *   instance that fails it, without restarting it.
 *
 * Bodies name every check with its state, and list the reasons for a
 * failure, so an operator reading a balancer's log knows why. They carry no
 * error texts of upstreams or stores (those may quote URLs or paths).
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { OperationsRuntime } from './OperationsRuntime.js';

export interface HealthOptions {
  /** Liveness fails when the event loop's p99 delay exceeds this. Default 2000 ms. */
  maxEventLoopDelayMs?: number;
  /** Whether an upstream that is not `ready` makes the instance not ready. Default false (reported only). */
  upstreamsGateReadiness?: boolean;
  /** Length of one event-loop measuring window. Default 10 s. */
  eventLoopWindowMs?: number;
}

/** One readiness check as reported. */
export interface ReadinessCheck {
  name: string;
  ok: boolean;
  /** Whether a failure of this check makes the instance not ready. */
  gating: boolean;
  /** What was found (`ready`, `recovering`, `open`, `held`, `up`, an upstream state...). */
  state: string;
}

export interface ReadinessReport {
  status: 'ready' | 'not ready';
  phase: string;
  checks: ReadinessCheck[];
  /** One line per failed gating check. */
  reasons: string[];
}

export interface HealthReport {
  status: 'ok' | 'unhealthy';
  uptimeSeconds: number;
  eventLoop: { p99Ms: number; maxMs: number; limitMs: number };
  reasons: string[];
}

/** A listener readiness tracks: up while `isUp()` says so. */
type ListenerProbe = () => boolean;

const ns = (value: number) => (Number.isFinite(value) ? value / 1e6 : 0);
const round = (value: number) => Math.round(value * 10) / 10;

export class HealthMonitor {
  readonly #runtime: OperationsRuntime;
  readonly #maxDelayMs: number;
  readonly #upstreamsGate: boolean;
  readonly #listeners = new Map<string, ListenerProbe>();
  readonly #histogram: IntervalHistogram;
  readonly #timer: NodeJS.Timeout;
  readonly #startedAt = Date.now();
  /** The last finished window's figures (a fresh window has too few samples to judge alone). */
  #lastWindow = { p99Ms: 0, maxMs: 0 };

  constructor(runtime: OperationsRuntime, options: HealthOptions = {}) {
    this.#runtime = runtime;
    this.#maxDelayMs = options.maxEventLoopDelayMs ?? 2000;
    if (!(this.#maxDelayMs > 0)) throw new RangeError('maxEventLoopDelayMs must be a positive number of milliseconds');
    this.#upstreamsGate = options.upstreamsGateReadiness ?? false;
    this.#histogram = monitorEventLoopDelay({ resolution: 20 });
    this.#histogram.enable();
    this.#timer = setInterval(() => {
      this.#lastWindow = { p99Ms: ns(this.#histogram.percentile(99)), maxMs: ns(this.#histogram.max) };
      this.#histogram.reset();
    }, options.eventLoopWindowMs ?? 10_000);
    this.#timer.unref();
  }

  /** Tracks a listener (`http`, `ws`, `operations`): readiness needs it up. Returns the untracking. */
  trackListener(name: string, isUp: ListenerProbe): () => void {
    this.#listeners.set(name, isUp);
    return () => {
      if (this.#listeners.get(name) === isUp) this.#listeners.delete(name);
    };
  }

  /** Liveness now. */
  health(): HealthReport {
    const current = { p99Ms: ns(this.#histogram.percentile(99)), maxMs: ns(this.#histogram.max) };
    const p99Ms = Math.max(current.p99Ms, this.#lastWindow.p99Ms);
    const maxMs = Math.max(current.maxMs, this.#lastWindow.maxMs);
    const reasons = p99Ms > this.#maxDelayMs ? [`event loop delay p99 ${round(p99Ms)} ms is over ${this.#maxDelayMs} ms`] : [];
    return {
      status: reasons.length === 0 ? 'ok' : 'unhealthy',
      uptimeSeconds: Math.round((Date.now() - this.#startedAt) / 1000),
      eventLoop: { p99Ms: round(p99Ms), maxMs: round(maxMs), limitMs: this.#maxDelayMs },
      reasons,
    };
  }

  /** Readiness now. */
  readiness(): ReadinessReport {
    const runtime = this.#runtime;
    const phase = runtime.phase;
    const checks: ReadinessCheck[] = [];
    const recoveryDone = phase === 'ready' || phase === 'stopping' || phase === 'stopped';
    checks.push({ name: 'recovery', ok: recoveryDone, gating: true, state: recoveryDone ? 'finished' : phase });
    // After recovery: `stopping` drains the instance (new work goes elsewhere while it finishes).
    if (recoveryDone) checks.push({ name: 'phase', ok: phase === 'ready', gating: true, state: phase });
    // The runtime opens the store before recovery and closes it last.
    const storeOpen = phase !== 'starting' && phase !== 'stopped';
    checks.push({ name: 'store', ok: storeOpen, gating: true, state: storeOpen ? 'open' : 'closed' });
    const locked = (runtime.store as { readonly locked?: unknown }).locked;
    if (typeof locked === 'boolean') checks.push({ name: 'storeLock', ok: locked, gating: true, state: locked ? 'held' : 'not held' });
    if (runtime.cluster) {
      const held = runtime.cluster.leaseHeld;
      checks.push({ name: 'clusterLease', ok: held, gating: true, state: held ? 'held' : 'not held' });
    }
    for (const [name, isUp] of this.#listeners) {
      const up = isUp();
      checks.push({ name: `listener:${name}`, ok: up, gating: true, state: up ? 'up' : 'down' });
    }
    for (const upstream of runtime.upstreams?.status() ?? []) {
      checks.push({
        name: `upstream:${upstream.name}`,
        ok: upstream.state === 'ready',
        gating: this.#upstreamsGate,
        state: upstream.state,
      });
    }
    const reasons = checks.filter((check) => check.gating && !check.ok).map((check) => `${check.name} is ${check.state}`);
    return { status: reasons.length === 0 ? 'ready' : 'not ready', phase, checks, reasons };
  }

  /** Stops measuring. */
  close(): void {
    clearInterval(this.#timer);
    this.#histogram.disable();
  }
}
