/**
 * The workflows a runtime serves: every `*.yaml` file of one folder becomes
 * a tool `<prefix><name>` in the runtime's ToolRegistry. With `watch()`, an
 * edited folder is re-read (debounced), re-validated and swapped in
 * atomically — one `notifications/tools/list_changed` — while a file that no
 * longer validates is reported and its previous version stays in service.
 */
import { watch, type FSWatcher } from 'node:fs';
import type { InspectionEvent } from 'xstate';
import type { Logger } from '../../runtime/Logger.js';
import type { ToolDefinition } from '../../tools/ToolDefinition.js';
import type { ToolRegistry } from '../../tools/ToolRegistry.js';
import { argsSchema } from '../model/argsSchema.js';
import type { WorkflowDefinition } from '../model/definition.js';
import { checkWorkflowSet, loadWorkflowDir, WorkflowError } from './loadWorkflows.js';
import { ToolInvoker } from '../engine/ToolInvoker.js';
import { workflowHandler } from '../engine/WorkflowRun.js';
import type { RunHistory } from '../history/RunHistory.js';
import { historyTools } from '../history/historyTools.js';
import { workflowManagementTools, type ServedWorkflows } from './workflowManagementTools.js';
import { serviceTools } from './serviceTools.js';
import type { ServedSetup } from './ServedSetup.js';

/** Default tool name prefix of workflows. */
export const DEFAULT_WORKFLOW_PREFIX = 'workflow_';

export interface WorkflowCatalogOptions {
  /** The registry the workflow tools go in (and whose tools their steps call). */
  tools: ToolRegistry;
  /** Folder of the workflow files. */
  dir: string;
  /** Tool name prefix. Default `workflow_`. */
  prefix?: string;
  logger?: Logger;
  /** Receives every workflow actor's inspection events (pass the runtime's `inspect`). */
  inspect?: (event: InspectionEvent) => void;
  /** Quiet time after the last file event before a reload. Default 150 ms. */
  debounceMs?: number;
  /**
   * Records every run and serves muster's `core_workflow_execution_list` /
   * `core_workflow_execution_get` over it. Without it a
   * synchronous run leaves no record.
   */
  history?: RunHistory;
  /** The upstreams and config view behind muster's `core_service_list` / `core_config_get`; without it they are not served. */
  setup?: ServedSetup;
}

/** What a reload did. */
export interface WorkflowReloadReport {
  /** Tool names served after the reload. */
  tools: string[];
  /** Whether the served set changed (and `list_changed` went out). */
  changed: boolean;
  /** Problems found; the affected previous versions stayed in service. */
  errors: string[];
}

/** The tool a definition becomes. */
export function workflowTool(
  definition: WorkflowDefinition,
  prefix: string,
  invoker: ToolInvoker,
  inspect?: (event: InspectionEvent) => void,
  history?: RunHistory,
): ToolDefinition {
  return {
    name: prefix + definition.name,
    options: {
      title: definition.title ?? definition.name,
      description: definition.description ?? `Workflow ${definition.name}`,
      inputSchema: argsSchema(definition.args),
      taskBehavior: definition.taskBehavior ?? 'auto',
      ...(definition.ttlMs !== undefined ? { ttlMs: definition.ttlMs } : {}),
      ...(definition.pollIntervalMs !== undefined ? { pollIntervalMs: definition.pollIntervalMs } : {}),
      // A run continues from its checkpoint after a restart (the in-flight step runs again).
      resume: 'resume',
    },
    handler: workflowHandler(definition, {
      invoker,
      toolName: prefix + definition.name,
      ...(inspect ? { inspect } : {}),
      ...(history ? { history } : {}),
    }),
  };
}

export class WorkflowCatalog {
  private readonly prefix: string;
  private readonly invoker: ToolInvoker;
  /** Definitions in service, by file. */
  private current = new Map<string, WorkflowDefinition>();
  private registered: string[] = [];
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reloading: Promise<unknown> = Promise.resolve();
  private lastErrors = new Set<string>();
  private readonly reloadListeners = new Set<(report: WorkflowReloadReport) => void>();

  constructor(private readonly options: WorkflowCatalogOptions) {
    this.prefix = options.prefix ?? DEFAULT_WORKFLOW_PREFIX;
    this.invoker = new ToolInvoker(options.tools);
  }

  /** The run history every run is recorded in, when the catalog has one. */
  get history(): RunHistory | undefined {
    return this.options.history;
  }

  /** The definitions in service. */
  get definitions(): WorkflowDefinition[] {
    return [...this.current.values()];
  }

  /** What the management tools read, at call time. */
  private readonly served: ServedWorkflows = {
    definitions: () => this.definitions,
    prefix: () => this.prefix,
    hasTool: (name) => this.options.tools.has(name),
  };

  /** The tool names in service. */
  get toolNames(): string[] {
    return [...this.registered];
  }

