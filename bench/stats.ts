/** Percentiles, medians and number formatting shared by the benchmarks. */

/** Nearest-rank percentile of an ascending-sorted array; NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

/** Ascending copy as a Float64Array (fast numeric sort). */
export function sorted(values: ArrayLike<number>): Float64Array {
  const copy = Float64Array.from(values);
  copy.sort();
  return copy;
}

export function median(values: readonly number[]): number {
  const finite = values.filter((value) => Number.isFinite(value));
  if (finite.length === 0) return Number.NaN;
  return percentile(sorted(finite), 50);
}

export interface Summary {
  n: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function summarize(values: ArrayLike<number>): Summary {
  const s = sorted(values);
  let total = 0;
  for (const value of s) total += value;
  return {
    n: s.length,
    mean: s.length ? total / s.length : Number.NaN,
    p50: percentile(s, 50),
    p90: percentile(s, 90),
    p99: percentile(s, 99),
    max: s.length ? (s[s.length - 1] as number) : Number.NaN,
  };
}

/** A number with about three significant digits, thousands separated. */
export function fmt(value: number | undefined, digits = 3): string {
  if (value === undefined || !Number.isFinite(value)) return '—';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs === 0) return '0';
  const decimals = Math.max(0, digits - 1 - Math.floor(Math.log10(abs)));
  return value.toFixed(Math.min(decimals, 4));
}

export function ratio(value: number, baseline: number): number {
  return Number.isFinite(value) && Number.isFinite(baseline) && baseline !== 0 ? value / baseline : Number.NaN;
}

/** Whether a figure met its target; '' when there is none (or in a quick run). */
export type Verdict = 'met' | 'missed' | '';

/** One line of the bench table (bench/run.ts renders them; the cell modules build their own). */
export interface BenchRow {
  bench: string;
  case: string;
  figure: string;
  value: number;
  unit: string;
  baseline?: string;
  baselineValue?: number;
  baselineUnit?: string;
  ratio?: number;
  target?: string;
  verdict?: Verdict;
  note?: string;
}
