/**
 * The `taskvisor` command line.
 *
 *   taskvisor serve [--config FILE] [--http HOST:PORT] [--stdio] [--demo] [--quiet]
 */
import { parseArgs } from 'node:util';
import { ConfigError } from '../config/loadConfig.js';

const USAGE = `Usage: taskvisor <command> [options]

Commands:
  serve                 Serve tools as an MCP 2026-07-28 Tasks server
    --config FILE       taskvisor.yaml (or .json): tools, store, http, tasks
    --http HOST:PORT    Serve Streamable HTTP here (default 127.0.0.1:3000,
                        or HOST and PORT from the environment)
    --stdio             Serve stdio (alone, unless --http is given too)
    --demo              Serve the demo tools (examples/demo)
    --quiet             Only report errors on stderr
  machines list|export  List the state machines, or export them as
                        json|mermaid|dot (taskvisor machines help)
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
          demo: { type: 'boolean' },
          quiet: { type: 'boolean', short: 'q' },
        },
        strict: true,
        allowPositionals: false,
      });
      // Loaded on demand: `help`, `version` and `machines` need no runtime.
      const { serve } = await import('./serve.js');
      const running = await serve(values);
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
