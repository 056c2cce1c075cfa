/**
 * `taskvisor/workflows`: YAML workflows (docs/workflows.md) — the catalog that
 * serves them as tools, the file checks, and the Go-template engine muster's
 * files use.
 */
export { workflowMachine, WORKFLOW_MACHINE_VERSION } from '../../machines/workflow/index.js';
export {
  WorkflowCatalog,
  workflowTool,
  DEFAULT_WORKFLOW_PREFIX,
  type WorkflowCatalogOptions,
  type WorkflowReloadReport,
} from './WorkflowCatalog.js';
export { ToolInvoker, type ToolInvocation } from './ToolInvoker.js';
export { parseWorkflow, loadWorkflowFile, loadWorkflowDir, checkWorkflowSet, WorkflowError } from './loadWorkflows.js';
export type { WorkflowDefinition, WorkflowStep, WorkflowSubStep, WorkflowArg, WorkflowCondition } from './definition.js';
export type { StepRecord, WorkflowCheckpoint } from './WorkflowRunner.js';
export {
  compileGoTemplate,
  TemplateSyntaxError,
  TemplateExecError,
  FUNCTIONS as GO_TEMPLATE_FUNCTIONS,
  type GoTemplate,
} from './gotemplate/index.js';
