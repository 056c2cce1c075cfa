/**
 * Rate limits per principal (config `rateLimits`): token buckets for every
 * request, for calls that may create a task, and per tool (glob rules, one
 * bucket per rule and principal). Asked by every transport before a request
 * is handed on, so a refused request runs nothing; the answer is a
 * {@link RateLimitedError} (HTTP: 429 with `Retry-After`).
 *
 * Several instances on one shared store enforce a rate together by each
 * taking an equal share of it (`setShare(1 / liveInstances)`, updated by the
 * cluster node): see docs/scaling.md for the tolerance this gives.
 */
import { publish } from '../core/diagnostics.js';
import { RateLimitedError, type RateLimitName } from '../core/errors.js';
import { globMatcher } from '../core/toolPolicy.js';
import { TokenBucket, type RateSpec } from './TokenBucket.js';

export type { RateSpec } from './TokenBucket.js';

/** A rate for the tools whose names match `tools` (globs as in tool policy). */
export interface ToolRateSpec extends RateSpec {
  tools: readonly string[];
}

/** The rate limits of a runtime (`RuntimeOptions.rateLimits`). Each one absent: not limited. */
export interface RateLimitOptions {
  /** Every JSON-RPC request of a principal (notifications and answers are not counted). */
  requests?: RateSpec;
  /** `tools/call`s of a principal that declare the tasks extension (each may create a task). */
  taskCreations?: RateSpec;
  /** Per tool: the first rule whose globs match the called tool's name applies (one bucket per rule and principal). */
  tools?: readonly ToolRateSpec[];
  /** Principals whose buckets are remembered at once; past it full buckets, then the oldest, are forgotten. Default 100,000. */
  maxTrackedPrincipals?: number;
}

/** What a request costs: every request counts, a `tools/call` also for its tool and, when it may create a task, as a creation. */
export interface RateCharge {
  /** The called tool, for a `tools/call`. */
  tool?: string | undefined;
  /** A `tools/call` declaring the tasks extension. */
  mayCreateTask?: boolean;
}

/** Longest tool name matched against the tool rules; a longer one names no tool and pays only `requests`. */
const MAX_TOOL_NAME = 1024;

interface ToolRule {
  readonly patterns: readonly ((name: string) => boolean)[];
  readonly spec: RateSpec;
}

export class RateLimiter {
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #toolRules: readonly ToolRule[];
  readonly #max: number;
  #share = 1;

  /** @param now the clock (ms); tests inject one. */
  constructor(
    private readonly options: RateLimitOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.#toolRules = (options.tools ?? []).map(({ tools, ...spec }) => ({ patterns: tools.map(globMatcher), spec }));
    this.#max = options.maxTrackedPrincipals ?? 100_000;
  }

  /** Whether any limit is configured (transports skip the check otherwise). */
  get limits(): boolean {
    return this.options.requests !== undefined || this.options.taskCreations !== undefined || this.#toolRules.length > 0;
  }

  /** This instance's part of every rate, (0, 1]: `1 / liveInstances` when several share a store. */
  get share(): number {
    return this.#share;
  }

  setShare(share: number): void {
    if (!(share > 0 && share <= 1) || share === this.#share) return;
    this.#share = share;
    const now = this.now();
    for (const bucket of this.#buckets.values()) bucket.setShare(share, now);
  }

  /**
   * Charges one request of `principal`: `undefined` when every applicable
   * bucket had a token (one is taken from each), else the error naming the
   * limit that refused it (nothing taken from any bucket).
   */
  charge(principal: string, charge: RateCharge = {}): RateLimitedError | undefined {
    const applicable = this.#applicable(principal, charge);
    if (applicable.length === 0) return undefined;
    const now = this.now();
    let refusal: { limit: RateLimitName; waitMs: number } | undefined;
    for (const [limit, bucket] of applicable) {
      const waitMs = bucket.wait(now);
      if (waitMs > 0 && (refusal === undefined || waitMs > refusal.waitMs)) refusal = { limit, waitMs };
    }
    if (refusal) {
      const { limit, waitMs } = refusal;
      publish('taskvisor:ratelimit.refused', () => ({ limit }));
      return new RateLimitedError(limit, waitMs);
    }
    for (const [, bucket] of applicable) bucket.take(now);
    return undefined;
  }

  #applicable(principal: string, charge: RateCharge): [RateLimitName, TokenBucket][] {
    const { requests, taskCreations } = this.options;
    const found: [RateLimitName, TokenBucket][] = [];
    if (requests) found.push(['requests', this.#bucket(`r\u0000${principal}`, requests)]);
    if (taskCreations && charge.mayCreateTask) found.push(['taskCreations', this.#bucket(`c\u0000${principal}`, taskCreations)]);
    const tool = charge.tool;
    if (tool !== undefined && tool.length <= MAX_TOOL_NAME) {
      const index = this.#toolRules.findIndex((rule) => rule.patterns.some((matches) => matches(tool)));
      if (index >= 0) found.push(['toolCalls', this.#bucket(`t${index}\u0000${principal}`, this.#toolRules[index]!.spec)]);
    }
    return found;
  }

  #bucket(key: string, spec: RateSpec): TokenBucket {
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      if (this.#buckets.size >= this.#max) this.#forget();
      bucket = new TokenBucket(spec, this.now(), this.#share);
      this.#buckets.set(key, bucket);
    }
    return bucket;
  }

  /** Bounded memory: full buckets carry no state (a new one starts full); if none is, the oldest tenth goes. */
  #forget(): void {
    const now = this.now();
    for (const [key, bucket] of this.#buckets) if (bucket.isFull(now)) this.#buckets.delete(key);
    if (this.#buckets.size < this.#max) return;
    let drop = Math.max(1, Math.floor(this.#max / 10));
    for (const key of this.#buckets.keys()) {
      if (drop-- <= 0) break;
      this.#buckets.delete(key);
    }
  }
}
