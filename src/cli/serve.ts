/**
 * `taskvisor serve`: turns flags and a config file (or the demo tools) into
 * runtime options, and serves the runtime built from them over Streamable
 * HTTP, stdio and/or WebSocket until SIGINT/SIGTERM. It builds no part of the
 * runtime: the composition root does (src/server/composeRuntime.ts); this
 * only calls the public API.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig, loadToolModules, type LoadedConfig } from '../config/loadConfig.js';
import { stderrLogger } from '../runtime/Logger.js';
import { createRuntime, type TaskvisorRuntime } from '../server/TaskvisorRuntime.js';
import { StoreInUseError, type PostgresTaskStore, type TaskStoreConfig } from '../store/index.js';
import type { InspectionEvent } from 'xstate';
import { checkInspectionArgs, openInspection, type InspectionArgs, type OpenedInspection } from './inspection.js';
import { isLoopbackHost } from '../transports/admission.js';
import type { BearerAuthOptions } from '../auth/bearer.js';
import { stateFileOf, upstreamsOf } from '../upstreams/fromConfig.js';
import type { ConfiguredUpstreamOAuth } from '../upstreams/oauth/fromConfig.js';
import type { HttpRoutes } from '../transports/HttpRoutes.js';
import { checkOperatorListeners } from './operatorListeners.js';
import { runtimeOptionsOf, storeConfigOf } from './serveOptions.js';
import { DEFAULT_TOOL_NAMESPACE, upstreamToolPrefix } from '../upstreams/toolNames.js';
import type { WorkflowCatalog } from '../workflows/loading/WorkflowCatalog.js';
import type { Operations } from '../operations/Operations.js';
import type { OperationsListener } from '../operations/listenOperations.js';
import { enableOpenTelemetry } from '../operations/openTelemetry.js';

export interface ServeArgs extends InspectionArgs {
  config?: string;
  /** `host:port`, `:port` or `port`. */
  http?: string;
  stdio?: boolean;
  /** `host:port`, `:port` or `port`: serve MCP over WebSocket there. */
  ws?: string;
  demo?: boolean;
  quiet?: boolean;
  /** `host:port`, `:port` or `port`: serve `/healthz`, `/readyz` (and metrics) on a port of their own. */
  operations?: string;
  /** Serve Prometheus metrics at `/metrics` (operators only; config `operations.metrics`). */
  metrics?: boolean;
  /** Serve the read-only dashboard at `/ui/` (operators only; config `operations.ui`). */
  ui?: boolean;
  /** `memory`, or a folder for a lowdb store (from the working directory): instead of the config's store. */
  store?: string;
}

/** Also what `taskvisor tasks` and `taskvisor workflows` read. */
export { storeConfigOf };

/** The demo config `npm start` serves. */
export const DEMO_CONFIG = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/demo/taskvisor.yaml');

