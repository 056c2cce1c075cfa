/**
 * `taskvisor/workflows`: YAML workflows (docs/workflows.md) — the catalog that
 * serves them as tools, the file checks, and the Go-template engine muster's
 * files use.
 *
 * The folders:
 * - `engine/`: one run, a worker of the runtime — `WorkflowRun` wires the
 *   `scheduler` (sequence, `needs` DAG), the `StepExecutor` (tool and input
 *   steps; `expansion` for `forEach`/`parallel`), the `retryPolicy`,
 *   `conditions` and `checkpointing`;
 * - `model/`: what a workflow is (its schema, `needs` graph, durations);
 * - `templates/`: JSONata and Go templates (`gotemplate/`, sprig included);
 * - `history/`: the run history and its tools;
 * - `loading/`: reading workflow files and config, and the catalog that
 *   serves a directory of them. Only this folder talks to files and config.
 */
export { workflowMachine, WORKFLOW_MACHINE_VERSION } from '../../machines/workflow/index.js';
export {
  WorkflowCatalog,
  workflowTool,
  DEFAULT_WORKFLOW_PREFIX,
  type WorkflowCatalogOptions,
  type WorkflowReloadReport,
} from './loading/WorkflowCatalog.js';
export { ToolInvoker, type ToolInvocation } from './engine/ToolInvoker.js';
export { parseWorkflow, loadWorkflowFile, loadWorkflowDir, checkWorkflowSet, WorkflowError } from './loading/loadWorkflows.js';
export type { WorkflowDefinition, WorkflowStep, WorkflowSubStep, WorkflowArg, WorkflowCondition } from './model/definition.js';
export type { StepBackoff, StepRecord, WorkflowCheckpoint } from './engine/WorkflowRun.js';
export {
  compileGoTemplate,
  TemplateSyntaxError,
  TemplateExecError,
  FUNCTIONS as GO_TEMPLATE_FUNCTIONS,
  type GoTemplate,
} from './templates/gotemplate/index.js';
export {
  RunHistory,
  RUN_STATUSES,
  DEFAULT_HISTORY_MAX_RUNS,
  DEFAULT_HISTORY_RETENTION_MS,
  type RunHistoryOptions,
  type RunStatus,
  type RunSummary,
  type RunDetail,
  type RunStep,
  type RunList,
  type RunListQuery,
} from './history/RunHistory.js';
export { EXECUTION_LIST_TOOL, EXECUTION_GET_TOOL } from './history/historyTools.js';
export { EXECUTION_ID_META_KEY } from './engine/WorkflowRun.js';
