/**
 * The promoted-upstream-call cells of `npm run bench` (bench/promotedCall.ts
 * measures): a call held as a task against a plain forward of the same call
 * (p50, same run, interleaved), and heap per held upstream request against
 * heap per live task of a local tool (same run).
 */
import { runScript } from './child.js';
import { fmt, ratio, type Summary } from './stats.js';

export interface PromotedResult {
  plain: Summary;
  promoted: Summary;
  heldBytes: number;
  localBytes: number;
  n: number;
  heldCount: number;
  workMs: number;
}

/** Runs the measuring script (its own runtime and upstream children). */
export async function runPromoted(quick: boolean, log: (line: string) => void): Promise<PromotedResult> {
  const outcome = await runScript<PromotedResult>(
    'promotedCall.ts',
    { n: quick ? 6 : 40, held: quick ? 40 : 300, ms: 300 },
    { nodeArgs: ['--expose-gc'], timeoutMs: 600_000 },
  );
  if (!outcome.result) throw new Error(`promotedCall: no result (${outcome.stderr.slice(-500)})`);
  const r = outcome.result;
  log(
    `promoted upstream call: p50 ${fmt(r.promoted.p50)} ms vs plain forward ${fmt(r.plain.p50)} ms; heap per held request ${fmt(r.heldBytes / 1024)} KB vs local task ${fmt(r.localBytes / 1024)} KB`,
  );
  return r;
}

/** The table rows (the shape of run.ts's rows). */
export function promotedRows(r: PromotedResult): Array<Record<string, unknown>> {
  return [
    {
      bench: '9. promoted upstream call',
      case: `tools/call of a 300 ms upstream tool (plain v1 server over stdio), caller with the extension, p50 of ${r.n}`,
      figure: 'call to result (promoted: to the stored completion)',
      value: r.promoted.p50,
      unit: 'ms',
      baseline: 'the same call forwarded as is (promotion never), same run, interleaved',
      baselineValue: r.plain.p50,
      baselineUnit: 'ms',
      ratio: ratio(r.promoted.p50, r.plain.p50),
      note: `p90 ${fmt(r.promoted.p90)} vs ${fmt(r.plain.p90)} ms`,
    },
    {
      bench: '9. promoted upstream call',
      case: `${r.heldCount} held upstream requests waiting (tasks of taskvisor), taskvisor's heap only`,
      figure: 'heap per held request',
      value: r.heldBytes,
      unit: 'B',
      baseline: `a live task of a local auto tool promoted after 50 ms, waiting for its cancel (${r.heldCount}, same run)`,
      baselineValue: r.localBytes,
      baselineUnit: 'B',
      ratio: ratio(r.heldBytes, r.localBytes),
    },
  ];
}
