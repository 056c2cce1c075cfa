/**
 * `taskvisor tasks list|show|check`: the out-of-band admin view of the runs in the
 * store a config names. Read only; never on the wire. With sqlite it is safe
 * while a server uses the file (WAL readers); with lowdb it reads the files.
 */
import type { TaskStatus } from '../../machines/task/index.js';
import { TASK_STATUSES } from '../core/statuses.js';
import { existsSync } from 'node:fs';
import { ConfigError, loadConfig, type LoadedConfig } from '../config/loadConfig.js';
import { createTaskStore, DEFAULT_SQLITE_FILE, type TaskStoreConfig } from '../store/index.js';
import type { TaskStore } from '../store/TaskStore.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { WorkflowCheckpoint } from '../workflows/engine/WorkflowRun.js';
import { DEMO_CONFIG, storeConfigOf } from './serve.js';
import { checkStore } from './tasksCheck.js';
import { isHelpWord, parseCommandLine, UsageError, type CliIo } from './usage.js';
import { answersOf, REMOTE_OPTIONS } from './call.js';
import { EXIT, connectOrReport, endpointOf, inputHandler, lineReader, runRemote, statusReporter } from './remote.js';

export const TASKS_USAGE = `Usage:
  taskvisor tasks list (--config FILE | --demo) [--status S]... [--owner O] [--tool T] [--limit N] [--json]
      Tasks in the config's store, newest first, read from the store (no server
      needed; synchronous workflow runs are in \`workflows runs\`). --demo reads
      the store of \`taskvisor serve --demo\` (npm start) run in this folder.
  taskvisor tasks show TASK_ID (--config FILE | --demo) [--json]
      One task: status, result or error, and a workflow run's step records.
      TASK_ID may be the start of an id, when only one task's id starts so.
  taskvisor tasks check (--config FILE | --demo) [--repair] [--json]
      Finds records the server cannot serve (unreadable or invalid) and lists
      those set aside; exits 1 when damaged records are still in the live set.
      --repair quarantines them (kept, never deleted); it needs the store's
      lock, so stop the server first.
  taskvisor tasks get TASK_ID (--url URL | --stdio CMD) [--json]
      A task as the server's tasks/get answers it (works with any Tasks server;
      a server knows a task by its whole id, as \`taskvisor call\` prints it).
  taskvisor tasks cancel TASK_ID (--url URL | --stdio CMD) [--json]
      Cancel a task (tasks/cancel); prints the status it ended in.
  taskvisor tasks watch TASK_ID (--url URL | --stdio CMD) [--input KEY=JSON]... [--no-input] [--json] [-q]
      Follow a task created elsewhere to its end, as taskvisor call does: live
      status, input requests asked, Ctrl-C cancels; prints the result.
  Also for get/cancel/watch: --header 'N: V' (repeatable), --verbose.

Exit codes of watch: those of taskvisor call (0, 1 isError, 3, 4 failed, 5, 130).
get/cancel: 0, 3 cannot reach the server, 4 refused (e.g. unknown task -32602).
`;

const STATUSES = new Set<TaskStatus>(TASK_STATUSES);
const TERMINAL = new Set<string>(['completed', 'failed', 'cancelled']);

export async function tasksCommand(argv: string[], io: CliIo = process): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined) throw new UsageError('tasks: missing subcommand (list, show or check)', TASKS_USAGE);
  if (isHelpWord(sub)) {
    io.stdout.write(TASKS_USAGE);
    return 0;
  }
  if (sub === 'get' || sub === 'cancel' || sub === 'watch') return remoteTaskCommand(sub, rest, io);
  if (sub !== 'list' && sub !== 'show' && sub !== 'check') {
    throw new UsageError(
      `tasks: unknown subcommand ${JSON.stringify(sub)}; valid subcommands: list, show, check, get, cancel, watch`,
      TASKS_USAGE,
    );
  }
  const { values, positionals } = parseCommandLine(
    rest,
    {
      config: { type: 'string', short: 'c' },
      demo: { type: 'boolean' },
      status: { type: 'string', multiple: true },
      owner: { type: 'string' },
      tool: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
      repair: { type: 'boolean' },
    },
    TASKS_USAGE,
    { positionals: true },
  );
  if (values.help) {
    io.stdout.write(TASKS_USAGE);
    return 0;
  }
  if (values.config !== undefined && values.demo) throw new UsageError(`tasks ${sub}: give --config FILE or --demo, not both`, TASKS_USAGE);
  const configFile = values.demo ? DEMO_CONFIG : values.config;
  if (!configFile) throw new UsageError(`tasks ${sub}: --config FILE (it names the store) or --demo is required`, TASKS_USAGE);
  if (sub !== 'show' && positionals.length > 0) throw new UsageError(`tasks ${sub}: unexpected ${positionals.join(' ')}`, TASKS_USAGE);
  if (sub !== 'check' && values.repair) throw new UsageError(`tasks ${sub}: --repair belongs to tasks check`, TASKS_USAGE);
  if (sub === 'show' && positionals.length !== 1) throw new UsageError('tasks show: give exactly one TASK_ID', TASKS_USAGE);
  const loaded = await loadConfig(configFile);
  const storeConfig = storeConfigOf(loaded);
  if (storeConfig.kind === 'memory') throw new ConfigError(`${loaded.file}: the store is memory: nothing outlives the server to read`);
  // Read-only commands report a store that is not there; opening it would make an empty one.
  checkStoreExists(loaded, storeConfig);
  if (sub === 'check') return checkStore(storeConfig, { repair: values.repair === true, json: values.json === true }, io);
  // Read only: no lock, so it works next to a server using the store (which holds the lock).
  const store = createTaskStore(storeConfig, { lock: false });
  await store.open();
  try {
    return sub === 'list' ? await list(store, values, positionals) : await show(store, values, positionals);
  } finally {
    await store.close();
  }
}

