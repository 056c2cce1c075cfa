/**
 * `taskvisor/inspection`: the statecharts and how to watch them: the
 * machines, their exports (Stately JSON, Mermaid, DOT), trace and Stately
 * inspectors (docs/api.md, docs/inspection.md).
 */
export { taskMachine, statusOf, TASK_MACHINE_VERSION } from '../../machines/task/index.js';
export { workflowMachine, WORKFLOW_MACHINE_VERSION } from '../../machines/workflow/index.js';
export {
  upstreamMachine,
  upstreamSupervisorMachine,
  UPSTREAM_MACHINE_VERSION,
  UPSTREAM_SUPERVISOR_MACHINE_VERSION,
  backoffDelay,
  type UpstreamState,
  type BackoffPolicy,
} from '../../machines/upstream/index.js';
export { MACHINES, findMachine, type MachineEntry } from '../../machines/index.js';
export { toStatelyJson, toMermaid, toDot } from './exportMachine.js';
export { createTraceInspector, type TraceInspector, type TraceInspectorOptions, type TraceLine } from './trace.js';
export { attachStatelyInspector, type StatelyInspector, type StatelyInspectorOptions } from './statelyInspector.js';
export { composeInspectors, REDACTED } from './redact.js';
