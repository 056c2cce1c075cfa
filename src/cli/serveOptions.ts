/**
 * `taskvisor serve`'s config file turned into runtime options: what the
 * composition root builds the runtime from. Paths in the config are
 * resolved from the config file's folder.
 */
import path from 'node:path';
import type { InspectionEvent } from 'xstate';
import { resolveFromConfig, type LoadedConfig } from '../config/loadConfig.js';
import type { OperationsOptions } from '../operations/OperationsOptions.js';
import type { Logger } from '../runtime/Logger.js';
import { DEFAULT_STORE_DIR, type RuntimeOptions, type WorkflowsOption } from '../server/TaskvisorRuntime.js';
import { DEFAULT_SQLITE_FILE, type TaskStoreConfig } from '../store/index.js';
import { stateFileOf, upstreamsOf } from '../upstreams/fromConfig.js';
import { definedProps } from '../core/definedProps.js';

/** What the flags add to the config: the logger, the inspection hook, and the operations they turn on. */
export interface ServeFlagOptions {
  logger: Logger;
  inspect?: (event: InspectionEvent) => void;
  operations: OperationsOptions;
}

/** The options of the runtime `loaded` (none: the defaults) describes, with what the flags add. */
export function runtimeOptionsOf(loaded: LoadedConfig | undefined, flags: ServeFlagOptions): RuntimeOptions {
  const config = loaded?.config ?? {};
  return {
    ...(config.server?.name ? { name: config.server.name } : {}),
    ...(config.server?.version ? { version: config.server.version } : {}),
    ...(config.server?.instructions ? { instructions: config.server.instructions } : {}),
    store: storeConfigOf(loaded),
    ...definedProps({
      ttlMs: config.tasks?.ttlMs,
      pollIntervalMs: config.tasks?.pollIntervalMs,
      promoteAfterMs: config.tasks?.promoteAfterMs,
      reapIntervalMs: config.tasks?.reapIntervalMs,
      finishedRetentionMs: config.tasks?.finishedRetentionMs,
      passivateIdleAfterMs: config.tasks?.passivateIdleAfterMs,
    }),
    ...(config.tasks?.poll ? { poll: config.tasks.poll } : {}),
    ...(config.tasks?.pollRateLimit ? { pollRateLimit: config.tasks.pollRateLimit } : {}),
    ...(config.limits ? { limits: config.limits } : {}),
    ...(config.toolPolicy ? { toolPolicy: config.toolPolicy } : {}),
    ...(config.rateLimits ? { rateLimits: config.rateLimits } : {}),
    ...(flags.inspect ? { inspect: flags.inspect } : {}),
    ...(config.upstreams?.length
      ? {
          upstreams: upstreamsOf(loaded),
          stateFile: stateFileOf(loaded),
          ...(config.aggregator?.toolNamespace ? { toolNamespace: config.aggregator.toolNamespace } : {}),
        }
      : {}),
    ...(loaded && config.workflows ? { workflows: workflowsOptionOf(loaded, config.workflows) } : {}),
    operations: {
      ...flags.operations,
      ...(config.operations?.operatorScope ? { operatorScope: config.operations.operatorScope } : {}),
      ...(config.http?.path ? { mcpPath: config.http.path } : {}),
      ...(config.operations?.upstreamsGateReadiness !== undefined
        ? { upstreamsGateReadiness: config.operations.upstreamsGateReadiness }
        : {}),
      ...(config.operations?.maxEventLoopDelayMs !== undefined ? { maxEventLoopDelayMs: config.operations.maxEventLoopDelayMs } : {}),
    },
    logger: flags.logger,
  };
}

/** The store a config names, paths resolved (also what `taskvisor tasks` reads). */
export function storeConfigOf(loaded: LoadedConfig | undefined): TaskStoreConfig {
  const config = loaded?.config ?? {};
  return config.store?.kind === 'memory'
    ? { kind: 'memory' }
    : config.store?.kind === 'postgres'
      ? { ...config.store }
      : config.store?.kind === 'sqlite'
        ? { kind: 'sqlite', file: config.store.file ? resolveFromConfig(loaded, config.store.file) : path.resolve(DEFAULT_SQLITE_FILE) }
        : { kind: 'lowdb', dir: config.store?.dir ? resolveFromConfig(loaded, config.store.dir) : path.resolve(DEFAULT_STORE_DIR) };
}

/** The `workflows:` section of a config as the runtime's `workflows` option, its folder resolved from the config's. */
function workflowsOptionOf(loaded: LoadedConfig, section: NonNullable<LoadedConfig['config']['workflows']>): WorkflowsOption {
  return {
    dir: resolveFromConfig(loaded, section.dir),
    ...definedProps({
      prefix: section.prefix,
      watch: section.watch,
      historyRetentionMs: section.historyRetentionMs,
      historyMaxRuns: section.historyMaxRuns,
    }),
  };
}
