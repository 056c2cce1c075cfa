/**
 * `taskvisor upstreams [--config FILE | --state FILE] [--json]`: the health
 * of each upstream of a running server. The server writes every change of
 * an upstream's state into its runtime state file (mode 0600, next to the
 * store unless `state.file` says otherwise); this command reads that file,
 * so it needs no open port and sees exactly what the server's actors see.
 */
import path from 'node:path';
import { ConfigError, loadConfig } from '../config/loadConfig.js';
import { RuntimeStateFile, type UpstreamHealth } from '../upstreams/RuntimeStateFile.js';
import { stateFileOf } from '../upstreams/fromConfig.js';
import { isHelpWord, parseCommandLine, UsageError, type CliIo } from './usage.js';

export const UPSTREAMS_USAGE = `Usage: taskvisor upstreams [--config FILE | --state FILE] [--json]
       taskvisor upstreams auth|revoke|grants NAME …   (OAuth upstreams; see upstreams auth --help)

Health of each upstream of a running server: state, tools, protocol, retry
time, last error, read from the server's runtime state file (no open port).

Options:
  -c, --config FILE     The server's config (finds its state file)
  --state FILE          Or the runtime state file itself
  --json                Machine-readable output
  -h, --help            Show this text

Exit codes: 0 the server runs, 3 its pid is gone (rows marked stale),
1 no upstream health in the file, 2 a bad command line.
`;

export async function upstreamsCommand(argv: string[], io: CliIo = process, now = Date.now()): Promise<number> {
  const verb = argv[0];
  if (verb === 'auth' || verb === 'revoke' || verb === 'grants') {
    return (await import('./upstreamAuth.js')).upstreamAuthCommand(verb, argv.slice(1), io);
  }
  if (argv.length === 1 && isHelpWord(argv[0])) {
    io.stdout.write(UPSTREAMS_USAGE);
    return 0;
  }
  const options = { config: { type: 'string', short: 'c' }, state: { type: 'string' }, json: { type: 'boolean' } } as const;
  let parsed;
  try {
    parsed = parseCommandLine(argv, options, UPSTREAMS_USAGE);
  } catch (error) {
    // The first word is neither a subcommand nor an option of the health view: say both.
    if (error instanceof UsageError && verb !== undefined && error.message.includes(`'${verb}'`))
      throw new UsageError(
        `upstreams: unknown subcommand ${JSON.stringify(verb)} (nor an option); valid subcommands: auth, revoke, grants; options: --config, --state, --json`,
        UPSTREAMS_USAGE,
      );
    throw error;
  }
  const { values } = parsed;
  if (values.help) {
    io.stdout.write(UPSTREAMS_USAGE);
    return 0;
  }
  if (values.config !== undefined && values.state !== undefined) {
    throw new UsageError('upstreams: give --config or --state, not both', UPSTREAMS_USAGE);
  }
  const file =
    values.state !== undefined
      ? path.resolve(values.state)
      : stateFileOf(values.config !== undefined ? await loadConfig(values.config) : undefined);
  let state;
  try {
    state = await RuntimeStateFile.peek(file);
  } catch (error) {
    throw new ConfigError(`upstreams: ${(error as Error).message}`);
  }
  if (!state?.health) {
    io.stderr.write(`taskvisor: no upstream health in ${file}: no server with upstreams has run with this state file\n`);
    return 1;
  }
  const running = isAlive(state.health.pid);
  const upstreams = state.health.upstreams;
  if (values.json) {
    io.stdout.write(
      `${JSON.stringify({ file, pid: state.health.pid, running, updatedAt: new Date(state.health.updatedAt).toISOString(), upstreams }, null, 2)}\n`,
    );
    return running ? 0 : 3;
  }
  if (!running) {
    io.stdout.write(`server pid ${state.health.pid} is not running; last report ${new Date(state.health.updatedAt).toISOString()}\n`);
  }
  const rows = Object.entries(upstreams).map(([name, health]) => [
    name,
    running ? health.state : `${health.state} (stale)`,
    String(health.toolCount),
    health.protocolVersion ? `${health.protocolVersion}${health.tasks ? '+tasks' : ''}` : '-',
    retryText(health, now),
    health.lastError ?? '-',
  ]);
  io.stdout.write(table(['NAME', 'STATE', 'TOOLS', 'PROTOCOL', 'RETRY', 'LAST ERROR'], rows));
  return running ? 0 : 3;
}

function retryText(health: UpstreamHealth, now: number): string {
  if (health.retryAt === null || health.state !== 'backoff') return '-';
  const seconds = Math.max(0, Math.round((health.retryAt - now) / 1000));
  return `${new Date(health.retryAt).toISOString()} (in ${seconds}s)`;
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