async function list(
  store: TaskStore,
  values: { status?: string[]; owner?: string; tool?: string; limit?: string; json?: boolean },
  positionals: string[],
): Promise<number> {
  for (const status of values.status ?? []) {
    if (!STATUSES.has(status as TaskStatus)) throw new ConfigError(`--status ${status}: expected one of ${[...STATUSES].join(', ')}`);
  }
  const limit = values.limit === undefined ? 100 : Number(values.limit);
  if (!Number.isInteger(limit) || limit <= 0) throw new ConfigError(`--limit ${values.limit}: expected a positive integer`);
  // A synchronous workflow run's history record is not a task (`workflows runs` shows it): left out, asking further as needed.
  const wanted = (record: TaskRecord) => !record.historyOnly && (values.tool === undefined || record.tool === values.tool);
  let records: TaskRecord[] = [];
  for (let fetch = limit; ; fetch *= 4) {
    const page = await store.list({
      ...(values.status ? { status: values.status as TaskStatus[] } : {}),
      ...(values.owner !== undefined ? { owner: values.owner } : {}),
      limit: fetch,
    });
    records = page.filter(wanted).slice(0, limit);
    if (records.length >= limit || page.length < fetch) break;
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify(records.map(summary), null, 2)}\n`);
    return 0;
  }
  process.stdout.write('TASK ID\tSTATUS\tTOOL\tOWNER\tCREATED\tUPDATED\tMESSAGE\n');
  for (const record of records) {
    const row = summary(record);
    process.stdout.write(
      `${row.taskId}\t${row.status}\t${row.tool}\t${row.owner}\t${row.createdAt}\t${row.lastUpdatedAt}\t${row.statusMessage ?? ''}\n`,
    );
  }
  return 0;
}

function summary(record: TaskRecord) {
  return {
    taskId: record.taskId,
    status: record.status,
    tool: record.tool,
    owner: record.owner,
    createdAt: new Date(record.createdAt).toISOString(),
    lastUpdatedAt: new Date(record.lastUpdatedAt).toISOString(),
    ...(record.statusMessage !== undefined ? { statusMessage: record.statusMessage } : {}),
  };
}

async function show(store: TaskStore, values: { json?: boolean }, positionals: string[]): Promise<number> {
  const record = await recordByIdOrPrefix(store, positionals[0]!);
  if (!record) {
    process.stderr.write(`taskvisor: no task ${positionals[0]} in the store\n`);
    return 1;
  }
  const { snapshot: _internal, ...shown } = record;
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ ...summary(record), ...shown, createdAt: summary(record).createdAt, lastUpdatedAt: summary(record).lastUpdatedAt }, null, 2)}\n`,
    );
    return 0;
  }
  const row = summary(record);
  const out = [
    `task      ${row.taskId}${record.historyOnly ? ' (a synchronous workflow run: a history record, not a task; see workflows runs)' : ''}`,
    `tool      ${row.tool}`,
    `owner     ${row.owner}`,
    `status    ${row.status}${row.statusMessage ? ` — ${row.statusMessage}` : ''}`,
    `created   ${row.createdAt}`,
    `updated   ${row.lastUpdatedAt}`,
  ];
  if (record.inputRequests) out.push(`waiting   ${Object.keys(record.inputRequests).join(', ')}`);
  if (record.error) out.push(`error     ${record.error.code} ${record.error.message}`);
  if (record.result) out.push(`result    ${JSON.stringify(record.result)}`);
  const checkpoint = record.checkpoint as Partial<WorkflowCheckpoint> | undefined;
  if (checkpoint?.kind === 'taskvisor.workflow' && Array.isArray(checkpoint.steps)) {
    out.push(`steps of workflow ${checkpoint.workflow}:`);
    for (const step of checkpoint.steps) {
      out.push(
        `  ${step.id}\t${step.status}\t${step.tool ?? ''}\t${step.startedAt}${step.durationMs !== undefined ? `\t${step.durationMs} ms` : ''}${step.error ? `\t${step.error.message}` : ''}`,
      );
    }
  } else if (record.checkpoint !== undefined) out.push(`checkpoint ${JSON.stringify(record.checkpoint)}`);
  process.stdout.write(`${out.join('\n')}\n`);
  return 0;
}

/**
 * The task whose id is `id`, or else the one task whose id starts with `id`: what a terminal shows is often
 * the start of an id. Several matches are refused, naming them, rather than picking one.
 */
