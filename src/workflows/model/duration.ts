/**
 * Durations in workflow files: Go's spelling as muster users write it
 * (`500ms`, `30s`, `5m`, `1h30m`) or a number of milliseconds.
 */
const UNIT: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a duration, or an error message. */
export function parseDuration(value: string | number): number | string {
  if (typeof value === 'number')
    return Number.isFinite(value) && value > 0 ? value : 'a duration must be a positive number of milliseconds';
  const text = value.trim();
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(text)) return `${JSON.stringify(value)} is not a duration (write e.g. 500ms, 30s, 5m, 1h30m)`;
  let total = 0;
  for (const match of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(match[1]) * UNIT[match[2]!]!;
  return total > 0 ? total : 'a duration must be longer than 0';
}

/** A duration as it was written, for messages: `30s`, or `1500ms` for a number. */
export const showDuration = (value: string | number): string => (typeof value === 'number' ? `${value}ms` : value);
