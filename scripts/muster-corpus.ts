/**
 * Loads every workflow definition of a muster checkout with taskvisor's
 * loader and reports how many load, to show muster's files run here: its examples
 * (`examples/workflow-*.yaml`, custom-resource shape) and the definitions in
 * its BDD scenarios (`internal/testing/scenarios/*.yaml`: the
 * `pre_configuration.workflows` entries and the arguments of
 * `core_workflow_create` / `core_workflow_update` steps). A definition a
 * scenario expects muster to refuse (`expected.success: false`) should be
 * refused here too. muster's files are read from the checkout, never copied.
 *
 *   node --import tsx scripts/muster-corpus.ts /path/to/muster
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { parseWorkflow } from '../src/workflows/loading/loadWorkflows.js';

interface Entry {
  source: string;
  text: string;
  /** muster refuses it (the scenario expects the create to fail). */
  refusedByMuster: boolean;
}

const root = process.argv[2];
if (!root) {
  process.stderr.write('usage: node --import tsx scripts/muster-corpus.ts MUSTER_CHECKOUT\n');
  process.exit(2);
}

const entries: Entry[] = [];
for (const file of (await readdir(path.join(root, 'examples'))).filter((f) => /^workflow.*\.ya?ml$/.test(f)).sort()) {
  entries.push({ source: `examples/${file}`, text: await readFile(path.join(root, 'examples', file), 'utf8'), refusedByMuster: false });
}
const scenarios = path.join(root, 'internal', 'testing', 'scenarios');
for (const file of (await readdir(scenarios)).filter((f) => f.endsWith('.yaml')).sort()) {
  const scenario = parse(await readFile(path.join(scenarios, file), 'utf8')) as {
    pre_configuration?: { workflows?: Array<{ name: string; config?: Record<string, unknown> }> };
    steps?: Array<{ id?: string; tool?: string; args?: Record<string, unknown>; expected?: { success?: boolean } }>;
  };
  for (const workflow of scenario.pre_configuration?.workflows ?? []) {
    entries.push({
      source: `${file} pre_configuration ${workflow.name}`,
      text: stringify({ name: workflow.name, ...(workflow.config ?? {}) }),
      refusedByMuster: false,
    });
  }
  for (const step of scenario.steps ?? []) {
    if (step.tool !== 'core_workflow_create' || !step.args) continue;
    entries.push({ source: `${file} step ${step.id}`, text: stringify(step.args), refusedByMuster: step.expected?.success === false });
  }
}

let loaded = 0;
let refusedAsMuster = 0;
const unexpected: string[] = [];
for (const entry of entries) {
  let problem: string | undefined;
  try {
    parseWorkflow(entry.text, `${entry.source.replace(/[^A-Za-z0-9_.-]+/g, '_')}.yaml`);
  } catch (error) {
    problem = (error as Error).message.split('\n')[0];
  }
  if (entry.refusedByMuster) {
    if (problem) refusedAsMuster++;
    else unexpected.push(`${entry.source}: loads, but muster refuses it`);
  } else if (problem) unexpected.push(`${entry.source}: ${problem}`);
  else loaded++;
}
const valid = entries.filter((e) => !e.refusedByMuster).length;
process.stdout.write(
  `${entries.length} definitions: ${loaded}/${valid} that muster accepts load; ${refusedAsMuster}/${entries.length - valid} that muster refuses are refused\n`,
);
for (const line of unexpected) process.stdout.write(`  ${line}\n`);
