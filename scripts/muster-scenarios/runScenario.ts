/**
 * Runs one of muster's scenario files against a real taskvisor server: the
 * declared mock servers become stub stdio upstreams (mockServer.ts), the
 * scenario's workflows and its `core_workflow_create` / `update` / `delete`
 * steps become files in the served workflow folder (reloaded after each),
 * and every other step is a `tools/call` over Streamable HTTP from a client
 * without the tasks extension (so a run answers synchronously, as muster's
 * do). A fresh server per scenario, as muster starts a fresh process.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { stringify } from 'yaml';
import { serve } from '../../src/cli/serve.js';
import { EXECUTION_ID_META_KEY } from '../../src/workflows/engine/WorkflowRun.js';
import { firstMismatch, type CallOutcome, type Expected } from './expectations.js';

const MOCK_SERVER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'mockServer.ts');
const TSX = import.meta.resolve('tsx');

export interface MusterStep {
  id?: string;
  tool?: string;
  args?: Record<string, unknown>;
  expected?: Expected;
  retry?: { count?: number; delay?: string };
}

export interface MusterScenario {
  name?: string;
  pre_configuration?: {
    mcp_servers?: Array<{ name: string; config?: Record<string, unknown> }>;
    workflows?: Array<{ name: string; config?: Record<string, unknown> }>;
    [other: string]: unknown;
  };
  steps?: MusterStep[];
}

export type ScenarioResult =
  { outcome: 'pass' } | { outcome: 'fail'; step: string; mismatch: string } | { outcome: 'unsupported'; needs: string };

/** The tools a scenario step may call here: the mocks', the workflows', and muster's workflow file, history and read-only tools. */
const FILE_TOOLS = new Set(['core_workflow_create', 'core_workflow_update', 'core_workflow_delete']);
const HISTORY_TOOLS = new Set(['core_workflow_execution_list', 'core_workflow_execution_get']);
/** muster's read-only management tools, which taskvisor serves with its workflows. */
const READ_ONLY_TOOLS = new Set([
  'core_workflow_list',
  'core_workflow_get',
  'core_workflow_validate',
  'core_workflow_available',
  'core_service_list',
  'core_config_get',
]);

/** What a scenario needs that this runner cannot give, or `undefined`. */
export function unsupportedConstruct(scenario: MusterScenario): string | undefined {
  const pre = scenario.pre_configuration ?? {};
  for (const key of Object.keys(pre)) if (key !== 'mcp_servers' && key !== 'workflows') return `pre_configuration.${key}`;
  for (const server of pre.mcp_servers ?? []) {
    for (const key of ['oauth', 'family'] as const) if (server.config?.[key] !== undefined) return `mock server ${key}`;
  }
  for (const step of scenario.steps ?? []) {
    const tool = step.tool ?? '';
    if ((step as Record<string, unknown>).as_user !== undefined) return 'as_user (per-user sessions)';
    if (step.args?._debug !== undefined) return "muster's reserved _debug argument";
    if (
      tool.startsWith('x_') ||
      tool.startsWith('workflow_') ||
      FILE_TOOLS.has(tool) ||
      HISTORY_TOOLS.has(tool) ||
      READ_ONLY_TOOLS.has(tool)
    )
      continue;
    return `the tool ${tool}`;
  }
  return undefined;
}

/** `{{ stepId.path }}` references to earlier steps' responses (muster's scenario templating); a whole-string one keeps its type. */
function substitute(value: unknown, context: Map<string, Record<string, unknown>>): unknown {
  const REF = /\{\{\s*([A-Za-z0-9_-]+)\.([A-Za-z0-9_.]+)\s*\}\}/g;
  const lookup = (id: string, dotted: string): unknown => {
    let current: unknown = context.get(id);
    for (const part of dotted.split('.'))
      current = current !== null && typeof current === 'object' ? (current as Record<string, unknown>)[part] : undefined;
    return current;
  };
  if (typeof value === 'string') {
    const whole = /^\{\{\s*([A-Za-z0-9_-]+)\.([A-Za-z0-9_.]+)\s*\}\}$/.exec(value);
    if (whole && context.has(whole[1]!)) return lookup(whole[1]!, whole[2]!);
    return value.replace(REF, (match, id: string, dotted: string) => (context.has(id) ? String(lookup(id, dotted)) : match));
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, context));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, context)]));
  return value;
}

