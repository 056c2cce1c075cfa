/**
 * What the `TaskSupervisor` is built with, and what a task is created with
 * (and the task actor's input made of it).
 */
import type { Grants } from '../core/principal.js';
import type { InspectionEvent } from 'xstate';
import type { TaskInput } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import type { TaskCommand, TaskStore } from '../store/TaskStore.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { ToolDefinition } from '../tools/ToolDefinition.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import type { Limits } from '../limits/Limits.js';
import type { Logger } from './Logger.js';
import type { PollPolicy } from './PollPolicy.js';
import type { ToolExecution } from './ToolExecution.js';

export interface TaskSupervisorOptions {
  store: TaskStore;
  tools: Pick<ToolRegistry, 'get'>;
  logger: Logger;
  /** How often expired tasks are purged; 0 disables the reaper. */
  reapIntervalMs?: number;
  /**
   * Also receives every inspection event of every task actor (the Stately
   * inspector, a trace). Opt-in: when absent, task actors carry no inspection hook at all (the
   * persister subscribes to them) and xstate delivers no inspection events.
   */
  inspect?: (event: InspectionEvent) => void;
  /** A finished task stays readable at least this long after it finished. Default 60 s. */
  finishedRetentionMs?: number;
  /** Sets the `pollIntervalMs` a task is shown with (T-27); without it the stored hint is shown. */
  pollPolicy?: PollPolicy;
  /** Live tasks per principal, pending input requests per task. Default: `DEFAULT_LIMITS`. */
  limits?: Pick<Limits, 'maxLiveTasksPerPrincipal' | 'maxPendingInputRequestsPerTask'>;
  now?: () => number;
  /**
   * Recover the store's unfinished tasks in `start()` (default true). A
   * cluster turns it off: its instances adopt tasks through leases instead.
   */
  recoverOnStart?: boolean;
  /**
   * Routes `update`/`cancel` of an unfinished task that runs on another
   * instance (shared store); without it such a call is acknowledged only.
   */
  forward?: (record: TaskRecord, command: TaskCommand) => Promise<void>;
  /**
   * How long a task of a re-runnable tool (`resume: 'replay' | 'resume'`)
   * waits for input, with all its changes stored, before its actor leaves
   * memory and the task lives in the store only (passivation);
   * the next `update` runs the tool again with its answers replayed,
   * `cancel` and the ttl end it from the store. Clients cannot tell. `false`:
   * never. Default 60 s.
   */
  passivateIdleAfterMs?: number | false;
}

export interface CreateTaskOptions {
  tool: ToolDefinition;
  args: JsonObject;
  principal: string;
  /** What the principal holds: kept with the task, so its workflow steps run with the caller's rights after a restart too. */
  grants?: Grants;
  ttlMs: number | null;
  pollIntervalMs?: number;
  clientCapabilities?: JsonObject;
  /** W3C trace context of the creating call. */
  trace?: TaskInput['trace'];
  /** A run already under way (`auto` promotion); otherwise one starts with the actor, after the write. */
  execution?: ToolExecution;
}

/** Listener of visible task changes (status, statusMessage, inputRequests, result, error). */
export type TaskChangeListener = (record: TaskRecord) => void;

/** The new task actor's input for a task created with `options`. */
export function taskInputOf(options: CreateTaskOptions, taskId: string, now: number): TaskInput {
  return {
    taskId,
    owner: options.principal,
    tool: options.tool.name,
    args: options.args,
    now,
    ttlMs: options.ttlMs,
    ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
    ...(options.execution?.statusMessage !== undefined ? { statusMessage: options.execution.statusMessage } : {}),
    // The run already waits for input: the task is created input_required with it.
    ...(options.execution?.pendingInputRequests ? { inputRequests: options.execution.pendingInputRequests } : {}),
    ...(options.clientCapabilities !== undefined ? { clientCapabilities: options.clientCapabilities } : {}),
    ...(storedGrants(options.grants) ?? {}),
    ...(options.trace !== undefined ? { trace: options.trace } : {}),
  };
}

/** `grants` as the task context keeps them (plain arrays, only what there is); `undefined` when there is nothing to keep. */
export function storedGrants(grants: Grants | undefined): { grants: { scopes?: string[]; groups?: string[] } } | undefined {
  const scopes = grants?.scopes?.length ? { scopes: [...grants.scopes] } : {};
  const groups = grants?.groups?.length ? { groups: [...grants.groups] } : {};
  return scopes.scopes || groups.groups ? { grants: { ...scopes, ...groups } } : undefined;
}
