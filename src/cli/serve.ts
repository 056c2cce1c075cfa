/**
 * `taskvisor serve`: builds a runtime from a config file (or the demo tools)
 * and serves it over Streamable HTTP, stdio and/or WebSocket until SIGINT/SIGTERM.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, loadToolModules, resolveFromConfig, type LoadedConfig } from '../config/loadConfig.js';
import { stderrLogger } from '../runtime/Logger.js';
import { createRuntime, DEFAULT_STORE_DIR, type TaskvisorRuntime } from '../runtime/TaskvisorRuntime.js';
import { DEFAULT_SQLITE_FILE, type TaskStoreConfig } from '../store/index.js';
import type { InspectionEvent } from 'xstate';
import { listenHttp } from '../transports/http.js';
import { checkInspectionArgs, openInspection, type InspectionArgs, type OpenedInspection } from './inspection.js';
import { serveStdio } from '../transports/stdio.js';
import { listenWebSocket } from '../transports/websocket.js';
import { stateFileOf, upstreamsOf } from '../upstreams/fromConfig.js';

export interface ServeArgs extends InspectionArgs {
  config?: string;
  /** `host:port`, `:port` or `port`. */
  http?: string;
  stdio?: boolean;
  /** `host:port`, `:port` or `port`: serve MCP over WebSocket there. */
  ws?: string;
  demo?: boolean;
  quiet?: boolean;
}

/** The demo config `npm start` serves. */
export const DEMO_CONFIG = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/demo/taskvisor.yaml');

/** Parses `host:port`, `[::1]:port`, `:port` or `port`. */
export function parseHostPort(value: string, flag = '--http'): { host?: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(value) ?? /^()()(\d+)$/.exec(value);
  const port = match ? Number(match[3]) : NaN;
  if (!match || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`${flag} ${value}: expected host:port (e.g. 127.0.0.1:3000), :port or port`);
  }
  const host = match[1] ?? match[2];
  return { ...(host ? { host } : {}), port };
}

function parseEnvPort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw new ConfigError(`PORT=${value}: expected a port number (0-65535)`);
  return port;
}

