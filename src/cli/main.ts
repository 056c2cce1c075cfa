/**
 * The `taskvisor` command line.
 *
 *   taskvisor serve [--config FILE] [--http HOST:PORT] [--stdio] [--ws HOST:PORT] [--demo] [--quiet]
 *                   [--inspect [--inspect-port N]] [--trace FILE [--trace-raw]]
 */
import { parseArgs } from 'node:util';
import { ConfigError } from '../config/loadConfig.js';

const USAGE = `Usage: taskvisor <command> [options]

Commands:
  serve                 Serve tools as an MCP 2026-07-28 Tasks server
    --config FILE       taskvisor.yaml (or .json): tools, store, http, ws, tasks
    --http HOST:PORT    Serve Streamable HTTP here (default 127.0.0.1:3000,
                        or HOST and PORT from the environment)
    --stdio             Serve stdio (alone, unless --http or --ws is given too)
    --ws HOST:PORT      Serve MCP over WebSocket at ws://HOST:PORT/mcp (alone,
                        unless --http or --stdio is given too)
    --demo              Serve the demo tools (examples/demo)
    --quiet             Only report errors on stderr
    --inspect           Relay task actors to the Stately inspector on
                        127.0.0.1 (prints how to open it; the UI needs internet)
    --inspect-port N    Port of that relay (default: any free port)
    --trace FILE        Write every task actor's inspection events to FILE
                        (JSONL, mode 0600; task data redacted)
    --trace-raw         Do not redact task data in the trace
  upstreams             Health of each upstream of a running server: state,
                        tools, retry time, last error (read from its state file)
    --config FILE       The server's config (finds its state file)
    --state FILE        Or the runtime state file itself
    --json              Machine-readable output
  machines list|export  List the state machines, or export them as
                        json|mermaid|dot (taskvisor machines help)
  token add             Add a bearer token to a token file (mode 0600)
                        (taskvisor token help)
  workflows validate|run  Check workflow files; run one in-process
                        (taskvisor workflows help)
  tasks list|show       Admin view of the tasks in the config's store
                        (taskvisor tasks help)
  help                  Show this text
  version               Print the version
`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    case 'version':
    case '--version':
      process.stdout.write('taskvisor 0.1.0\n');
      return 0;
    case 'serve': {
      const { values } = parseArgs({
        args: rest,
        options: {
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
        },
        strict: true,
        allowPositionals: false,
      });
      // Loaded on demand: `help`, `version` and `machines` need no runtime.
      const { serve } = await import('./serve.js');
      const { 'inspect-port': inspectPort, 'trace-raw': traceRaw, ...flags } = values;
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
      return (await import('./machines.js')).machinesCommand(rest);
    case 'token':
      return (await import('./token.js')).tokenCommand(rest);
    case 'workflows':
      return (await import('./workflows.js')).workflowsCommand(rest);
    case 'tasks':
      return (await import('./tasks.js')).tasksCommand(rest);
    case 'upstreams':
      return (await import('./upstreams.js')).upstreamsCommand(rest);
    default:
      process.stderr.write(`taskvisor: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof ConfigError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`taskvisor: ${(error as Error).message}\n`);
    } else {
      process.stderr.write(`taskvisor: ${(error as Error).stack ?? String(error)}\n`);
    }
    process.exit(1);
  },
);
