/**
 * What a runtime is built from (`createRuntime(options)`): the options the
 * composition root ({@link composeRuntime}) turns into the object graph, and
 * the small public types around them.
 */
import path from 'node:path';
import type { InspectionEvent } from 'xstate';
import { DEFAULT_STORE_DIR } from '../core/constants.js';
import type { Limits } from '../limits/Limits.js';
import type { OperationsOptions } from '../operations/OperationsOptions.js';
import type { PromptDefinition } from '../prompts/PromptDefinition.js';
import type { ResourceDefinition, ResourceTemplateDefinition } from '../resources/ResourceDefinition.js';
import type { Logger } from '../runtime/Logger.js';
import type { PollPolicyOptions } from '../runtime/PollPolicy.js';
import type { PollRateLimitOptions } from '../runtime/PollRateLimiter.js';
import type { TaskStoreConfig } from '../store/index.js';
import type { TaskStore } from '../store/TaskStore.js';
import type { ToolDefinition } from '../tools/ToolDefinition.js';
import type { UpstreamSpec } from '../upstreams/UpstreamSpec.js';
import type { UpstreamCredentialSource } from '../upstreams/identity/UpstreamCredentialSource.js';

/** The `workflows` runtime option. */
export interface WorkflowsOption {
  /** Folder of the workflow files (`*.yaml`); every file must be valid or `open()` (and so `start()`) fails naming it. */
  dir: string;
  /** Tool name prefix. Default `workflow_`. */
  prefix?: string;
  /** Reload when the folder changes (default true). */
  watch?: boolean;
  /** How long a finished run stays in the history. */
  historyRetentionMs?: number;
  /** Most runs the history keeps. */
  historyMaxRuns?: number;
}

/** Options of {@link createRuntime}. */
export interface RuntimeOptions {
  /** `serverInfo` reported to clients. */
  name?: string;
  version?: string;
  instructions?: string;
  /**
   * Operation timeout: how long one store operation of a request (create,
   * get, update, a task's write) may take before it fails with a retryable
   * `-32603` instead of hanging on a stalled store (a client waits for an
   * answer, not for a disk). Default 10 000 ms; 0 turns the timeout off.
   */
  storeTimeoutMs?: number;
  /** @deprecated the same as {@link storeTimeoutMs} (a task's deadline is its ttl; this is an operation timeout). */
  storeDeadlineMs?: number;
  /** A store instance, or the config of a built-in one. Default: `lowdb` under `./.taskvisor`. */
  store?: TaskStore | TaskStoreConfig;
  /** Default task lifetime from creation in ms; `null` = unlimited. Default 1 hour. */
  ttlMs?: number | null;
  /** Default polling hint in ms, for tools that set none and have no history yet. Default 1000. */
  pollIntervalMs?: number;
  /** Bounds and growth of the adaptive polling hint (see `PollPolicy`). */
  poll?: Omit<PollPolicyOptions, 'defaultMs'>;
  /** Pace clients that poll `tasks/get` much faster than asked (T-27). Off by default. */
  pollRateLimit?: PollRateLimitOptions | false;
  /** How long an `auto` call may run before it becomes a task. Default 200 ms. */
  promoteAfterMs?: number;
  /** How often expired tasks are purged. Default 60 s; 0 disables. */
  reapIntervalMs?: number;
  /**
   * A finished task stays readable at least this long after it finished, even
   * when its ttl ran out (so a task failed by its deadline is seen). Default 60 s.
   */
  finishedRetentionMs?: number;
  /**
   * How long a task of a `resume: 'replay' | 'resume'` tool waits for input,
   * with everything stored, before its actor leaves memory and the task lives
   * in the store only (passivation; clients cannot tell). `false`: never.
   * Default 60 s. See docs/tools.md.
   */
  passivateIdleAfterMs?: number | false;
  /** Receives every inspection event of every task actor (see `src/inspection`). Off by default. */
  inspect?: (event: InspectionEvent) => void;
  /** Frames a listen stream may have pending before it is closed as too slow. Default 1000. */
  maxListenBacklog?: number;
  /**
   * Resource limits (request size, tasks and listen streams per principal,
   * timeouts); each missing one has a safe default (see `Limits`). A bad
   * value throws a `RangeError` naming it.
   */
  limits?: Partial<Limits>;
  /**
   * Upstream MCP servers whose tools this runtime re-exposes as
   * `<toolNamespace>_<prefix>_<tool>` and whose tasks it forwards (docs/aggregator.md).
   */
  upstreams?: UpstreamSpec[];
  /**
   * Per-principal credentials by upstream name, used instead of the
   * upstream's `identity` (e.g. each principal's own OAuth grant): calls to
   * such an upstream go over a connection per principal.
   */
  upstreamCredentials?: Readonly<Record<string, UpstreamCredentialSource>>;
  /** First part of upstream tool names; the whole `<toolNamespace>_` space is reserved for them. Default `x`. */
  toolNamespace?: string;
  /**
   * YAML workflows served as tools (docs/workflows.md): the files of `dir`
   * are loaded when the runtime opens, before the store (a bad file touches
   * nothing) and so before recovery (unfinished runs resume), and every run
   * is recorded in the store (the execution history tools).
   */
  workflows?: WorkflowsOption;
  /**
   * Health, readiness, metrics and the dashboard of this runtime
   * (`runtime.operations`; docs/operations.md). Absent: none are built;
   * `createOperations` from `taskvisor/operations` builds them later instead.
   */
  operations?: OperationsOptions;
  /**
   * The runtime state file (secrets, upstream discover cache, upstream health).
   * Default: `runtime-state.json` next to the store (`./.taskvisor/` for a memory store).
   */
  stateFile?: string;
  /** Key (≥ 32 bytes) protecting MRTR `requestState`. Default: random per process. */
  requestStateKey?: string | Uint8Array;
  logger?: Logger;
}

/** Summary of what `start()` found in the store. */
export interface StartReport {
  resumed: number;
  failed: number;
  /** Damaged records set aside instead of recovered (recovery never stops on one bad record). */
  quarantined: number;
}

/** Anything `runtime.use(...)` registers: `defineTool`, `defineResource`, `defineResourceTemplate`, `definePrompt` values. */
export type Definition = ToolDefinition | ResourceDefinition | ResourceTemplateDefinition | PromptDefinition;

/** `runtime-state.json` next to the store's files. */
export function defaultStateFile(store: RuntimeOptions['store']): string {
  if (store && !isStore(store)) {
    if (store.kind === 'lowdb') return path.resolve(store.dir, 'runtime-state.json');
    if (store.kind === 'sqlite') return path.resolve(path.dirname(store.file), 'runtime-state.json');
  }
  return path.resolve(DEFAULT_STORE_DIR, 'runtime-state.json');
}

/** Whether the `store` option is a store instance rather than the config of a built-in one. */
export function isStore(value: unknown): value is TaskStore {
  return typeof value === 'object' && value !== null && typeof (value as TaskStore).create === 'function';
}
