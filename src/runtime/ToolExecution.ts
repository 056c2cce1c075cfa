/**
 * One run of a tool handler: the worker behind a task, or a synchronous call.
 *
 * An execution reports to its task actor only through events (ARCHITECTURE
 * "Workers"). It can start before any task exists (`auto` promotion): until
 * a task actor attaches, its events are buffered and replayed on attach.
 * Its parts: the handler's `ctx` (HandlerContext), its durable sleeps
 * (RunSleeps), the checks on its input requests (inputRequestCheck) and the
 * shaping of how it ends (handlerResult).
 */
import type { InputRequest, TaskEvent } from '../../machines/task/index.js';
import { refusedAnswer as answerRefusal } from '../tools/elicitationAnswer.js';
import { boundedStatusMessage, jsonBytes, MAX_INPUT_REQUEST_BYTES } from '../tasks/storedText.js';
import type { JsonObject } from '../core/json.js';
import { ToolError } from '../core/errors.js';
import { hasOwnKeys } from '../core/hasOwnKeys.js';
import { limitExceeded } from '../limits/Limits.js';
import { progressText } from '../tools/CallerRelay.js';
import { LOG_LEVELS, type LogLevel, type ToolContext } from '../tools/ToolDefinition.js';
import { HandlerContext, type HandlerRun } from './HandlerContext.js';
import { checkStructuredContent, normalizeResult, toTaskError } from './handlerResult.js';
import { refusedInputRequest } from './inputRequestCheck.js';
import { InputRequiredSignal } from './InputRequiredSignal.js';
import { RunSleeps, type SleepingRun } from './RunSleeps.js';
import type { ExecutionOutcome, InputMode, ToolExecutionOptions } from './ToolExecutionOptions.js';

export type { ExecutionOutcome, InputMode, ToolExecutionOptions } from './ToolExecutionOptions.js';
export { isInputRequiredSignal } from './InputRequiredSignal.js';

export class ToolExecution implements HandlerRun, SleepingRun {
  readonly outcome: Promise<ExecutionOutcome>;
  /*
   * Made when the handler first reads `ctx.signal` (or the runtime reads `signal`): an AbortSignal Node
   * has handed out costs ~770 B (its own hidden class, two Maps), and most runs never look at theirs
   * until they need to. Until then {@link abortReason} is the whole abort state; a signal made after
   * the abort comes already aborted with the same reason (T-24: a late reader still sees the cancel).
   */
  private controller: AbortController | undefined;
  /** Set once by {@link abort}: the run is over for good. */
  private aborted = false;
  private abortReason: unknown;
  /*
   * The key and sleep collections below are made on first use: a run that
   * never asks for input or sleeps (most) holds none of them. Nine empty
   * Maps and Sets were ~1.5 KB of every live task's heap and nine
   * allocations of every create.
   */
  private issuedKeys: Set<string> | undefined;
  private outstanding: Set<string> | undefined;
  /** Answers given so far, by key; made when the first is (a copy of the options' answers when there are some). */
  private answers: Record<string, unknown> | undefined;
  private waiters: Map<string, { resolve: (value: unknown) => void; reject: (error: unknown) => void }> | undefined;
  /** Requests this run issued that nobody answered yet, by key. */
  private pending: Map<string, InputRequest> | undefined;
  /** Events emitted before a task actor attached (made on first use). */
  private buffered: TaskEvent[] | undefined;
  private sink: ((event: TaskEvent) => void) | undefined;
  private cancelRequested = false;
  private inputMode: InputMode;
  private taskIdValue: string | undefined;
  private statusMessageValue: string | undefined;
  private inputNeededListeners: Set<() => void> | undefined;
  /** The run's clock. */
  readonly now: () => number;
  /** Resolves when the task's changes so far are stored (its persister); set once the run belongs to a task. */
  private durable: { flushed(): Promise<void> } | undefined;
  private checkpointValue: unknown;
  /**
   * Keys answered before this run that the handler has not asked for again:
   * while any is left, the handler is replaying what it did before (a
   * restart or rehydration, `resume: 'replay'`), and the status messages it
   * set back then are not set again (the task would show an old one, not
   * what it does now). Empty once it asks for anything new. A `resume` run starts
   * from its checkpoint, past some of those keys: it replays nothing.
   */
  private replaying: Set<string> | undefined;
  /** The task's sleeps (earlier runs' and this one's): made when the run sleeps, or restored with some. */
  private sleeps: RunSleeps | undefined;

