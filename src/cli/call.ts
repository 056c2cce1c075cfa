/**
 * `taskvisor call`: run a tool of any MCP server from the terminal,
 * as a task when the server makes it one.
 */
import { EXIT, connectOrReport, endpointOf, inputHandler, lineReader, runRemote, statusReporter } from './remote.js';
import { ArgumentError, coerceArgument, type ToolListing } from './toolSchema.js';
import type { TasksClient } from '../client/index.js';
import { parseCommandLine, UsageError, type CliIo } from './usage.js';

export const CALL_USAGE = `Usage: taskvisor call URL TOOL [--arg K=V]... [options]
       taskvisor call --stdio "CMD ARGS..." TOOL [--arg K=V]... [options]

Calls TOOL on an MCP server (Streamable HTTP at http(s)://…, WebSocket at
ws(s)://…, or a server spawned with --stdio) and prints its result on stdout.
When the call becomes a task, its status and statusMessage are shown live on
stderr (one status line on a terminal, a line per change otherwise); input
requests are asked field by field; Ctrl-C cancels the task (twice: quit).

Options:
  --stdio CMD           Spawn CMD (quote it; split on spaces) and speak MCP on its stdio
  --arg K=V             A tool argument (repeatable), read by the tool's input
                        schema: a string field takes V as it is, a number or
                        boolean field parses it, an enum field must be one of
                        its values; otherwise V is JSON when it parses, else a string
  --args JSON           All arguments as one JSON object (--arg entries are merged in)
  --input KEY=JSON      Answer input request KEY by accepting JSON (repeatable)
  --no-input            Never ask: requests without --input are declined
  --header 'N: V'       Extra HTTP/WebSocket header (repeatable), e.g. 'Authorization: Bearer …'
  --json                Print the whole CallToolResult (or the error) as JSON
  -q, --quiet           No status on stderr
  --verbose             Show a --stdio server's stderr
  -h, --help            Show this text

Exit codes: 0 result, 1 result with isError, 2 bad command line, 3 cannot
reach the server, 4 JSON-RPC error or failed task, 5 task cancelled
elsewhere, 130 cancelled with Ctrl-C.
`;

/** Options shared with `tasks watch`. */
export const REMOTE_OPTIONS = {
  stdio: { type: 'string' },
  url: { type: 'string' },
  header: { type: 'string', multiple: true },
  input: { type: 'string', multiple: true },
  'no-input': { type: 'boolean' },
  json: { type: 'boolean' },
  quiet: { type: 'boolean', short: 'q' },
  verbose: { type: 'boolean' },
} as const;

export async function callCommand(argv: string[], io: CliIo = process): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    { ...REMOTE_OPTIONS, arg: { type: 'string', multiple: true }, args: { type: 'string' } },
    CALL_USAGE,
    { positionals: true },
  );
  if (values.help) {
    io.stdout.write(CALL_USAGE);
    return 0;
  }
  const viaStdio = values.stdio !== undefined;
  const expected = viaStdio ? 1 : 2;
  if (positionals.length !== expected) {
    throw new UsageError(viaStdio ? 'give the TOOL name after --stdio CMD' : 'give the server URL and the TOOL name', CALL_USAGE);
  }
  const [url, tool] = viaStdio ? [undefined, positionals[0]!] : [positionals[0]!, positionals[1]!];
  const endpoint = endpointOf({ url, stdio: values.stdio, headers: values.header, verbose: values.verbose }, CALL_USAGE, io);
  const pairs = (values.arg ?? []).map(splitPair);
  const json = jsonArguments(values.args);
  const answers = answersOf(values.input ?? [], CALL_USAGE);

  const client = await connectOrReport(endpoint, io, true);
  if (!client) return EXIT.unreachable;
  let args: Record<string, unknown>;
  try {
    const listing = pairs.length > 0 ? await toolListing(client, tool) : undefined;
    args = { ...json, ...Object.fromEntries(pairs.map(([key, raw]) => [key, coerceArgument(listing, key, raw)])) };
  } catch (error) {
    await client.close().catch(() => undefined);
    if (error instanceof ArgumentError) throw new UsageError(error.message, CALL_USAGE);
    throw error;
  }
  const status = statusReporter(io.stderr, values.quiet === true);
  const lines = lineReader();
  try {
    return await runRemote(io, status, values.json === true, (signal) =>
      client.callTool(tool, args, {
        signal,
        onStatus: (update) => status.update(update),
        onTask: (taskId) => status.note(`task ${taskId}`),
        onInputRequest: inputHandler(answers, values['no-input'] !== true, io, status, lines),
      }),
    );
  } finally {
    lines.close();
    await client.close().catch(() => undefined);
  }
}

/** `--args JSON`: an object. */
function jsonArguments(json: string | undefined): Record<string, unknown> {
  if (json === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw new UsageError(`--args: not JSON: ${(error as Error).message}`, CALL_USAGE);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UsageError('--args: expected a JSON object', CALL_USAGE);
  return parsed as Record<string, unknown>;
}

/** `--arg K=V` as [K, V]. */
function splitPair(pair: string): [string, string] {
  const eq = pair.indexOf('=');
  if (eq <= 0) throw new UsageError(`--arg ${pair}: expected KEY=VALUE`, CALL_USAGE);
  return [pair.slice(0, eq), pair.slice(eq + 1)];
}

/**
 * The tool as tools/list describes it, to read `--arg` values by its schema; undefined when the server does
 * not list it (the call then sends JSON-or-text values and the server says what it thinks of them).
 */
async function toolListing(client: TasksClient, name: string): Promise<ToolListing | undefined> {
  try {
    return (await client.listTools()).find((tool) => tool.name === name);
  } catch {
    return undefined;
  }
}

/** `--input KEY=JSON` answers, by input request key. */
export function answersOf(pairs: string[], usage: string): Map<string, unknown> {
  const answers = new Map<string, unknown>();
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--input ${pair}: expected KEY=JSON`, usage);
    try {
      answers.set(pair.slice(0, eq), JSON.parse(pair.slice(eq + 1)));
    } catch (error) {
      throw new UsageError(`--input ${pair}: the value is not JSON: ${(error as Error).message}`, usage);
    }
  }
  return answers;
}
