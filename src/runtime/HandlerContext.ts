/**
 * What a tool handler is handed as `ctx`: a view of its run that turns each
 * member it reads into a call on the run ({@link HandlerRun}).
 */
import type { Grants } from '../core/principal.js';
import type { InputRequest } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import type { TraceContext } from '../core/traceContext.js';
import type { ElicitResult, LogLevel, ToolContext } from '../tools/ToolDefinition.js';
import type { ToolExecutionOptions } from './ToolExecutionOptions.js';

/** What `ctx` calls on its run (a `ToolExecution`). */
export interface HandlerRun {
  readonly signal: AbortSignal;
  /** What the originating request declared (T-19, D-10). */
  readonly clientCapabilities: JsonObject | undefined;
  /** The run's task id, `undefined` until the call is a task. */
  currentTaskId(): string | undefined;
  requestInput(key: string, request: InputRequest): Promise<unknown>;
  saveCheckpoint(checkpoint: unknown): Promise<void>;
  sleep(key: string, ms: number): Promise<void>;
  /** Checks the message, then sets it. */
  setStatusChecked(message: string): void;
  progress(progress: number, total?: number, message?: string): void;
  log(level: LogLevel, data: unknown, logger?: string): void;
}

/**
 * The `ctx` a handler gets. A class, not an object literal: a literal with a
 * `get taskId()` accessor is kept by V8 in dictionary mode, each with its own
 * property table and a closure per member (+1.0 KB per live idle task;
 * measured −2.8 KB with this class). Here the instance holds four fields
 * in one hidden class shared by every run, and the members live once on the
 * prototype as accessors that hand out a function bound to this run on each
 * read: handlers written as `async (args, { signal, setStatus }) => …` keep
 * working, as they did with the literal, and nothing is allocated per task
 * until a member is read. `signal` too is read from the run only when the
 * handler reads it: the run makes its AbortSignal then (T-24: a signal read
 * before a cancel fires on it, one read after comes aborted).
 */
export class HandlerContext implements ToolContext {
  readonly principal: string;
  readonly grants: Grants | undefined;
  readonly checkpoint: unknown;
  readonly trace: TraceContext | undefined;
  readonly #execution: HandlerRun;

  constructor(execution: HandlerRun, options: ToolExecutionOptions) {
    this.#execution = execution;
    this.principal = options.principal;
    this.grants = options.grants;
    this.checkpoint = options.checkpoint;
    this.trace = options.trace;
  }

  get signal(): AbortSignal {
    return this.#execution.signal;
  }

  get taskId(): string | undefined {
    return this.#execution.currentTaskId();
  }

  get clientCapabilities(): JsonObject | undefined {
    return this.#execution.clientCapabilities;
  }

  get elicit(): ToolContext['elicit'] {
    const execution = this.#execution;
    return async (key, params) =>
      (await execution.requestInput(key, { method: 'elicitation/create', params: { mode: 'form', ...params } })) as ElicitResult;
  }

  get requestInput(): ToolContext['requestInput'] {
    const execution = this.#execution;
    return (key, request) => execution.requestInput(key, request);
  }

  get saveCheckpoint(): ToolContext['saveCheckpoint'] {
    const execution = this.#execution;
    return (checkpoint) => execution.saveCheckpoint(checkpoint);
  }

  get sleep(): ToolContext['sleep'] {
    const execution = this.#execution;
    return (key, ms) => execution.sleep(key, ms);
  }

  get setStatus(): ToolContext['setStatus'] {
    const execution = this.#execution;
    return (message) => execution.setStatusChecked(message);
  }

  get progress(): ToolContext['progress'] {
    const execution = this.#execution;
    return (progress, total, message) => execution.progress(progress, total, message);
  }

  get log(): ToolContext['log'] {
    const execution = this.#execution;
    return (level, data, logger) => execution.log(level, data, logger);
  }
}