  /** Progress and log messages to the synchronous caller; dropped once the run belongs to a task. */
  private relay: ToolExecutionOptions['relay'];

  private readonly options: ToolExecutionOptions;

  constructor(given: ToolExecutionOptions) {
    // The relay is kept apart from the options (which live as long as the run) so that dropping it frees it;
    // runs without one (every task the supervisor starts) keep the options object they were given.
    let options = given;
    if (given.relay) {
      const { relay, ...rest } = given;
      options = rest;
      this.relay = relay;
    }
    this.options = options;
    if (options.issuedKeys?.length) this.issuedKeys = new Set(options.issuedKeys);
    if (options.outstandingKeys?.length) this.outstanding = new Set(options.outstandingKeys);
    if (options.answers && hasOwnKeys(options.answers)) this.answers = { ...options.answers };
    this.inputMode = options.inputMode;
    this.taskIdValue = options.taskId;
    this.now = options.now ?? Date.now;
    this.checkpointValue = options.checkpoint;
    if (options.sleeps) this.sleeps = new RunSleeps(Object.entries(options.sleeps));
    // Slept keys are replayed work too: a status message set before a sleep the handler sleeps again is not set again.
    if (options.checkpoint === undefined && (options.answers || options.sleeps)) {
      const replayed = [...Object.keys(options.answers ?? {}), ...Object.keys(options.sleeps ?? {})];
      if (replayed.length > 0) this.replaying = new Set(replayed);
    }
    // The outcome becomes the task's terminal event once an actor listens (`run` emits it as it settles).
    this.outcome = this.run();
  }

  /** Aborted with the run ({@link abort}); made on first read, aborted already when the run is. */
  get signal(): AbortSignal {
    let controller = this.controller;
    if (!controller) {
      controller = this.controller = new AbortController();
      if (this.aborted) controller.abort(this.abortReason);
    }
    return controller.signal;
  }

  get taskId(): string | undefined {
    return this.taskIdValue;
  }

  get clientCapabilities(): JsonObject | undefined {
    return this.options.clientCapabilities;
  }

  /** The last `setStatus` message, to seed a task created by promotion. */
  get statusMessage(): string | undefined {
    return this.statusMessageValue;
  }

  /** The input requests waiting for an answer (a task created now starts `input_required` with them); `undefined` when none. */
  get pendingInputRequests(): Record<string, InputRequest> | undefined {
    return this.pending?.size ? Object.fromEntries(this.pending) : undefined;
  }

