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
 * With a config that has `upstreams`, both connect to them first (waiting up
 * to --upstream-timeout, default 15 s) and use their tools, as the server does.
 */
import { rm } from 'node:fs/promises';
import os from 'node:os';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { ConfigError, loadConfig, loadToolModules, resolveFromConfig, type LoadedConfig } from '../config/loadConfig.js';
import type { InputRequest, JsonObject } from '../../machines/task/index.js';
import { silentLogger, stderrLogger } from '../runtime/Logger.js';
import { createRuntime, type TaskvisorRuntime } from '../server/TaskvisorRuntime.js';
import { MemoryTaskStore } from '../store/MemoryTaskStore.js';
import { checkWorkflowSet, loadWorkflowDir, toolsCalledBy } from '../workflows/loadWorkflows.js';
import { DEFAULT_WORKFLOW_PREFIX } from '../workflows/WorkflowCatalog.js';
import { openConfiguredWorkflows } from '../workflows/configured.js';
import { ToolInvoker } from '../workflows/ToolInvoker.js';
import { upstreamsOf } from '../upstreams/fromConfig.js';
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
`;

export async function workflowsCommand(argv: string[], io: CliIo = process): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined) throw new UsageError('workflows: missing subcommand (validate or run)', WORKFLOWS_USAGE);
  if (isHelpWord(sub)) {
    io.stdout.write(WORKFLOWS_USAGE);
    return 0;
  }
  switch (sub) {
    case 'validate':
      return validate(rest, io);
    case 'run':
      return run(rest, io);
    default:
      throw new UsageError(`workflows: unknown subcommand ${JSON.stringify(sub)}; valid subcommands: validate, run`, WORKFLOWS_USAGE);
  }
}

/** The config's tools, with its upstreams connected (or given up on); `close()` stops them. */
interface ConfigTools {
  runtime: TaskvisorRuntime;
  /** Upstreams that did not connect, with the tool-name prefix their tools would have. */
  down: Array<{ name: string; prefix: string; why: string }>;
  close(): Promise<void>;
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
      args: args as JsonObject,
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
      return done ? undefined : (value as string);
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