function durationMs(text: string | undefined): number {
  const match = text ? /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(text) : null;
  return match ? Number(match[1]) * (match[2] === 'ms' ? 1 : match[2] === 's' ? 1000 : 60_000) : 1000;
}

export async function runScenario(scenario: MusterScenario): Promise<ScenarioResult> {
  const needs = unsupportedConstruct(scenario);
  if (needs) return { outcome: 'unsupported', needs };
  const dir = await mkdtemp(path.join(tmpdir(), 'muster-scenario-'));
  const folder = path.join(dir, 'workflows');
  await mkdir(folder);
  await mkdir(path.join(dir, 'mocks'));
  const mocks = scenario.pre_configuration?.mcp_servers ?? [];
  const upstreams = [];
  const expectedTools: string[] = [];
  for (const mock of mocks) {
    const file = path.join(dir, 'mocks', `${mock.name}.json`);
    await writeFile(file, JSON.stringify(mock.config ?? {}));
    upstreams.push({
      name: mock.name,
      type: 'stdio',
      command: process.execPath,
      args: ['--import', TSX, MOCK_SERVER, file],
      toolPrefix: mock.name,
    });
    const prefix = (mock.config?.toolPrefix as string | undefined) ?? mock.name;
    for (const tool of (mock.config?.tools as Array<{ name: string }> | undefined) ?? []) {
      expectedTools.push(tool.name.startsWith(`${prefix}_`) ? `x_${tool.name}` : `x_${prefix}_${tool.name}`);
    }
    if (mock.config?.toolPrefix) upstreams[upstreams.length - 1]!.toolPrefix = prefix;
  }
  for (const workflow of scenario.pre_configuration?.workflows ?? []) {
    await writeFile(path.join(folder, `${workflow.name}.yaml`), stringify({ name: workflow.name, ...(workflow.config ?? {}) }));
  }
  const config = path.join(dir, 'taskvisor.yaml');
  await writeFile(
    config,
    stringify({
      store: { kind: 'memory' },
      aggregator: { toolNamespace: 'x' },
      upstreams,
      workflows: { dir: './workflows', watch: false },
    }),
  );
  let server: Awaited<ReturnType<typeof serve>> | undefined;
  let client: Client | undefined;
  try {
    server = await serve({ config, http: '127.0.0.1:0', quiet: true });
    client = new Client({ name: 'muster-scenarios', version: '1.0.0' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url!)));
    // The stub upstreams start on their own: wait until their tools are served.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const listed = new Set((await client.listTools()).tools.map((tool) => tool.name));
      const missing = expectedTools.filter((name) => !listed.has(name));
      if (missing.length === 0) break;
      if (Date.now() > deadline)
        return { outcome: 'fail', step: '(setup)', mismatch: `the stub upstream tools never appeared: ${missing.join(', ')}` };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const context = new Map<string, Record<string, unknown>>();
    const steps = scenario.steps ?? [];
    for (const [index, step] of steps.entries()) {
      const label = step.id ?? `step ${index + 1}`;
      const attempts = 1 + (step.retry?.count ?? 0);
      let mismatch: string | undefined;
      let outcome: CallOutcome | undefined;
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const args = substitute(step.args ?? {}, context) as Record<string, unknown>;
        outcome = await call(step.tool!, args, client, server, folder);
        mismatch = step.expected ? firstMismatch(step.expected, outcome) : undefined;
        if (!mismatch) break;
        if (attempt < attempts) await new Promise((resolve) => setTimeout(resolve, durationMs(step.retry?.delay)));
      }
      if (step.id && outcome?.json) context.set(step.id, outcome.json);
      // A run refused because its workflow calls muster's own management tools needs what taskvisor does not offer.
      const refused = /missing required tools\): ([^{]*)/.exec(outcome?.text ?? '');
      const management = refused?.[1]!
        .split(/,\s*/)
        .map((tool) => tool.trim())
        .filter((tool) => tool.startsWith('core_'));
      if (mismatch && management?.length) return { outcome: 'unsupported', needs: `a workflow step calling ${management.join(', ')}` };
      if (mismatch) return { outcome: 'fail', step: label, mismatch };
    }
    return { outcome: 'pass' };
  } finally {
    await client?.close().catch(() => {});
    await server?.stop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

type Served = Awaited<ReturnType<typeof serve>>;

/** One scenario step: a workflow file operation or a `tools/call`. */
async function call(tool: string, args: Record<string, unknown>, client: Client, server: Served, folder: string): Promise<CallOutcome> {
  if (FILE_TOOLS.has(tool)) return fileOperation(tool, args, server, folder);
  try {
    const result = await client.callTool({ name: tool, arguments: args });
    const texts = (result.content as Array<{ type: string; text?: string }>)
      .filter((block) => block.type === 'text')
      .map((block) => block.text ?? '');
    let json: Record<string, unknown> | undefined;
    for (const text of texts) {
      try {
        const parsed = JSON.parse(text) as unknown;
        if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
          json = parsed as Record<string, unknown>;
          break;
        }
      } catch {
        // not JSON: muster's runner tries the next block
      }
    }
    // muster puts a run's execution id into its answer; taskvisor names it in the result's `_meta`.
    const executionId = (result._meta as Record<string, unknown> | undefined)?.[EXECUTION_ID_META_KEY];
    let text = texts.join(' ');
    if (typeof executionId === 'string') {
      if (json && json.execution_id === undefined) json = { execution_id: executionId, ...json };
      if (!text.includes(executionId)) text += ` {"execution_id":"${executionId}"}`;
    }
    return { isError: result.isError === true, text, ...(json ? { json } : {}) };
  } catch (error) {
    return { error: (error as Error).message, isError: false, text: '' };
  }
}