  /** Calls `listener` every time the handler asks for input nobody has answered yet. */
  onInputNeeded(listener: () => void): () => void {
    const listeners = (this.inputNeededListeners ??= new Set());
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  /** Binds the run to its task: later input requests wait for `tasks/update`. */
  becomeTask(taskId: string): void {
    this.taskIdValue = taskId;
    this.inputMode = 'wait';
    // The synchronous request is over: its relay (and the per-request server it reaches) must not live as long as the task.
    this.relay = undefined;
  }

  /** The last checkpoint saved (or resumed from). */
  get checkpoint(): unknown {
    return this.checkpointValue;
  }

  /**
   * Connects the task actor: buffered events are replayed, later ones
   * forwarded. `durable.flushed()` resolves when the task's changes so far
   * are stored (what `saveCheckpoint` waits for).
   */
  attach(sink: (event: TaskEvent) => void, durable?: { flushed(): Promise<void> }): void {
    this.sink = sink;
    this.durable = durable;
    const buffered = this.buffered;
    this.buffered = undefined;
    if (buffered) for (const event of buffered) sink(event);
  }

  detach(): void {
    this.sink = undefined;
  }

  /** Cooperative cancel (T-24): the signal fires; the handler may still finish. */
  cancel(): void {
    this.cancelRequested = true;
    this.abort(new DOMException('The task was cancelled', 'AbortError'));
  }

  /** Stops the run for good (the task ended, the request went away, the server stops). */
  abort(reason: unknown = new DOMException('The call was aborted', 'AbortError')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.abortReason = reason;
    this.controller?.abort(reason);
    if (this.waiters) for (const waiter of this.waiters.values()) waiter.reject(reason);
    this.waiters?.clear();
    // Its sleeps are over: a cancelled handler that goes on is no sleeping task (never passivated as one).
    if (this.sleeps?.abort(reason)) this.emit({ type: 'WOKE', at: this.now(), until: null });
  }

  /** Hands answers to outstanding input requests to the handler. */
  deliver(responses: Record<string, unknown>): void {
    for (const [key, response] of Object.entries(responses)) {
      Object.defineProperty((this.answers ??= {}), key, { value: response, enumerable: true, writable: true, configurable: true });
      this.outstanding?.delete(key);
      this.pending?.delete(key);
      const waiter = this.waiters?.get(key);
      if (waiter) {
        this.waiters!.delete(key);
        waiter.resolve(response);
      }
    }
  }

  /** Reports `event` to the task actor; buffered until one attaches. */
  emit(event: TaskEvent): void {
    if (this.sink) this.sink(event);
    else (this.buffered ??= []).push(event);
  }

  private emitOutcome(outcome: ExecutionOutcome): void {
    const at = this.now();
    switch (outcome.kind) {
      case 'done':
        this.emit({ type: 'WORK_DONE', at, result: { ...outcome.result, resultType: 'complete' } });
        break;
      case 'failed':
        this.emit({ type: 'WORK_FAILED', at, error: outcome.error });
        break;
      case 'aborted':
        this.emit({ type: 'WORK_ABORTED', at });
        break;
      case 'input-required':
        break; // synchronous only: no task listens
    }
  }

  private async run(): Promise<ExecutionOutcome> {
    // Start on a later tick so the caller can attach listeners first.
    await Promise.resolve();
    const ctx = this.context();
    try {
      const returned = await this.options.tool.handler(this.options.args, ctx);
      return this.settle({
        kind: 'done',
        result: checkStructuredContent(this.options.tool, normalizeResult(this.options.tool.name, returned)),
      });
    } catch (error) {
      if (error instanceof InputRequiredSignal) return this.settle({ kind: 'input-required', key: error.key, request: error.request });
      if (this.cancelRequested && this.aborted) return this.settle({ kind: 'aborted' });
      return this.settle({ kind: 'failed', error: toTaskError(this.options.tool.name, error) });
    }
  }

  /**
   * The run's outcome, emitted on the next microtask: queued as `run` returns, so it comes before every
   * reaction to {@link outcome}, as a `then` the constructor added would. Queued only now, not waiting on
   * `outcome` all the run long: that would be a closure, a promise and a reaction per live task.
   */
  private settle(outcome: ExecutionOutcome): ExecutionOutcome {
    queueMicrotask(() => this.emitOutcome(outcome));
    return outcome;
  }

  private context(): ToolContext {
    return new HandlerContext(this, this.options);
  }

  /** The run's task id, `undefined` until the call is a task (`ctx.taskId`). */
  currentTaskId(): string | undefined {
    return this.taskIdValue;
  }

  /** `ctx.setStatus`: checks the message, then sets it. */
  setStatusChecked(message: string): void {
    if (typeof message !== 'string') throw new TypeError('setStatus(message): message must be a string');
    this.setStatus(message);
  }

  /** `ctx.log`: to the caller while the call is synchronous; dropped once it is a task (its request is over). */
  log(level: LogLevel, data: unknown, logger?: string): void {
    if (!LOG_LEVELS.includes(level)) throw new TypeError(`log(level, data): level must be one of ${LOG_LEVELS.join(', ')}`);
    if (logger !== undefined && typeof logger !== 'string') throw new TypeError('log(level, data, logger): logger must be a string');
    if (this.taskIdValue === undefined) this.relay?.log?.({ level, data, ...(logger !== undefined ? { logger } : {}) });
  }

  private setStatus(text: string): void {
    // Kept in the record and shown to every reader: bounded where it enters (T-32: informative only, so cut).
    const message = boundedStatusMessage(text);
    this.statusMessageValue = message;
    if (this.replaying?.size) return;
    this.emit({ type: 'STATUS', at: this.now(), message });
  }

  progress(progress: number, total?: number, message?: string): void {
    if (typeof progress !== 'number' || !Number.isFinite(progress))
      throw new TypeError('progress(progress): progress must be a finite number');
    if (total !== undefined && (typeof total !== 'number' || !Number.isFinite(total))) {
      throw new TypeError('progress(progress, total): total must be a finite number');
    }
    if (message !== undefined && typeof message !== 'string')
      throw new TypeError('progress(progress, total, message): message must be a string');
    const update = { progress, ...(total !== undefined ? { total } : {}), ...(message !== undefined ? { message } : {}) };
    if (this.taskIdValue === undefined) this.relay?.progress?.(update);
    // T-32: a task reports progress through its statusMessage; a call that may still become one keeps it for the task.
    if (this.taskIdValue !== undefined || this.inputMode === 'wait') this.setStatus(progressText(update));
  }

  async saveCheckpoint(checkpoint: unknown): Promise<void> {
    // A copy through JSON: what is stored is what a restart reads back, and later mutation cannot leak in.
    const json = JSON.stringify(checkpoint);
    if (json === undefined) throw new TypeError('saveCheckpoint(checkpoint): the checkpoint must be JSON');
    const value: unknown = JSON.parse(json);
    this.checkpointValue = value;
    this.emit({ type: 'CHECKPOINT', at: this.now(), checkpoint: value });
    if (this.sink && this.durable) {
      // Let the event reach the actor (and its persister) before waiting for the write (and its retries).
      await Promise.resolve();
      await this.durable.flushed();
    }
  }

  /** `ctx.sleep`: a durable sleep (see {@link RunSleeps}). */
  sleep(key: string, ms: number): Promise<void> {
    if (typeof key !== 'string' || key.length === 0) return Promise.reject(new TypeError('sleep(key, ms): key must be a non-empty string'));
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0)
      return Promise.reject(new TypeError(`sleep(key, ms): ms must be a finite number >= 0, got ${String(ms)}`));
    if (this.aborted) return Promise.reject(this.abortReason);
    return (this.sleeps ??= new RunSleeps()).sleep(this, key, ms);
  }