  /**
   * First load: every file must be valid and every name free, otherwise this
   * throws a {@link WorkflowError} listing every problem and registers nothing.
   */
  async load(): Promise<string[]> {
    const { definitions, errors } = await loadWorkflowDir(this.options.dir);
    errors.push(...checkWorkflowSet(definitions, this.prefix));
    if (errors.length > 0) throw new WorkflowError(errors.map((error) => error.message).join('\n'));
    this.install(new Map(definitions.map((definition) => [definition.file, definition])));
    return this.toolNames;
  }

  /** Re-reads the folder; a bad file keeps its previous version in service. Reloads never overlap. */
  reload(): Promise<WorkflowReloadReport> {
    const next = this.reloading.then(() => this.reloadNow());
    this.reloading = next.catch(() => {});
    return next;
  }

  /** Calls `listener` after every reload (watched or explicit). */
  onReload(listener: (report: WorkflowReloadReport) => void): () => void {
    this.reloadListeners.add(listener);
    return () => this.reloadListeners.delete(listener);
  }

  /** Reloads on every change in the folder, debounced. */
  watch(): void {
    if (this.watcher) return;
    this.watcher = watch(this.options.dir, { persistent: false }, () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => void this.reload(), this.options.debounceMs ?? 150);
    });
    this.watcher.on('error', (error) => this.options.logger?.error(`watching ${this.options.dir} failed`, error));
  }

  /** Stops watching (the tools stay registered). */
  close(): void {
    clearTimeout(this.timer);
    this.watcher?.close();
    this.watcher = undefined;
  }

  private async reloadNow(): Promise<WorkflowReloadReport> {
    const logger = this.options.logger;
    let report: WorkflowReloadReport;
    try {
      const { definitions, errors } = await loadWorkflowDir(this.options.dir);
      const next = new Map(definitions.map((definition) => [definition.file, definition]));
      const messages = errors.map((error) => error.message);
      for (const error of errors) {
        // The previous version of a file that no longer validates stays in service.
        const previous = error.file ? this.current.get(error.file) : undefined;
        if (previous) next.set(previous.file, previous);
        messages[errors.indexOf(error)] += previous ? `\n  (the previous version of workflow ${previous.name} stays in service)` : '';
      }
      const setErrors = checkWorkflowSet([...next.values()], this.prefix);
      if (setErrors.length > 0) {
        report = {
          tools: this.toolNames,
          changed: false,
          errors: [...messages, ...setErrors.map((e) => `${e.message}\n  (no workflow was changed)`)],
        };
      } else if (sameDefinitions(this.current, next)) {
        report = { tools: this.toolNames, changed: false, errors: messages };
      } else {
        try {
          this.install(next);
          report = { tools: this.toolNames, changed: true, errors: messages };
        } catch (error) {
          report = {
            tools: this.toolNames,
            changed: false,
            errors: [...messages, `${(error as Error).message}\n  (no workflow was changed)`],
          };
        }
      }
    } catch (error) {
      report = { tools: this.toolNames, changed: false, errors: [(error as Error).message] };
    }
    // A file that stays broken is reported once, not on every later reload.
    for (const message of report.errors) if (!this.lastErrors.has(message)) logger?.error(`workflow reload: ${message}`);
    this.lastErrors = new Set(report.errors);
    if (report.changed) logger?.info(`workflows reloaded: ${report.tools.join(', ') || '(none)'}`);
    for (const listener of this.reloadListeners) listener(report);
    return report;
  }

  /** Swaps the served set for `next` in one registry change; throws (changing nothing) on a name collision. */
  private install(next: Map<string, WorkflowDefinition>): void {
    const tools = [...next.values()].map((definition) =>
      workflowTool(definition, this.prefix, this.invoker, this.options.inspect, this.options.history),
    );
    // The history tools are swapped in with the workflows, so they live and go with the catalog.
    if (this.options.history) tools.push(...historyTools(this.options.history));
    // So are muster's read-only management tools: they exist exactly when workflows are served.
    tools.push(...workflowManagementTools(this.served));
    if (this.options.setup) tools.push(...serviceTools(this.options.setup));
    try {
      this.options.tools.swap(this.registered, tools);
    } catch (error) {
      // A name taken by a tool that is not one of ours (T-name collisions are refused, never shadowed).
      throw new WorkflowError(
        `cannot serve the workflows: ${(error as Error).message} (a workflow tool name must not collide with another tool)`,
      );
    }
    this.current = next;
    this.registered = tools.map((tool) => tool.name);
  }
}

function sameDefinitions(a: Map<string, WorkflowDefinition>, b: Map<string, WorkflowDefinition>): boolean {
  if (a.size !== b.size) return false;
  for (const [file, definition] of a) {
    const other = b.get(file);
    if (!other || JSON.stringify(other) !== JSON.stringify(definition)) return false;
  }
  return true;
}
