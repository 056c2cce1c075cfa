/**
 * The workflows part of the object graph (the `workflows` option): the
 * catalog of the folder, registered as tools, and the run history in the
 * store. Built when the runtime opens, not when it is created: the template
 * engines are imported only by a runtime that has workflows, since they cost
 * start-up time every other runtime would pay for nothing.
 */
import type { InspectionEvent } from 'xstate';
import type { Logger } from '../runtime/Logger.js';
import type { TaskStore } from '../store/TaskStore.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import type { WorkflowCatalog } from '../workflows/loading/WorkflowCatalog.js';
import type { ServedSetup } from '../workflows/loading/ServedSetup.js';
import type { WorkflowsOption } from './RuntimeOptions.js';
import { definedProps } from '../core/definedProps.js';

/** What the workflows are wired to. */
export interface WorkflowsWiring {
  tools: ToolRegistry;
  store: TaskStore;
  logger: Logger;
  inspect: ((event: InspectionEvent) => void) | undefined;
  /** The upstreams and safe config view behind `core_service_list` / `core_config_get`. */
  setup: ServedSetup;
}

/** The loaded workflows of a runtime. */
export interface OpenedWorkflows {
  readonly catalog: WorkflowCatalog;
  /** Once the store is open: watch the folder (unless told not to) and sweep old runs out of the history. */
  serve(): void;
  close(): void;
}

/** Loads the folder of `option` (every file valid, or this rejects naming the bad one) and registers its workflows as tools. */
export async function composeWorkflows(option: WorkflowsOption, wiring: WorkflowsWiring): Promise<OpenedWorkflows> {
  const [{ WorkflowCatalog }, { RunHistory }] = await Promise.all([
    import('../workflows/loading/WorkflowCatalog.js'),
    import('../workflows/history/RunHistory.js'),
  ]);
  const history = new RunHistory({
    store: wiring.store,
    logger: wiring.logger,
    ...definedProps({ retentionMs: option.historyRetentionMs, maxRuns: option.historyMaxRuns }),
  });
  const catalog = new WorkflowCatalog({
    tools: wiring.tools,
    dir: option.dir,
    history,
    setup: wiring.setup,
    logger: wiring.logger,
    ...(option.prefix !== undefined ? { prefix: option.prefix } : {}),
    ...(wiring.inspect ? { inspect: wiring.inspect } : {}),
  });
  await catalog.load();
  let stopSweep: (() => void) | undefined;
  return {
    catalog,
    serve() {
      if (option.watch !== false) catalog.watch();
      // Runs past their retention leave the store even when no new run comes (docs/workflows.md "Run history").
      stopSweep = history.sweep();
    },
    close() {
      stopSweep?.();
      catalog.close();
    },
  };
}