  replayed(key: string): void {
    this.replaying?.delete(key);
  }

  newWork(): void {
    this.replaying?.clear();
  }

  requestInput(key: string, request: InputRequest): Promise<unknown> {
    if (typeof key !== 'string' || key.length === 0) {
      return Promise.reject(new TypeError('Input request keys must be non-empty strings'));
    }
    if (this.aborted) return Promise.reject(this.abortReason);
    // A restored or retried run gets the answers it was already given (replay).
    if (this.answers && Object.hasOwn(this.answers, key)) {
      // T-19: an MRTR retry's answers come straight from the client; an accepted form that does not fit the
      // requestedSchema is refused (-32602), never handed to the handler.
      const refusedAnswer = this.options.answersFromClient ? answerRefusal(key, request, this.answers[key]) : undefined;
      if (refusedAnswer) return Promise.reject(new ToolError(refusedAnswer.code, refusedAnswer.message));
      this.replayed(key);
      return Promise.resolve(this.answers[key]);
    }
    // Past everything it did before: from here on the handler does new work.
    this.newWork();
    // Only request kinds the client declared on the originating call (T-19, D-10).
    const refused = refusedInputRequest(request, this.options.clientCapabilities);
    if (refused) return Promise.reject(refused);
    if (this.outstanding?.has(key)) {
      // Outstanding in the restored task already: wait without asking twice.
      return this.wait(key);
    }
    if (this.issuedKeys?.has(key)) {
      return Promise.reject(
        new Error(`Input key ${JSON.stringify(key)} was already used by this call; keys are unique for the task's life (T-18)`),
      );
    }
    if (this.inputMode === 'return') return Promise.reject(new InputRequiredSignal(key, request));
    const maxPending = this.options.maxPendingInputRequests;
    if (maxPending !== undefined && (this.outstanding?.size ?? 0) >= maxPending) {
      // The handler sees the error; uncaught, it ends the task failed with it (I-5).
      const error = limitExceeded(
        'maxPendingInputRequestsPerTask',
        maxPending,
        `too many input requests outstanding on this task; key ${JSON.stringify(key)} was not issued`,
      );
      return Promise.reject(new ToolError(error.code, error.message, error.data));
    }
    const requestBytes = jsonBytes(request);
    if (requestBytes > MAX_INPUT_REQUEST_BYTES) {
      // Kept in the record until answered: refused, not cut (the client must answer exactly what was asked).
      return Promise.reject(
        new RangeError(
          `Input request ${JSON.stringify(key)} is ${requestBytes} bytes of JSON; at most ${MAX_INPUT_REQUEST_BYTES} are allowed`,
        ),
      );
    }
    (this.issuedKeys ??= new Set()).add(key);
    (this.outstanding ??= new Set()).add(key);
    const answered = this.wait(key);
    (this.pending ??= new Map()).set(key, request);
    this.emit({ type: 'INPUT_NEEDED', at: this.now(), key, request });
    if (this.inputNeededListeners) for (const listener of this.inputNeededListeners) listener();
    return answered;
  }

  private wait(key: string): Promise<unknown> {
    return new Promise((resolve, reject) => (this.waiters ??= new Map()).set(key, { resolve, reject }));
  }
}
