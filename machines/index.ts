/**
 * Every state machine taskvisor runs, in one list: what `taskvisor machines`
 * exports (JSON for Stately Studio, Mermaid, Graphviz DOT) and what
 * `docs/machines.md` draws. A new machine (upstream connection, workflow)
 * is one more entry here; the exporters, the CLI, the docs script and the
 * export tests pick it up from this list.
 */
import type { AnyStateMachine } from 'xstate';
import { TASK_MACHINE_VERSION, taskMachine } from './task/index.js';
import { WORKFLOW_MACHINE_VERSION, workflowMachine } from './workflow/index.js';
import {
  UPSTREAM_MACHINE_VERSION,
  UPSTREAM_SUPERVISOR_MACHINE_VERSION,
  upstreamMachine,
  upstreamSupervisorMachine,
} from './upstream/index.js';

export interface MachineEntry {
  /** Short, file-name-safe name: the CLI's `--machine NAME` and the export's file name. */
  readonly name: string;
  readonly machine: AnyStateMachine;
  /** The version stamped next to persisted snapshots of this machine (I-8). */
  readonly version: number;
  /** One line for `taskvisor machines list`. */
  readonly description: string;
}

export const MACHINES: ReadonlyArray<MachineEntry> = Object.freeze([
  {
    name: 'task',
    machine: taskMachine,
    version: TASK_MACHINE_VERSION,
    description: 'Lifecycle of one MCP task (SEP-2663): working ⇄ input_required → completed | failed | cancelled',
  },
  {
    name: 'workflow',
    machine: workflowMachine,
    version: WORKFLOW_MACHINE_VERSION,
    description: 'Executor of one YAML workflow run: steps in order → succeeded | (onFailure) failed | cancelled',
  },
  {
    name: 'upstream',
    machine: upstreamMachine,
    version: UPSTREAM_MACHINE_VERSION,
    description:
      'One upstream MCP connection: connecting → ready ⇄ degraded → backoff (capped exponential jitter) → connecting; stopped | failed',
  },
  {
    name: 'upstream-supervisor',
    machine: upstreamSupervisorMachine,
    version: UPSTREAM_SUPERVISOR_MACHINE_VERSION,
    description: 'Parent of the upstream connection actors; contains a crashed child (xstate.error.actor.*) and respawns it',
  },
]);

/** The registry entry called `name`, or `undefined`. */
export function findMachine(name: string): MachineEntry | undefined {
  return MACHINES.find((entry) => entry.name === name);
}
