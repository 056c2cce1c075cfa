/**
 * `taskvisor workflows validate|run`: for workflow authors.
 *
 *   validate [DIR] [--config FILE]   checks every file of DIR (default: the config's workflows.dir);
 *                                    with a config, also that every tool a step calls exists and no
 *                                    workflow name collides with a tool
 *   run NAME --config FILE [--arg K=V]… [--input KEY=JSON]… [--json]
 *                                    runs one workflow in this process with the config's tools (no
 *                                    server, no store): progress on stderr, the result on stdout
 *
 *   runs [ID] --config FILE [--owner O] [--workflow W] [--status S] [--limit N] [--json]
 *                                    the run history in the config's store (every principal's:
 *                                    an admin view, read only), or one run with its steps
 *
 * With a config that has `upstreams`, validate and run connect to them first (waiting up
 * to --upstream-timeout, default 15 s) and use their tools, as the server does.
 */
import { rm } from 'node:fs/promises';
import os from 'node:os';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { ConfigError, loadConfig, loadToolModules, resolveFromConfig, type LoadedConfig } from '../config/loadConfig.js';
import type { InputRequest } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import { silentLogger, stderrLogger } from '../runtime/Logger.js';
import { createRuntime, type TaskvisorRuntime } from '../server/TaskvisorRuntime.js';
import { MemoryTaskStore } from '../store/MemoryTaskStore.js';
import { checkWorkflowSet, loadWorkflowDir } from '../workflows/loading/loadWorkflows.js';
import { toolsCalledBy } from '../workflows/model/toolsCalledBy.js';
import { DEFAULT_WORKFLOW_PREFIX } from '../workflows/loading/WorkflowCatalog.js';
import { openConfiguredWorkflows } from '../workflows/loading/configured.js';
import { ToolInvoker } from '../workflows/engine/ToolInvoker.js';
import { upstreamsOf } from '../upstreams/fromConfig.js';
import { createTaskStore } from '../store/index.js';
import { RUN_STATUSES, RunHistory, type RunStatus } from '../workflows/history/RunHistory.js';
import { storeConfigOf } from './serve.js';
import { DEFAULT_TOOL_NAMESPACE, upstreamToolPrefix } from '../upstreams/toolNames.js';
import { isHelpWord, parseCommandLine, UsageError, type CliIo } from './usage.js';

export const WORKFLOWS_USAGE = `Usage:
  taskvisor workflows validate [DIR] [--config FILE] [--upstream-timeout MS]
      Validate the workflow files of DIR (default: workflows.dir of the config).
      With --config, also check that every tool a step calls exists and that
      no workflow name collides with a tool; the config's upstreams are
      connected first and their tools count. Exit 1 on any problem.
  taskvisor workflows run NAME --config FILE [--arg K=V]... [--input KEY=JSON]... [--json] [--upstream-timeout MS]
      Run one workflow in this process with the config's tools and workflows
      (no server, no store). V is JSON when it parses, else a string.
      Progress goes to stderr, the result to stdout (--json: the whole
      CallToolResult). Input requests are answered by --input KEY=JSON
      (accepted with that content) or, one per line, from stdin (a JSON
      object accepts, an empty line declines, "cancel" cancels).
      Exit 0 when the workflow succeeded, 1 when it failed, 2 for a bad
      command line.
  taskvisor workflows runs [ID] --config FILE [--owner O] [--workflow W] [--status S] [--limit N] [--json]
      The run history in the config's store (every principal's runs, newest
      first), or run ID with its step records. Read only; safe while a server
      runs with sqlite. S is one of ${RUN_STATUSES.join(', ')}.
`;

export async function workflowsCommand(argv: string[], io: CliIo = process): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined) throw new UsageError('workflows: missing subcommand (validate, run or runs)', WORKFLOWS_USAGE);
  if (isHelpWord(sub)) {
    io.stdout.write(WORKFLOWS_USAGE);
    return 0;
  }
  switch (sub) {
    case 'validate':
      return validate(rest, io);
    case 'run':
      return run(rest, io);
    case 'runs':
      return runs(rest, io);
    default:
      throw new UsageError(`workflows: unknown subcommand ${JSON.stringify(sub)}; valid subcommands: validate, run, runs`, WORKFLOWS_USAGE);
  }
}

/** The config's tools, with its upstreams connected (or given up on); `close()` stops them. */
interface ConfigTools {
  runtime: TaskvisorRuntime;
  /** Upstreams that did not connect, with the tool-name prefix their tools would have. */
  down: Array<{ name: string; prefix: string; why: string }>;
  close: () => Promise<void>;
}