/** `--store memory`, or `--store DIR`: a lowdb store in that folder (from the working directory, as a flag's paths are). */
function storeFlagOf(value: string): TaskStoreConfig {
  if (value === '') throw new ConfigError('--store: expected memory, or a folder for a lowdb store');
  return value === 'memory' ? { kind: 'memory' } : { kind: 'lowdb', dir: path.resolve(value) };
}

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
export async function serve(args: ServeArgs): Promise<{
  runtime: TaskvisorRuntime;
  url?: string;
  wsUrl?: string;
  /** Base URL of the operations port (`--operations`, config `operations.listen`). */
  operationsUrl?: string;
  operations: Operations;
  workflows?: WorkflowCatalog;
  stop: () => Promise<void>;
}> {
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
  const operationsFlag = args.operations !== undefined ? parseHostPort(args.operations, '--operations') : undefined;
  const operationsListen = operationsFlag ?? config.operations?.listen;
  const envPort = wantHttp && process.env.PORT !== undefined && process.env.PORT !== '' ? parseEnvPort(process.env.PORT) : undefined;
  checkInspectionArgs(args);
  // Token file / key file / JWKS URL are checked before anything starts (no partial start).
  const auth: BearerAuthOptions | undefined =
    config.auth && config.auth.kind !== 'none'
      ? await (await import('../auth/fromConfig.js')).authFromConfig(config.auth, loaded, config.server?.name)
      : undefined;
  // Precedence: --http, then HOST/PORT, then the config file, then 127.0.0.1:3000; --ws, then the config, then 127.0.0.1:3001.
  const httpHost = flag.host ?? (process.env.HOST || undefined) ?? config.http?.host ?? '127.0.0.1';
  const wsHost = wsFlag.host ?? config.ws?.host ?? '127.0.0.1';
  const wantMetrics = args.metrics === true || config.operations?.metrics === true;
  const wantUi = args.ui === true || config.operations?.ui === true;
  // Which listener carries the operator surfaces (metrics, the dashboard): checked before anything starts.
  const operatorRoutesOnHttp = wantHttp && (auth !== undefined || isLoopbackHost(httpHost));
  if (wantMetrics || wantUi) checkOperatorListeners({ auth: auth !== undefined, wantHttp, httpHost, operationsListen });
  // A public bind without auth lets anyone (and any web page, through the WebSocket) act as
  // `anonymous`. Refused before anything starts, unless the config says so in as many words.
  const publicBinds = [...(wantHttp ? [['http', httpHost]] : []), ...(wantWs ? [['ws', wsHost]] : [])].filter(
    ([, host]) => !isLoopbackHost(host!),
  );
  if (!auth && config.auth?.kind !== 'none' && publicBinds.length > 0) {
    throw new ConfigError(
      `refusing to serve ${publicBinds.map(([kind, host]) => `${kind} on ${host}`).join(' and ')} without authentication: ` +
        'every caller there would be the same anonymous principal. Configure auth (token-file or jwt), ' +
        'or say it explicitly in the config with auth: { kind: none }',
    );
  }
  const wantInspection = args.inspect || args.inspectPort !== undefined || args.trace !== undefined;
  // Opened before the runtime opens its store (see below).
  let inspection: OpenedInspection | undefined;

  const store = args.store !== undefined ? storeFlagOf(args.store) : storeConfigOf(loaded);
  // OAuth upstreams: the sealing key is read and the credential store opened before anything starts (no partial start).
  const upstreamOAuth = await (await import('../upstreams/oauth/fromConfig.js')).openUpstreamOAuth(loaded, store);
  const runtime = createRuntime({
    ...runtimeOptionsOf(loaded, {
      logger,
      ...(wantInspection ? { inspect: (event: InspectionEvent) => inspection?.inspect?.(event) } : {}),
      operations: {
        ...(wantMetrics ? { metrics: true } : {}),
        ...(wantUi ? { ui: true } : {}),
        ...(auth ? { auth } : {}),
      },
    }),
    store,
    ...(upstreamOAuth
      ? { upstreamCredentials: Object.fromEntries(upstreamOAuth.upstreams.map((name) => [name, upstreamOAuth.oauth])) }
      : {}),
  });
  if (upstreamOAuth) runtime.onClose(() => upstreamOAuth.close());
  // Built with the `operations` option, so always present.
  const operations = runtime.operations!;
  if (loaded) {
    try {
      await loadToolModules(loaded, runtime);
    } catch (error) {
      operations.close();
      throw error;
    }
  }
  if (wantInspection) {
    // Opened before the store: a trace file that cannot be written is refused before any task is touched.
    try {
      inspection = await openInspection(args, logger);
    } catch (error) {
      operations.close();
      throw error;
    }
    runtime.onClose(() => inspection!.close());
  }
  // All tools are registered and the config is valid before anything starts: no partial start.
  // open() loads the workflows (tools too, so registered before recovery and a bad file touches
  // nothing), then opens the store (an embedded one locked before anything is read); the
  // listeners are bound next, and only then does recovery run: a second process on the same
  // store, or one whose port is taken, touches no task.
  try {
    await runtime.open();
  } catch (error) {
    operations.close();
    await inspection?.close();
    // One owner per store: "store … is in use by process N", exit 1.
    if (error instanceof StoreInUseError) {
      throw new ConfigError(
        `${error.message} (another taskvisor serve?): one server per store; stop that one, or give this one a store of its own (--store memory, or --store DIR)`,
      );
    }
    if (loaded?.config.workflows) {
      const { WorkflowError } = await import('../workflows/loading/loadWorkflows.js');
      if (error instanceof WorkflowError) {
        throw new ConfigError(
          `${loaded.file}${loaded.positionOf?.(['workflows', 'dir']) ?? ''}: workflows.dir: ${loaded.config.workflows.dir}:\n${error.message}`,
        );
      }
    }
    // An unreachable or refused database is a setup problem: one line naming the config, no stack.
    if (store.kind === 'postgres') throw new ConfigError(`${configFile}: store: ${(error as Error).message}`);
    throw error;
  }
  if (config.operations?.openTelemetry) {
    // Before start(): recovery's writes make spans too. Missing @opentelemetry/api is a setup problem, said in one line.
    try {
      const stopSpans = await enableOpenTelemetry({ source: runtime.store });
      runtime.onClose(stopSpans);
    } catch (error) {
      operations.close();
      await inspection?.close();
      throw new ConfigError(`${configFile}: operations.openTelemetry: ${(error as Error).message}`);
    }
  }
  let operationsUrl: string | undefined;
  let operationsListener: OperationsListener | undefined;
  if (operationsListen) {
    // Before start(): a balancer polling /readyz sees `recovering` while unfinished tasks are resumed.
    const host = operationsListen.host ?? '127.0.0.1';
    try {
      const { listenOperations } = await import('../operations/listenOperations.js');
      operationsListener = await listenOperations(runtime, operations, { host, port: operationsListen.port });
      operationsUrl = operationsListener.url;
    } catch (error) {
      operations.close();
      await runtime.close();
      throw new ConfigError(
        `cannot listen on ${host}:${operationsListen.port} (operations): ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
    }
  }
  let url: string | undefined;
  if (wantHttp) {
    const host = httpHost;
    const port = flag.port ?? envPort ?? config.http?.port ?? 3000;
    try {
      // Transports are imported when served (start-up time: HTTP pulls hono, WebSocket ws).
      const { listenHttp } = await import('../transports/listenHttp.js');
      const listener = await listenHttp(runtime, {
        host,
        port,
        ...(config.http?.path ? { path: config.http.path } : {}),
        ...(config.http?.allowedHosts !== undefined ? { allowedHosts: config.http.allowedHosts } : {}),
        ...(config.http?.allowedOrigins !== undefined ? { allowedOrigins: config.http.allowedOrigins } : {}),
        ...(auth ? { auth } : {}),
        ...(config.http?.maxBodyBytes !== undefined ? { maxBodyBytes: config.http.maxBodyBytes } : {}),
        // Without auth a non-loopback listener never carries the operator surfaces (they went to the operations port).
        routes: await withOAuthCallback(operatorRoutesOnHttp ? operations.routes : operations.healthRoutes, upstreamOAuth, logger),
      });
      operations.health.trackListener('http', () => listener.server.listening);
      url = listener.url;
    } catch (error) {
      await operationsListener?.close();
      operations.close();
      await runtime.close();
      throw new ConfigError(`cannot listen on ${host}:${port}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  let wsUrl: string | undefined;
  if (wantWs) {
    const host = wsHost;
    const port = wsFlag.port ?? config.ws?.port ?? 3001;
    try {
      const { listenWebSocket } = await import('../transports/websocket.js');
      const listener = await listenWebSocket(runtime, {
        host,
        port,
        ...(config.ws?.path ? { path: config.ws.path } : {}),
        ...(config.ws?.allowedHosts !== undefined ? { allowedHosts: config.ws.allowedHosts } : {}),
        ...(config.ws?.allowedOrigins !== undefined ? { allowedOrigins: config.ws.allowedOrigins } : {}),
        ...(auth ? { auth } : {}),
        ...(config.ws?.maxPayloadBytes !== undefined ? { maxPayloadBytes: config.ws.maxPayloadBytes } : {}),
      });
      operations.health.trackListener('ws', () => listener.server.listening);
      wsUrl = listener.url;
    } catch (error) {
      await operationsListener?.close();
      operations.close();
      await runtime.close();
      throw new ConfigError(`cannot listen on ${host}:${port}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  if (args.stdio) {
    // Served from before recovery, like the listeners: tasks/* are answered while it runs, the rest waits.
    const { serveStdio } = await import('../transports/stdio.js');
    const stdio = serveStdio(runtime);
    logger.info('serving MCP over stdio');
    void stdio.closed.then(() => runtime.close());
  }
  // Recovery runs once the listeners are bound (requests wait for it: runtime.ready()).
  try {
    await runtime.start();
  } catch (error) {
    await operationsListener?.close();
    operations.close();
    await runtime.close();
    // An unreachable or refused database is a setup problem: one line naming the config, no stack.
    if (store.kind === 'postgres') throw new ConfigError(`${configFile}: store: ${(error as Error).message}`);
    throw error;
  }
  const workflows = runtime.workflows;
  if (workflows) {
    const { warnAboutMissingTools } = await import('../workflows/loading/missingTools.js');
    const { DEFAULT_WORKFLOW_PREFIX } = await import('../workflows/loading/WorkflowCatalog.js');
    void warnAboutMissingTools({
      definitions: workflows.definitions,
      prefix: loaded?.config.workflows?.prefix ?? DEFAULT_WORKFLOW_PREFIX,
      tools: runtime.tools,
      upstreams: runtime.upstreams,
      upstreamPrefixes: new Map(
        upstreamsOf(loaded).map((spec) => [
          spec.name,
          upstreamToolPrefix(config.aggregator?.toolNamespace ?? DEFAULT_TOOL_NAMESPACE, spec.toolPrefix ?? spec.name.replaceAll('_', '-')),
        ]),
      ),
      logger,
    });
  }
  if (inspection?.stately) process.stderr.write(`${inspection.stately.instructions}\n`);
  if (inspection?.trace) logger.info(`tracing task actors to ${inspection.trace.file}${args.traceRaw ? ' (not redacted)' : ''}`);

  const storeText =
    store.kind === 'lowdb'
      ? `lowdb ${path.relative(process.cwd(), store.dir) || '.'}`
      : store.kind === 'sqlite'
        ? `sqlite ${path.relative(process.cwd(), store.file)}`
        : store.kind === 'postgres'
          ? `${(runtime.store as PostgresTaskStore).description}, instance ${runtime.cluster?.instanceId}`
          : 'memory';
  logger.info(`${runtime.tools.names().length} tools (${runtime.tools.names().join(', ')}); store: ${storeText}`);
  if (auth) logger.info(`bearer authentication: ${config.auth!.kind} (stdio, if served, is the local principal)`);
  const reloadable = auth?.verifier as { reload?: () => Promise<void> } | undefined;
  if (reloadable?.reload) {
    // Token rotation without a restart: SIGHUP re-reads the token file; a broken file keeps the old tokens.
    const onHup = () =>
      void reloadable.reload!().then(
        () => logger.info('SIGHUP: token file reloaded'),
        (error: unknown) => logger.error('SIGHUP: token file not reloaded, the previous tokens stay in force', error),
      );
    process.on('SIGHUP', onHup);
    runtime.onClose(() => void process.off('SIGHUP', onHup));
  }
  const exposed = [url, wsUrl].filter((u): u is string => u !== undefined && !/^\w+:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(u));
  if (!auth && exposed.length > 0) {
    logger.info(
      `warning: no auth configured and ${exposed.join(', ')} is not a loopback address: every caller there is the same anonymous principal`,
    );
  }
  if (runtime.upstreams)
    logger.info(
      `${runtime.upstreams.status().length} upstreams (connecting in the background); state file ${path.relative(process.cwd(), stateFileOf(loaded))}`,
    );
  if (url) logger.info(`serving MCP over Streamable HTTP at ${url}`);
  if (wsUrl) logger.info(`serving MCP over WebSocket at ${wsUrl}`);
  if (operationsUrl)
    logger.info(`serving /healthz and /readyz${wantMetrics ? ', /metrics' : ''}${wantUi ? ', /ui/' : ''} at ${operationsUrl}`);
  const operatorsText = auth ? `tokens with the ${operations.gate.scope} scope` : 'loopback clients';
  if (wantMetrics && url && operatorRoutesOnHttp) logger.info(`serving /metrics at ${new URL('/metrics', url).href} (${operatorsText})`);
  if (wantUi && url && operatorRoutesOnHttp) logger.info(`serving the tasks dashboard at ${new URL('/ui/', url).href} (${operatorsText})`);
  return {
    runtime,
    ...(url ? { url } : {}),
    ...(wsUrl ? { wsUrl } : {}),
    ...(operationsUrl ? { operationsUrl } : {}),
    operations,
    ...(workflows ? { workflows } : {}),
    stop: () => runtime.close(),
  };
}

/** `routes`, plus the OAuth callback of `configured` when it serves one (`credentials.callbackUrl`). */
async function withOAuthCallback(
  routes: HttpRoutes,
  configured: ConfiguredUpstreamOAuth | undefined,
  logger: { error(message: string): void },
): Promise<HttpRoutes> {
  if (!configured?.callbackPath) return routes;
  const { oauthCallbackRoute, withCallbackRoute } = await import('../upstreams/oauth/OAuthCallbackRoute.js');
  return withCallbackRoute(
    routes,
    oauthCallbackRoute(configured.oauth, configured.callbackPath, (message) => logger.error(message)),
  );
}