async function recordByIdOrPrefix(store: TaskStore, id: string): Promise<TaskRecord | undefined> {
  const exact = await store.get(id);
  if (exact || id === '') return exact;
  const matches = (await store.list()).filter((record) => record.taskId.startsWith(id));
  if (matches.length > 1) {
    const shown = matches.slice(0, 10).map((record) => `  ${record.taskId}  ${record.status}  ${record.tool}`);
    throw new ConfigError(
      `task id ${id} is ambiguous: ${matches.length} tasks start with it; give more of the id:\n${shown.join('\n')}${matches.length > 10 ? '\n  …' : ''}`,
    );
  }
  return matches[0];
}

/** Refuses a store that is not there, saying where it was looked for and, for the default, why there. */
function checkStoreExists(loaded: LoadedConfig, storeConfig: TaskStoreConfig): void {
  if (storeConfig.kind !== 'lowdb' && storeConfig.kind !== 'sqlite') return;
  const where = storeConfig.kind === 'lowdb' ? storeConfig.dir : storeConfig.file;
  if (existsSync(where)) return;
  const section = loaded.config.store;
  const named = section?.kind === 'lowdb' ? section.dir : section?.kind === 'sqlite' ? section.file : undefined;
  const why =
    named === undefined
      ? `the config names no store, so it is the default, ${storeConfig.kind === 'lowdb' ? './.taskvisor' : DEFAULT_SQLITE_FILE} in the working directory: run this in the folder the server runs in, or name the store in the config`
      : `store.${storeConfig.kind === 'lowdb' ? 'dir' : 'file'} ${named} is relative to the config file`;
  throw new ConfigError(`${loaded.file}: no ${storeConfig.kind} store at ${where} (${why}); a server makes it when it first starts`);
}

/** `tasks get|cancel|watch TASK_ID --url URL | --stdio CMD`: a task on a running server. */
async function remoteTaskCommand(sub: 'get' | 'cancel' | 'watch', argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, REMOTE_OPTIONS, TASKS_USAGE, { positionals: true });
  if (values.help) {
    io.stdout.write(TASKS_USAGE);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError(`tasks ${sub}: give exactly one TASK_ID`, TASKS_USAGE);
  const taskId = positionals[0]!;
  const endpoint = endpointOf({ url: values.url, stdio: values.stdio, headers: values.header, verbose: values.verbose }, TASKS_USAGE);
  const answers = answersOf(values.input ?? [], TASKS_USAGE);
  const client = await connectOrReport(endpoint, io, sub === 'watch');
  if (!client) return EXIT.unreachable;
  const status = statusReporter(io.stderr, values.quiet === true);
  const lines = lineReader();
  try {
    if (sub === 'watch') {
      return await runRemote(io, status, values.json === true, (signal) =>
        client.watchTask(taskId, {
          signal,
          onStatus: (update) => status.update(update),
          onInputRequest: inputHandler(answers, values['no-input'] !== true, io, status, lines),
        }),
      );
    }
    try {
      if (sub === 'cancel') await client.cancelTask(taskId);
      let task = await client.getTask(taskId);
      // A cancelled tool stops at its next cancellation point: the status it ends in comes a moment after
      // tasks/cancel. Asked again at the server's poll interval (capped) until the task has ended, for a while.
      for (let asked = 0; sub === 'cancel' && !TERMINAL.has(task.status) && asked < 20; asked++) {
        await new Promise((resolve) => setTimeout(resolve, Math.min(task.pollInterval ?? 250, 250)));
        task = await client.getTask(taskId);
      }
      if (values.json) io.stdout.write(`${JSON.stringify(task.raw, null, 2)}\n`);
      else {
        const raw = task.raw as { inputRequests?: Record<string, unknown>; error?: { code?: number; message?: string }; result?: unknown };
        const out = [`task      ${task.taskId}`, `status    ${task.status}${task.statusMessage ? ` — ${task.statusMessage}` : ''}`];
        if (task.createdAt) out.push(`created   ${task.createdAt}`);
        if (task.lastUpdatedAt) out.push(`updated   ${task.lastUpdatedAt}`);
        if (raw.inputRequests) out.push(`waiting   ${Object.keys(raw.inputRequests).join(', ')}`);
        if (raw.error) out.push(`error     ${raw.error.code} ${raw.error.message}`);
        if (raw.result !== undefined) out.push(`result    ${JSON.stringify(raw.result)}`);
        io.stdout.write(`${out.join('\n')}\n`);
      }
      return EXIT.completed;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      // A server looks a task up by its exact id (no prefixes over the wire): say so when it knows none.
      const hint = code === -32602 ? `; a server knows a task by its whole id, as \`taskvisor call\` prints it` : '';
      io.stderr.write(`taskvisor: ${(error as Error).message}${typeof code === 'number' ? ` (${code})` : ''}${hint}\n`);
      return typeof code === 'number' ? EXIT.failed : EXIT.unreachable;
    }
  } finally {
    lines.close();
    await client.close().catch(() => undefined);
  }
}