/**
 * A runtime holding the config's tools and, when the config has upstreams,
 * their forwarded tools: it connects to them as `serve` does (a memory store,
 * a throwaway state file, nothing served) and waits until each is ready or
 * has failed, at most `timeoutMs`.
 */
async function toolsOf(loaded: LoadedConfig, timeoutMs = 15_000): Promise<ConfigTools> {
  const upstreams = upstreamsOf(loaded);
  const stateFile = path.join(os.tmpdir(), `taskvisor-cli-state-${process.pid}-${Date.now()}.json`);
  const namespace = loaded.config.aggregator?.toolNamespace ?? DEFAULT_TOOL_NAMESPACE;
  const runtime = createRuntime({
    store: new MemoryTaskStore(),
    logger: silentLogger,
    ...(upstreams.length > 0 ? { upstreams, stateFile, toolNamespace: namespace } : {}),
  });
  await loadToolModules(loaded, runtime);
  const down: ConfigTools['down'] = [];
  if (runtime.upstreams) {
    await runtime.start();
    // Through backoff retries until ready, failed for good, or out of time.
    const settled = (state: string) => state === 'ready' || state === 'degraded' || state === 'failed';
    await Promise.all(
      upstreams.map(async (spec) => {
        const status = await runtime.upstreams!.waitFor(spec.name, (s) => settled(s.state), timeoutMs).catch(() => undefined);
        const state = status?.state ?? runtime.upstreams!.status().find((s) => s.name === spec.name)?.state ?? 'unknown';
        if (state !== 'ready' && state !== 'degraded') {
          const prefix = upstreamToolPrefix(namespace, spec.toolPrefix ?? spec.name.replaceAll('_', '-'));
          down.push({ name: spec.name, prefix, why: `${state}${status?.lastError ? `: ${status.lastError}` : ''}` });
        }
      }),
    );
  }
  return {
    runtime,
    down,
    close: async () => {
      if (runtime.upstreams) await runtime.close();
      await rm(stateFile, { force: true });
    },
  };
}

async function validate(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    { config: { type: 'string', short: 'c' }, 'upstream-timeout': { type: 'string' } },
    WORKFLOWS_USAGE,
    { positionals: true },
  );
  if (values.help) {
    io.stdout.write(WORKFLOWS_USAGE);
    return 0;
  }
  if (positionals.length > 1) throw new UsageError('workflows validate: give one folder', WORKFLOWS_USAGE);
  const upstreamTimeout = timeoutOption(values['upstream-timeout']);
  const loaded = values.config ? await loadConfig(values.config) : undefined;
  const dir = positionals[0] ?? (loaded?.config.workflows ? resolveFromConfig(loaded, loaded.config.workflows.dir) : undefined);
  if (!dir) throw new UsageError('workflows validate: give one folder, or --config FILE with a workflows section', WORKFLOWS_USAGE);
  const prefix = loaded?.config.workflows?.prefix ?? DEFAULT_WORKFLOW_PREFIX;
  const { definitions, errors } = await loadWorkflowDir(dir);
  const problems = [...errors, ...checkWorkflowSet(definitions, prefix)].map((error) => error.message);
  if (loaded) {
    const { runtime, down, close } = await toolsOf(loaded, upstreamTimeout);
    try {
      for (const upstream of down)
        problems.push(`upstream ${upstream.name} did not connect (${upstream.why}); its tools cannot be checked`);
      const workflowTools = new Set(definitions.map((definition) => prefix + definition.name));
      for (const definition of definitions) {
        const where = path.relative(process.cwd(), definition.file) || definition.file;
        if (runtime.tools.has(prefix + definition.name))
          problems.push(`${where}: the tool name ${prefix + definition.name} is taken by a tool of the config`);
        for (const tool of toolsCalledBy(definition)) {
          if (runtime.tools.has(tool) || workflowTools.has(tool)) continue;
          const upstream = down.find((entry) => tool.startsWith(entry.prefix));
          if (!upstream) problems.push(`${where}: a step calls the tool ${tool}, which the config does not provide`);
        }
      }
    } finally {
      await close();
    }
  }
  for (const definition of definitions) {
    process.stdout.write(
      `${prefix}${definition.name}\t${definition.steps.length} step(s)\t${path.relative(process.cwd(), definition.file) || definition.file}\n`,
    );
  }
  if (problems.length > 0) {
    process.stderr.write(`${problems.join('\n')}\n`);
    process.stderr.write(`${problems.length} problem(s) found\n`);
    return 1;
  }
  process.stderr.write(`${definitions.length} workflow(s) valid\n`);
  return 0;
}

