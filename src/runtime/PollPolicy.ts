/**
 * The `pollIntervalMs` hint (T-27): adaptive per tool from the durations
 * observed so far, bounded, and growing over a task's life so a client
 * polling a long task slows down by itself.
 *
 *   hint = clamp(max(base, age / growthDivisor), minMs, maxMs)
 *   base = the tool's fixed `pollIntervalMs`, or, when the tool set none,
 *          clamp(typical duration / 4, minMs, maxMs) once a few runs were seen
 *          (the runtime default before that)
 */
import { TERMINAL_STATUSES } from '../../machines/task/index.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';

export interface PollPolicyOptions {
  /** Hint when nothing better is known. */
  defaultMs: number;
  /** Lower bound of every hint. Default 100 ms. */
  minMs?: number;
  /** Upper bound of every hint. Default 30 s. */
  maxMs?: number;
  /** A task's hint is at least its age divided by this. Default 10; 0 turns growth off. */
  growthDivisor?: number;
  /** Finished runs of a tool needed before its own durations count. Default 3. */
  minSamples?: number;
}

interface ToolStats {
  samples: number;
  /** Exponentially weighted mean duration, ms. */
  meanMs: number;
}

/** Weight of the newest duration in the running mean. */
const EWMA_WEIGHT = 0.2;

export class PollPolicy {
  private readonly stats = new Map<string, ToolStats>();
  private readonly minMs: number;
  private readonly maxMs: number;
  private readonly growthDivisor: number;
  private readonly minSamples: number;

  constructor(private readonly options: PollPolicyOptions) {
    // A default below the usual floor (tests, fast tools) lowers the floor rather than being raised.
    this.minMs = Math.min(options.minMs ?? 100, options.defaultMs);
    this.maxMs = Math.max(options.maxMs ?? 30_000, this.minMs);
    this.growthDivisor = options.growthDivisor ?? 10;
    this.minSamples = options.minSamples ?? 3;
  }

  /** The hint for a new task of `tool`; `fixedMs` is the tool's own setting, which always wins. */
  initial(tool: string, fixedMs: number | undefined): number {
    if (fixedMs !== undefined) return fixedMs;
    const stats = this.stats.get(tool);
    if (!stats || stats.samples < this.minSamples) return this.clamp(this.options.defaultMs);
    return this.clamp(stats.meanMs / 4);
  }

  /** The hint to send with `record` now: it grows with the age of an unfinished task. */
  current(record: TaskRecord, now: number): number | undefined {
    const base = record.pollIntervalMs;
    if (base === undefined || TERMINAL_STATUSES.has(record.status) || this.growthDivisor <= 0) return base;
    const grown = Math.round((now - record.createdAt) / this.growthDivisor);
    // Never below the task's own starting hint, never above the bound.
    return Math.max(base, Math.min(grown, this.maxMs));
  }

  /** Learns from a finished task (call once per terminal record). */
  observe(record: TaskRecord): void {
    if (!TERMINAL_STATUSES.has(record.status) || record.status === 'cancelled') return;
    const duration = Math.max(0, record.lastUpdatedAt - record.createdAt);
    const stats = this.stats.get(record.tool);
    if (!stats) this.stats.set(record.tool, { samples: 1, meanMs: duration });
    else {
      stats.samples++;
      stats.meanMs += EWMA_WEIGHT * (duration - stats.meanMs);
    }
  }

  private clamp(ms: number): number {
    return Math.round(Math.min(this.maxMs, Math.max(this.minMs, ms)));
  }
}