/**
 * muster's `core_workflow_create` / `update` / `delete` as what they are
 * here: a workflow file written into (or removed from) the served folder,
 * then a reload; a file the reload refuses is removed again and its problems
 * are the error.
 */
async function fileOperation(tool: string, args: Record<string, unknown>, server: Served, folder: string): Promise<CallOutcome> {
  const catalog = server.workflows!;
  const name = typeof args.name === 'string' ? args.name : undefined;
  const failed = (message: string): CallOutcome => ({ isError: true, text: message });
  if (!name || !/^[A-Za-z0-9_.-]+$/.test(name)) return failed(`${tool}: the name argument is required`);
  const file = path.join(folder, `${name}.yaml`);
  const exists = existsSync(file);
  if (tool === 'core_workflow_delete') {
    if (!exists) return failed(`workflow ${name} not found`);
    await rm(file);
    await catalog.reload();
    return { isError: false, text: `workflow ${name} deleted` };
  }
  if (tool === 'core_workflow_create' && exists) return failed(`workflow ${name} already exists`);
  if (tool === 'core_workflow_update' && !exists) return failed(`workflow ${name} not found`);
  const previous = exists ? await import('node:fs/promises').then((fs) => fs.readFile(file, 'utf8')) : undefined;
  await writeFile(file, stringify(args));
  const report = await catalog.reload();
  const problems = report.errors.filter((error) => error.includes(`${name}.yaml`));
  if (problems.length > 0) {
    if (previous !== undefined) await writeFile(file, previous);
    else await rm(file);
    await catalog.reload();
    return failed(`${tool}: workflow validation failed for ${name}: ${problems.join('; ')}`);
  }
  return { isError: false, text: `workflow ${name} ${tool === 'core_workflow_create' ? 'created' : 'updated'}` };
}