/** Starts serving; resolves once listening, with a function that stops everything. */
export async function serve(args: ServeArgs): Promise<{ runtime: TaskvisorRuntime; url?: string; wsUrl?: string; stop: () => Promise<void> }> {
  const logger = stderrLogger({ quiet: args.quiet ?? false });
  const configFile = args.config ?? (args.demo ? DEMO_CONFIG : undefined);
  const loaded: LoadedConfig | undefined = configFile ? await loadConfig(configFile) : undefined;
  const config = loaded?.config ?? {};
  // Flags and environment are checked before anything starts (the store is opened by start): no partial start.
  // With transport flags, exactly the flagged transports; without, HTTP (plus WebSocket when the config has `ws`).
  const anyTransportFlag = args.http !== undefined || args.stdio === true || args.ws !== undefined;
  const wantHttp = args.http !== undefined || !anyTransportFlag;
  const wantWs = args.ws !== undefined || (!anyTransportFlag && config.ws !== undefined);
  const flag: { host?: string; port?: number } = args.http !== undefined ? parseHostPort(args.http) : {};
  const wsFlag: { host?: string; port?: number } = args.ws !== undefined ? parseHostPort(args.ws, '--ws') : {};
  const envPort = wantHttp && process.env.PORT !== undefined && process.env.PORT !== '' ? parseEnvPort(process.env.PORT) : undefined;
  checkInspectionArgs(args);
  const wantInspection = args.inspect || args.inspectPort !== undefined || args.trace !== undefined;
  // Opened once the tools are loaded (a bad tool module leaves no trace file, no relay); until then nothing runs.
  let inspection: OpenedInspection | undefined;

  const store: TaskStoreConfig =
    config.store?.kind === 'memory'
      ? { kind: 'memory' }
      : config.store?.kind === 'sqlite'
        ? { kind: 'sqlite', file: config.store.file ? resolveFromConfig(loaded, config.store.file) : path.resolve(DEFAULT_SQLITE_FILE) }
        : { kind: 'lowdb', dir: config.store?.dir ? resolveFromConfig(loaded, config.store.dir) : path.resolve(DEFAULT_STORE_DIR) };
  const runtime = createRuntime({
    ...(config.server?.name ? { name: config.server.name } : {}),
    ...(config.server?.version ? { version: config.server.version } : {}),
    ...(config.server?.instructions ? { instructions: config.server.instructions } : {}),
    store,
    ...(config.tasks?.ttlMs !== undefined ? { ttlMs: config.tasks.ttlMs } : {}),
    ...(config.tasks?.pollIntervalMs !== undefined ? { pollIntervalMs: config.tasks.pollIntervalMs } : {}),
    ...(config.tasks?.promoteAfterMs !== undefined ? { promoteAfterMs: config.tasks.promoteAfterMs } : {}),
    ...(config.tasks?.reapIntervalMs !== undefined ? { reapIntervalMs: config.tasks.reapIntervalMs } : {}),
    ...(config.tasks?.finishedRetentionMs !== undefined ? { finishedRetentionMs: config.tasks.finishedRetentionMs } : {}),
    ...(config.tasks?.poll ? { poll: config.tasks.poll } : {}),
    ...(config.tasks?.pollRateLimit ? { pollRateLimit: config.tasks.pollRateLimit } : {}),
    ...(wantInspection ? { inspect: (event: InspectionEvent) => inspection?.inspect?.(event) } : {}),
    ...(config.upstreams?.length
      ? {
          upstreams: upstreamsOf(loaded),
          stateFile: stateFileOf(loaded),
          ...(config.aggregator?.toolNamespace ? { toolNamespace: config.aggregator.toolNamespace } : {}),
        }
      : {}),
    logger,
  });
  if (loaded) await loadToolModules(loaded, runtime);
  if (wantInspection) {
    inspection = await openInspection(args, logger);
    runtime.onClose(() => inspection!.close());
  }
  // All tools are registered and the config is valid before anything starts: no partial start.
  try {
    await runtime.start();
  } catch (error) {
    await inspection?.close();
    throw error;
  }
  if (inspection?.stately) process.stderr.write(`${inspection.stately.instructions}\n`);
  if (inspection?.trace) logger.info(`tracing task actors to ${inspection.trace.file}${args.traceRaw ? ' (not redacted)' : ''}`);

  let url: string | undefined;
  if (wantHttp) {
    // Precedence: --http, then HOST/PORT, then the config file, then 127.0.0.1:3000.
    const host = flag.host ?? (process.env.HOST || undefined) ?? config.http?.host ?? '127.0.0.1';
    const port = flag.port ?? envPort ?? config.http?.port ?? 3000;
    try {
      const listener = await listenHttp(runtime, {
        host,
        port,
        ...(config.http?.path ? { path: config.http.path } : {}),
        ...(config.http?.allowedHosts !== undefined ? { allowedHosts: config.http.allowedHosts } : {}),
        ...(config.http?.maxBodyBytes !== undefined ? { maxBodyBytes: config.http.maxBodyBytes } : {}),
      });
      url = listener.url;
    } catch (error) {
      await runtime.close();
      throw new ConfigError(`cannot listen on ${host}:${port}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  let wsUrl: string | undefined;
  if (wantWs) {
    // Precedence: --ws, then the config file, then 127.0.0.1:3001 (HOST/PORT are HTTP's).
    const host = wsFlag.host ?? config.ws?.host ?? '127.0.0.1';
    const port = wsFlag.port ?? config.ws?.port ?? 3001;
    try {
      const listener = await listenWebSocket(runtime, {
        host,
        port,
        ...(config.ws?.path ? { path: config.ws.path } : {}),
        ...(config.ws?.allowedHosts !== undefined ? { allowedHosts: config.ws.allowedHosts } : {}),
        ...(config.ws?.allowedOrigins !== undefined ? { allowedOrigins: config.ws.allowedOrigins } : {}),
        ...(config.ws?.maxPayloadBytes !== undefined ? { maxPayloadBytes: config.ws.maxPayloadBytes } : {}),
      });
      wsUrl = listener.url;
    } catch (error) {
      await runtime.close();
      throw new ConfigError(`cannot listen on ${host}:${port}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  const storeText =
    store.kind === 'lowdb'
      ? `lowdb ${path.relative(process.cwd(), store.dir) || '.'}`
      : store.kind === 'sqlite'
        ? `sqlite ${path.relative(process.cwd(), store.file)}`
        : 'memory';
  logger.info(`${runtime.tools.names().length} tools (${runtime.tools.names().join(', ')}); store: ${storeText}`);
  if (runtime.upstreams) logger.info(`${runtime.upstreams.status().length} upstreams (connecting in the background); state file ${path.relative(process.cwd(), stateFileOf(loaded))}`);
  if (url) logger.info(`serving MCP over Streamable HTTP at ${url}`);
  if (wsUrl) logger.info(`serving MCP over WebSocket at ${wsUrl}`);
  if (args.stdio) {
    const stdio = serveStdio(runtime);
    logger.info('serving MCP over stdio');
    void stdio.closed.then(() => runtime.close());
  }
  return { runtime, ...(url ? { url } : {}), ...(wsUrl ? { wsUrl } : {}), stop: () => runtime.close() };
}
