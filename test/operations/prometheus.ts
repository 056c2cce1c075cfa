/**
 * A reader of the Prometheus text exposition format (0.0.4) for the metrics
 * tests: every sample with its labels, and the HELP/TYPE of every family.
 * Strict: a line it cannot read fails the test (a scraper would reject it too).
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  types: Map<string, string>;
  /** Sum of the samples named `name` whose labels include `labels`. */
  sum(name: string, labels?: Record<string, string>): number;
  /** Whether a sample named `name` exists. */
  has(name: string): boolean;
}

// NaN in any case: prom-client prints an empty summary's mean as `Nan` (nodejs_eventloop_lag_mean_seconds before the
// first event-loop sample, seen under load), and Prometheus reads it (Go's ParseFloat takes "nan" in any case).
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?(?:[0-9.e+-]+|[Nn][Aa][Nn]|\+Inf|-Inf))(?: \d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/y;

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) continue;
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      types.set(name!, type!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    const body = match[2] ?? '';
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const label = LABEL.exec(body);
      if (!label) throw new Error(`bad labels in ${JSON.stringify(line)}`);
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]!.replace('+Inf', 'Infinity')) });
  }
  return {
    samples,
    types,
    sum: (name, labels = {}) =>
      samples
        .filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
        .reduce((total, sample) => total + sample.value, 0),
    has: (name) => samples.some((sample) => sample.name === name),
  };
}
