/**
 * `taskvisor upstreams [--config FILE | --state FILE] [--json]`: the health
 * of each upstream of a running server. The server writes every change of
 * an upstream's state into its runtime state file (mode 0600, next to the
 * store unless `state.file` says otherwise); this command reads that file,
 * so it needs no open port and sees exactly what the server's actors see.
 */
import { parseArgs } from 'node:util';
import path from 'node:path';
import { ConfigError, loadConfig } from '../config/loadConfig.js';
import { RuntimeStateFile, type UpstreamHealth } from '../state/RuntimeStateFile.js';
import { stateFileOf } from '../upstreams/fromConfig.js';

export async function upstreamsCommand(argv: string[], now = Date.now()): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { config: { type: 'string', short: 'c' }, state: { type: 'string' }, json: { type: 'boolean' } },
    strict: true,
    allowPositionals: false,
  });
  if (values.config !== undefined && values.state !== undefined) throw new ConfigError('upstreams: give --config or --state, not both');
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
    process.stderr.write(`taskvisor: no upstream health in ${file}: no server with upstreams has run with this state file\n`);
    return 1;
  }
  const running = isAlive(state.health.pid);
  const upstreams = state.health.upstreams;
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ file, pid: state.health.pid, running, updatedAt: new Date(state.health.updatedAt).toISOString(), upstreams }, null, 2)}\n`,
    );
    return running ? 0 : 3;
  }
  if (!running) {
    process.stdout.write(`server pid ${state.health.pid} is not running; last report ${new Date(state.health.updatedAt).toISOString()}\n`);
  }
  const rows = Object.entries(upstreams).map(([name, health]) => [
    name,
    running ? health.state : `${health.state} (stale)`,
    String(health.toolCount),
    health.protocolVersion ? `${health.protocolVersion}${health.tasks ? '+tasks' : ''}` : '-',
    retryText(health, now),
    health.lastError ?? '-',
  ]);
  process.stdout.write(table(['NAME', 'STATE', 'TOOLS', 'PROTOCOL', 'RETRY', 'LAST ERROR'], rows));
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
