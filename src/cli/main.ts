/**
 * The `taskvisor` command line: dispatches to the commands and turns what
 * they throw into exit codes (0 ok, 1 a refused value or a failure, 2 a
 * command line that cannot be understood). `run.ts` calls it.
 */
import { ConfigError } from '../config/loadConfig.js';
import { isHelpWord, parseCommandLine, USAGE_EXIT_CODE, UsageError, type CliIo } from './usage.js';

const USAGE = `Usage: taskvisor <command> [options]

Commands:
  serve                 Serve tools as an MCP 2026-07-28 Tasks server
                        (--config FILE, --http, --stdio, --ws, --demo, ...)
  upstreams             Health of each upstream of a running server
  machines list|export  List the state machines, or export them as
                        json|mermaid|dot
  token add             Add a bearer token to a token file (mode 0600)
  workflows validate|run  Check workflow files; run one in-process
  call                  Run a tool of any MCP server from the terminal (live
                        task status, input asked, Ctrl-C cancels)
  tools                 List a server's tools and their arguments (URL or --stdio)
  tasks list|show|check Admin view of the tasks in the config's store
  tasks get|cancel|watch  A task on a running server (--url or --stdio)
  help                  Show this text
  version               Print the version

Run 'taskvisor <command> --help' for a command's options.
Exit codes: 0 success, 1 a refused value or a failure, 2 a bad command line.
`;

export const SERVE_USAGE = `Usage: taskvisor serve [options]

Serves tools as an MCP 2026-07-28 Tasks server until SIGINT/SIGTERM.

Options:
  -c, --config FILE     taskvisor.yaml (or .json): tools, store, http, ws, tasks
  --http HOST:PORT      Serve Streamable HTTP here (default 127.0.0.1:3000,
                        or HOST and PORT from the environment)
  --stdio               Serve stdio (alone, unless --http or --ws is given too)
  --ws HOST:PORT        Serve MCP over WebSocket at ws://HOST:PORT/mcp (alone,
                        unless --http or --stdio is given too)
  --demo                Serve the demo tools (examples/demo)
  --store memory|DIR    Use this store instead of the config's: memory (nothing
                        kept), or a lowdb store in DIR (e.g. next to a running
                        server, which holds its own store's lock)
  -q, --quiet           Only report errors on stderr
  --inspect             Relay task actors to the Stately inspector on 127.0.0.1
  --inspect-port N      Port of that relay (default: any free port)
  --trace FILE          Write every task actor's inspection events to FILE
  --trace-raw           Do not redact task data in the trace
  --operations HOST:PORT  Serve /healthz and /readyz (and /metrics) on a port
                        of their own (they are always on the --http listener too)
  --metrics             Serve Prometheus metrics at /metrics (operators only:
                        loopback without auth, else the operator scope)
  --ui                  Serve the read-only tasks dashboard at /ui/ (operators
                        only, as --metrics)
  -h, --help            Show this text

Exit codes: 0 after SIGINT/SIGTERM, 1 for a bad config or a port in use,
2 for a bad command line.
`;

/**
 * Every command and its subcommands: `--help` must answer for each (a test
 * walks this tree). A new command is added here and to USAGE.
 */
export const COMMAND_TREE: Readonly<Record<string, readonly string[]>> = {
  serve: [],
  upstreams: ['auth', 'revoke', 'grants'],
  machines: ['list', 'export'],
  token: ['add'],
  workflows: ['validate', 'run', 'runs'],
  tasks: ['list', 'show', 'check', 'get', 'cancel', 'watch'],
  call: [],
  tools: [],
  version: [],
};

const VERSION_USAGE = `Usage: taskvisor version\n\nPrints the version.\n`;

/**
 * Runs `taskvisor <argv>`; resolves with the exit code, or -1 when a server
 * keeps running (it exits on SIGINT/SIGTERM). Never rejects for a usage or
 * config error: those are written to `io.stderr`.
 */
export async function main(argv: string[], io: CliIo = process): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`taskvisor: ${error.message}\n\n${error.usage}`);
      return USAGE_EXIT_CODE;
    }
    if (error instanceof ConfigError) {
      io.stderr.write(`taskvisor: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

async function dispatch(argv: string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError('missing command', USAGE);
  if (isHelpWord(command)) {
    io.stdout.write(USAGE);
    return 0;
  }
  switch (command) {
    case 'version':
    case '--version':
    case '-v': {
      if (parseCommandLine(rest, {}, VERSION_USAGE).values.help) io.stdout.write(VERSION_USAGE);
      else io.stdout.write(`taskvisor ${await packageVersion()}\n`);
      return 0;
    }
    case 'serve': {
      const { values } = parseCommandLine(
        rest,
        {
          config: { type: 'string', short: 'c' },
          http: { type: 'string' },
          stdio: { type: 'boolean' },
          ws: { type: 'string' },
          demo: { type: 'boolean' },
          quiet: { type: 'boolean', short: 'q' },
          inspect: { type: 'boolean' },
          'inspect-port': { type: 'string' },
          trace: { type: 'string' },
          'trace-raw': { type: 'boolean' },
          operations: { type: 'string' },
          metrics: { type: 'boolean' },
          ui: { type: 'boolean' },
          store: { type: 'string' },
        },
        SERVE_USAGE,
      );
      if (values.help) {
        io.stdout.write(SERVE_USAGE);
        return 0;
      }
      // Loaded on demand: `help`, `version` and `machines` need no runtime.
      const { serve } = await import('./serve.js');
      const { 'inspect-port': inspectPort, 'trace-raw': traceRaw, help: _help, ...flags } = values;
      const running = await serve({
        ...flags,
        ...(inspectPort !== undefined ? { inspectPort } : {}),
        ...(traceRaw !== undefined ? { traceRaw } : {}),
      });
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        running.runtime.logger.info(`${signal}: stopping`);
        void running.stop().then(() => process.exit(0));
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
      return -1; // keep running
    }
    case 'machines':
      return (await import('./machines.js')).machinesCommand(rest, io);
    case 'token':
      return (await import('./token.js')).tokenCommand(rest, io);
    case 'workflows':
      return (await import('./workflows.js')).workflowsCommand(rest, io);
    case 'tasks':
      return (await import('./tasks.js')).tasksCommand(rest, io);
    case 'upstreams':
      return (await import('./upstreams.js')).upstreamsCommand(rest, io);
    case 'call':
      return (await import('./call.js')).callCommand(rest, io);
    case 'tools':
      return (await import('./tools.js')).toolsCommand(rest, io);
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`, USAGE);
  }
}

/** The version in package.json (read on demand: two levels up from src/cli, also from dist/src/cli). */
async function packageVersion(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  for (const relative of ['../../package.json', '../../../package.json']) {
    try {
      const manifest = JSON.parse(await readFile(new URL(relative, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'taskvisor' && manifest.version) return manifest.version;
    } catch {
      // not there: try the next level
    }
  }
  return 'unknown';
}
