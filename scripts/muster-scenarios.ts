/**
 * muster's workflow scenarios (`internal/testing/scenarios/workflow-*.yaml`
 * of a muster checkout) run against taskvisor: each one's mocks, workflows
 * and steps through taskvisor's public interfaces (see
 * muster-scenarios/runScenario.ts), its `expected:` blocks checked as
 * muster's runner checks them. Reports pass/total, the first mismatch of
 * every failure, and the construct each unsupported scenario needs.
 * muster's files are read from the checkout, never copied.
 *
 *   npm run muster-scenarios -- --muster /path/to/muster [--only SUBSTRING] [--json]
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { runScenario, type MusterScenario, type ScenarioResult } from './muster-scenarios/runScenario.js';

const { values } = parseArgs({ options: { muster: { type: 'string' }, only: { type: 'string' }, json: { type: 'boolean' } } });
if (!values.muster) {
  process.stderr.write('usage: npm run muster-scenarios -- --muster MUSTER_CHECKOUT [--only SUBSTRING] [--json]\n');
  process.exit(2);
}
const folder = path.join(values.muster, 'internal', 'testing', 'scenarios');
const files = (await readdir(folder))
  .filter((file) => /^workflow-.*\.ya?ml$/.test(file) && (!values.only || file.includes(values.only)))
  .sort();

const results: Array<{ file: string } & ScenarioResult> = [];
for (const file of files) {
  let result: ScenarioResult;
  try {
    result = await runScenario(parse(await readFile(path.join(folder, file), 'utf8')) as MusterScenario);
  } catch (error) {
    result = { outcome: 'fail', step: '(runner)', mismatch: (error as Error).message.split('\n')[0]! };
  }
  results.push({ file, ...result });
  const line =
    result.outcome === 'pass'
      ? 'pass'
      : result.outcome === 'fail'
        ? `FAIL at ${result.step}: ${result.mismatch}`
        : `unsupported: needs ${result.needs}`;
  process.stderr.write(`${file}: ${line}\n`);
}
const passed = results.filter((r) => r.outcome === 'pass').length;
const unsupported = results.filter((r) => r.outcome === 'unsupported').length;
if (values.json) process.stdout.write(`${JSON.stringify({ passed, total: results.length, unsupported, results }, null, 2)}\n`);
else
  process.stdout.write(
    `${passed}/${results.length} scenarios pass (${unsupported} need constructs taskvisor does not support; ${results.length - passed - unsupported} fail)\n`,
  );
// Stub upstreams and servers are stopped per scenario; anything left would keep the process alive.
process.exit(0);
