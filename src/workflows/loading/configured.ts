/**
 * The `workflows:` section of a config file, opened: the catalog of the
 * folder it names, loaded (all files valid) and registered.
 */
import type { InspectionEvent } from 'xstate';
import { ConfigError, resolveFromConfig, type LoadedConfig } from '../../config/loadConfig.js';
import type { Logger } from '../../runtime/Logger.js';
import type { ToolRegistry } from '../../tools/ToolRegistry.js';
import { WorkflowCatalog } from './WorkflowCatalog.js';
import { WorkflowError } from './loadWorkflows.js';
import type { TaskStore } from '../../store/TaskStore.js';
import { RunHistory } from '../history/RunHistory.js';

/** Loads the configured workflows into `tools`; `undefined` without a `workflows` section. */
export async function openConfiguredWorkflows(
  loaded: LoadedConfig,
  tools: ToolRegistry,
  logger?: Logger,
  inspect?: (event: InspectionEvent) => void,
  store?: TaskStore,
): Promise<WorkflowCatalog | undefined> {
  const section = loaded.config.workflows;
  if (!section) return undefined;
  // With a store, every run is recorded there and the history tools are served.
  const history = store
    ? new RunHistory({
        store,
        ...(section.historyRetentionMs !== undefined ? { retentionMs: section.historyRetentionMs } : {}),
        ...(section.historyMaxRuns !== undefined ? { maxRuns: section.historyMaxRuns } : {}),
        ...(logger ? { logger } : {}),
      })
    : undefined;
  const catalog = new WorkflowCatalog({
    ...(history ? { history } : {}),
    tools,
    dir: resolveFromConfig(loaded, section.dir),
    ...(section.prefix !== undefined ? { prefix: section.prefix } : {}),
    ...(logger ? { logger } : {}),
    ...(inspect ? { inspect } : {}),
  });
  try {
    await catalog.load();
  } catch (error) {
    if (error instanceof WorkflowError) {
      throw new ConfigError(
        `${loaded.file}${loaded.positionOf?.(['workflows', 'dir']) ?? ''}: workflows.dir: ${section.dir}:\n${error.message}`,
      );
    }
    throw error;
  }
  return catalog;
}