/** `K=V` with V as JSON when it parses, else the string. */
function parseAssignment(flag: string, text: string, json: boolean): [string, unknown] {
  const eq = text.indexOf('=');
  if (eq <= 0) throw new UsageError(`${flag} ${text}: expected KEY=VALUE`, WORKFLOWS_USAGE);
  const key = text.slice(0, eq);
  const raw = text.slice(eq + 1);
  try {
    return [key, JSON.parse(raw) as unknown];
  } catch (error) {
    if (json) throw new UsageError(`${flag} ${text}: the value is not JSON: ${(error as Error).message}`, WORKFLOWS_USAGE);
    return [key, raw];
  }
}

async function run(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    {
      config: { type: 'string', short: 'c' },
      arg: { type: 'string', multiple: true },
      input: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      'upstream-timeout': { type: 'string' },
    },
    WORKFLOWS_USAGE,
    { positionals: true },
  );
  if (values.help) {
    io.stdout.write(WORKFLOWS_USAGE);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError('workflows run: give exactly one workflow NAME', WORKFLOWS_USAGE);
  if (!values.config) {
    throw new UsageError('workflows run: --config FILE is required (it names the tools and the workflows folder)', WORKFLOWS_USAGE);
  }
  const timeout = timeoutOption(values['upstream-timeout']);
  const args = Object.fromEntries((values.arg ?? []).map((text) => parseAssignment('--arg', text, false)));
  const answers = new Map((values.input ?? []).map((text) => parseAssignment('--input', text, true)));
  const loaded = await loadConfig(values.config);
  if (!loaded.config.workflows) throw new ConfigError(`${loaded.file}: no workflows section`);
  const tools = await toolsOf(loaded, timeout);
  const runtime = tools.runtime;
  for (const upstream of tools.down) process.stderr.write(`! upstream ${upstream.name} did not connect (${upstream.why})\n`);
  const logger = stderrLogger({ quiet: true });
  const catalog = await openConfiguredWorkflows(loaded, runtime.tools, logger);
  const prefix = loaded.config.workflows.prefix ?? DEFAULT_WORKFLOW_PREFIX;
  const name = positionals[0]!;
  const tool = catalog!.toolNames.includes(prefix + name) ? prefix + name : name;
  if (!catalog!.toolNames.includes(tool)) {
    throw new ConfigError(`workflows run: no workflow ${JSON.stringify(name)} (have: ${catalog!.toolNames.join(', ') || 'none'})`);
  }
  const lines = stdinLines();
  const controller = new AbortController();
  const onSigint = () => controller.abort(new DOMException('Interrupted (SIGINT)', 'AbortError'));
  process.once('SIGINT', onSigint);
  try {
    const result = await new ToolInvoker(runtime.tools).invoke({
      name: tool,
      args: args,
      principal: 'local',
      signal: controller.signal,
      clientCapabilities: { elicitation: { form: {} } },
      onStatus: (message) => process.stderr.write(`… ${message}\n`),
      requestInput: (key, request) => answer(key, request, answers, lines),
    });
    if (values.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else {
      const content = (result.content as Array<{ type: string; text?: string }>) ?? [];
      process.stdout.write(`${content.map((block) => (block.type === 'text' ? block.text : JSON.stringify(block))).join('\n')}\n`);
    }
    process.stderr.write(result.isError === true ? `✗ ${tool} failed\n` : `✓ ${tool} completed\n`);
    return result.isError === true ? 1 : 0;
  } catch (error) {
    const coded = error as { code?: unknown; message?: string };
    process.stderr.write(`✗ ${tool}: ${coded.message ?? String(error)}${typeof coded.code === 'number' ? ` (${coded.code})` : ''}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSigint);
    lines.close();
    await tools.close();
  }
}

/** `--upstream-timeout` in milliseconds (default 15 s). */
function timeoutOption(text: string | undefined): number {
  if (text === undefined) return 15_000;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new UsageError(`--upstream-timeout ${text}: expected milliseconds`, WORKFLOWS_USAGE);
  return value;
}

/** Lines of stdin, read on demand. */
function stdinLines(): { next: () => Promise<string | undefined>; close: () => void } {
  let reader: ReturnType<typeof createInterface> | undefined;
  let iterator: AsyncIterator<string> | undefined;
  return {
    next: async () => {
      reader ??= createInterface({ input: process.stdin, terminal: false });
      iterator ??= reader[Symbol.asyncIterator]();
      const { value, done } = await iterator.next();
      return done ? undefined : value;
    },
    close: () => reader?.close(),
  };
}

async function answer(
  key: string,
  request: InputRequest,
  answers: Map<string, unknown>,
  lines: { next: () => Promise<string | undefined> },
): Promise<unknown> {
  if (request.method !== 'elicitation/create') throw new Error(`This command cannot answer ${request.method}`);
  if (answers.has(key)) return { action: 'accept', content: answers.get(key) };
  const params = request.params as { message?: string; requestedSchema?: unknown };
  process.stderr.write(
    `? ${params.message ?? key}\n  [${key}] answer with a JSON object for ${JSON.stringify(params.requestedSchema)} (empty line: decline; "cancel": cancel)\n`,
  );
  const line = (await lines.next())?.trim();
  if (line === undefined || line === '') return { action: 'decline' };
  if (line === 'cancel') return { action: 'cancel' };
  try {
    return { action: 'accept', content: JSON.parse(line) as unknown };
  } catch {
    throw new Error(`the answer to ${key} is not JSON: ${line}`);
  }
}

/** `workflows runs [ID]`: the run history of the config's store, out of band (every principal's runs). */
async function runs(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    {
      config: { type: 'string', short: 'c' },
      owner: { type: 'string' },
      workflow: { type: 'string' },
      status: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
    },
    WORKFLOWS_USAGE,
    { positionals: true },
  );
  if (values.help) {
    io.stdout.write(WORKFLOWS_USAGE);
    return 0;
  }
  if (!values.config) throw new UsageError('workflows runs: --config FILE is required (it names the store)', WORKFLOWS_USAGE);
  if (positionals.length > 1)
    throw new UsageError(`workflows runs: give at most one run ID (got ${positionals.join(' ')})`, WORKFLOWS_USAGE);
  if (values.status !== undefined && !RUN_STATUSES.includes(values.status as RunStatus))
    throw new ConfigError(`--status ${values.status}: expected one of ${RUN_STATUSES.join(', ')}`);
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isInteger(limit) || limit <= 0 || limit > 1000)
    throw new ConfigError(`--limit ${values.limit}: expected an integer from 1 to 1000`);
  const loaded = await loadConfig(values.config);
  const storeConfig = storeConfigOf(loaded);
  if (storeConfig.kind === 'memory') throw new ConfigError(`${loaded.file}: the store is memory: nothing outlives the server to read`);
  const section = loaded.config.workflows;
  const store = createTaskStore(storeConfig, { lock: false });
  await store.open();
  try {
    const history = new RunHistory({
      store,
      ...(section?.historyRetentionMs !== undefined ? { retentionMs: section.historyRetentionMs } : {}),
      ...(section?.historyMaxRuns !== undefined ? { maxRuns: section.historyMaxRuns } : {}),
    });
    if (positionals.length === 1) {
      const detail = await history.get(positionals[0]!, values.owner);
      if (!detail) {
        io.stderr.write(`taskvisor: no workflow run ${positionals[0]} in the store\n`);
        return 1;
      }
      if (values.json) {
        io.stdout.write(`${JSON.stringify(detail, null, 2)}\n`);
        return 0;
      }
      const out = [
        `run       ${detail.execution_id}${detail.task ? ' (a task)' : ''}`,
        `workflow  ${detail.workflow_name}`,
        `status    ${detail.status}${detail.error ? ` — ${detail.error}` : ''}`,
        `started   ${detail.started_at}`,
        ...(detail.completed_at ? [`ended     ${detail.completed_at} (${detail.duration_ms} ms)`] : []),
        `input     ${JSON.stringify(detail.input)}`,
        'steps:',
        ...(detail.steps ?? []).map(
          (step) =>
            `  ${step.step_id}\t${step.status}\t${step.tool ?? ''}\t${step.started_at}${step.duration_ms !== undefined ? `\t${step.duration_ms} ms` : ''}${step.error ? `\t${step.error}` : ''}`,
        ),
      ];
      io.stdout.write(`${out.join('\n')}\n`);
      return 0;
    }
    const listed = await history.list({
      limit,
      ...(values.owner !== undefined ? { owner: values.owner } : {}),
      ...(values.workflow !== undefined ? { workflow: values.workflow } : {}),
      ...(values.status !== undefined ? { status: values.status as RunStatus } : {}),
    });
    if (values.json) {
      io.stdout.write(`${JSON.stringify(listed, null, 2)}\n`);
      return 0;
    }
    io.stdout.write('RUN ID\tWORKFLOW\tSTATUS\tSTARTED\tMS\tSTEPS\tERROR\n');
    for (const run of listed.executions) {
      io.stdout.write(
        `${run.execution_id}\t${run.workflow_name}\t${run.status}\t${run.started_at}\t${run.duration_ms}\t${run.step_count}\t${run.error ?? ''}\n`,
      );
    }
    if (listed.has_more) io.stdout.write(`(${listed.total - listed.executions.length} more; --limit)\n`);
    return 0;
  } finally {
    await store.close();
  }
}
