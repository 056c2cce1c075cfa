/**
 * `taskvisor tools`: the tools an MCP server offers, each with its
 * arguments (name, type, required, allowed values, description), so a user
 * can write `taskvisor call … --arg K=V` without reading the server's code.
 */
import { EXIT, connectOrReport, endpointOf } from './remote.js';
import { describeArguments, type ToolListing } from './toolSchema.js';
import { parseCommandLine, UsageError, type CliIo } from './usage.js';

export const TOOLS_USAGE = `Usage: taskvisor tools URL [options]
       taskvisor tools --stdio "CMD ARGS..." [options]

Lists the tools of an MCP server (Streamable HTTP at http(s)://…, WebSocket at
ws(s)://…, or a server spawned with --stdio): each tool's description, and
each argument's name, type, whether it is required, its allowed values and
its description.

Options:
  --stdio CMD           Spawn CMD (quote it; split on spaces) and speak MCP on its stdio
  --header 'N: V'       Extra HTTP/WebSocket header (repeatable), e.g. 'Authorization: Bearer …'
  --json                Print the tools as tools/list returns them (JSON)
  --verbose             Show a --stdio server's stderr
  -h, --help            Show this text

Exit codes: 0 listed, 2 bad command line, 3 cannot reach the server.
`;

export async function toolsCommand(argv: string[], io: CliIo = process): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    { stdio: { type: 'string' }, header: { type: 'string', multiple: true }, json: { type: 'boolean' }, verbose: { type: 'boolean' } },
    TOOLS_USAGE,
    { positionals: true },
  );
  if (values.help) {
    io.stdout.write(TOOLS_USAGE);
    return 0;
  }
  const expected = values.stdio !== undefined ? 0 : 1;
  if (positionals.length !== expected) {
    throw new UsageError(
      values.stdio !== undefined ? `unexpected ${positionals.join(' ')}` : 'give the server URL (or --stdio CMD)',
      TOOLS_USAGE,
    );
  }
  const endpoint = endpointOf(
    { url: positionals[0], stdio: values.stdio, headers: values.header, verbose: values.verbose },
    TOOLS_USAGE,
    io,
  );
  const client = await connectOrReport(endpoint, io, false);
  if (!client) return EXIT.unreachable;
  try {
    let tools: ToolListing[];
    try {
      tools = await client.listTools();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      io.stderr.write(`taskvisor: tools/list: ${(error as Error).message}${typeof code === 'number' ? ` (${code})` : ''}\n`);
      return typeof code === 'number' ? EXIT.failed : EXIT.unreachable;
    }
    if (values.json) {
      io.stdout.write(`${JSON.stringify(tools, null, 2)}\n`);
      return EXIT.completed;
    }
    io.stdout.write(tools.length === 0 ? 'no tools\n' : `${tools.map(toolText).join('\n')}`);
    return EXIT.completed;
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** One tool: its name and description, then an aligned line per argument. */
function toolText(tool: ToolListing): string {
  const head = `${tool.name}${tool.description ? ` — ${tool.description.split('\n')[0]}` : ''}\n`;
  const args = describeArguments(tool);
  if (args.length === 0) return `${head}  (no arguments)\n`;
  const rows = args.map((arg) => [
    arg.name,
    arg.type,
    arg.required ? 'required' : 'optional',
    [arg.values ? `one of ${arg.values.map((value) => JSON.stringify(value)).join(', ')}` : '', arg.description ?? '']
      .filter(Boolean)
      .join('; '),
  ]);
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length)));
  return `${head}${rows.map((row) => `  ${row.map((cell, column) => (column < 3 ? cell.padEnd(widths[column]!) : cell)).join('  ')}`.trimEnd()).join('\n')}\n`;
}
