/**
 * `npm run attack`: the red-team suite. For every resource one client can
 * hold (memory per connection and per principal, outbound bytes, CPU per
 * request, streams, sessions, live tasks, stored bytes, the operator API) it
 * builds the worst case it can within the limits against a real
 * `taskvisor serve` on 127.0.0.1, with a bystander calling beside it, and
 * reports peak RSS, the bystander's latency against idle in the same run and
 * whether the server served throughout.
 *
 *   npm run attack -- [--quick] [--only NAME]... [--json FILE]
 *
 * `--quick` runs the subset `npm test` runs, at a small scale. The exit code
 * is 1 when any scenario did not serve throughout.
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { REPORT_HEADER, reportRow, runScenario, type AttackResult } from './attack/harness.js';
import { SCENARIOS } from './attack/scenarios.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string', multiple: true },
    json: { type: 'string' },
  },
});
const unknown = (values.only ?? []).filter((name) => !SCENARIOS.some((scenario) => scenario.name === name));
if (unknown.length > 0) {
  process.stderr.write(`unknown scenario ${unknown.join(', ')} (known: ${SCENARIOS.map((scenario) => scenario.name).join(', ')})\n`);
  process.exit(2);
}
const chosen = SCENARIOS.filter((scenario) => (values.only ? values.only.includes(scenario.name) : !values.quick || scenario.quick));
const scale = values.quick ? 0.1 : 1;
process.stdout.write(`attack: ${chosen.length} scenarios, scale ${scale}\n\n${REPORT_HEADER}\n`);
const results: AttackResult[] = [];
for (const scenario of chosen) {
  const result = await runScenario(scenario, scale);
  results.push(result);
  process.stdout.write(`${reportRow(result)}\n`);
}
if (values.json) await writeFile(values.json, `${JSON.stringify({ scale, results }, null, 2)}\n`);
const failed = results.filter((result) => !result.servedThroughout);
process.stdout.write(`\n${results.length - failed.length} served throughout, ${failed.length} did not\n`);
process.exit(failed.length > 0 ? 1 : 0);
