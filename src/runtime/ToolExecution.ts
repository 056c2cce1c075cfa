/**
 * One run of a tool handler: the worker behind a task, or a synchronous call.
 *
 * An execution reports to its task actor only through events (ARCHITECTURE
 * "Workers"). It can start before any task exists (`auto` promotion): until
 * a task actor attaches, its events are buffered and replayed on attach.
 */
import type { TraceContext } from '../core/traceContext.js';
import type { InputRequest, TaskError, TaskEvent } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import { ErrorCode, ToolError } from '../core/errors.js';
import { limitExceeded } from '../limits/Limits.js';
import {
  LOG_LEVELS,
  type ElicitParams,
  type ElicitResult,
  type LogLevel,
  type ToolContext,
  type ToolDefinition,
  type ToolResult,
} from '../tools/ToolDefinition.js';
import { progressText, type CallerRelay } from '../tools/CallerRelay.js';
import { missingCapabilities, requiredCapabilitiesFor } from '../core/inputCapabilities.js';
import { schemasOf } from '../tools/ToolSchema.js';
import { refusedAnswer } from '../tools/elicitationAnswer.js';
import { hasOwnKeys } from '../core/hasOwnKeys.js';
import { boundedStatusMessage, boundedTaskError, jsonBytes, MAX_INPUT_REQUEST_BYTES } from '../tasks/storedText.js';

/** How a run ended. */
export type ExecutionOutcome =
  | { kind: 'done'; result: JsonObject }
  | { kind: 'failed'; error: TaskError }
  | { kind: 'aborted' }
  /** Synchronous MRTR calls only: the handler asked for input nobody has given yet. */
  | { kind: 'input-required'; key: string; request: InputRequest };

/** What an unanswered input request does. */
export type InputMode =
  /** Wait for the answer (a task, or a call that may become one). */
  | 'wait'
  /** End the run with `input-required` so the caller can answer with MRTR (T-08). */
  | 'return';

export interface ToolExecutionOptions {
  tool: ToolDefinition;
  args: JsonObject;
  principal: string;
  taskId?: string;
  inputMode: InputMode;
  /** Answers already given, by key: replayed on a restart or carried by an MRTR retry. */
  answers?: Record<string, unknown>;
  /** `answers` came from the client with this request (MRTR), unchecked: each is checked against its form when asked for. */
  answersFromClient?: boolean;
  /** Keys issued before (a restored task): never issued again (T-18). */
  issuedKeys?: readonly string[];
  /** Keys outstanding in the restored task: waited for without asking again. */
  outstandingKeys?: readonly string[];
  /** Client capabilities of the creating request: input kinds it did not declare are refused (D-10, T-19). */
  clientCapabilities?: JsonObject;
  /** Wake times of the sleeps an earlier run of the task slept, by key (`ctx.sleep`): a sleep of one wakes then. */
  sleeps?: Record<string, number>;
  /** The checkpoint a `resume: 'resume'` run starts from (`ctx.checkpoint`). */
  checkpoint?: unknown;
  /** Input requests the run may have outstanding at once; one more fails with a limit error. Default: unbounded. */
  maxPendingInputRequests?: number;
  /** W3C trace context of the creating call (`ctx.trace`). */
  trace?: TraceContext;
  /** Progress and log messages for the synchronous request (`ctx.progress`, `ctx.log`), until the call is a task. */
  relay?: CallerRelay;
  now?: () => number;
}

/** Thrown inside a handler to unwind it when an MRTR call needs input. */
class InputRequiredSignal extends Error {
  constructor(
    readonly key: string,
    readonly request: InputRequest,
  ) {
    super(`input ${key} required`);
  }
}

/**
 * Whether `error` is the unwinding of a synchronous call that needs input
 * (MRTR): code that catches errors around `ctx.elicit` (a workflow step) must
 * rethrow it.
 */
export function isInputRequiredSignal(error: unknown): boolean {
  return error instanceof InputRequiredSignal;
}
/** `{elicitation: {url: {}}}` as "elicitation.url", for error messages. */
const describeCapabilities = (capabilities: Record<string, JsonObject>): string =>
  Object.entries(capabilities)
    .flatMap(([name, members]) => (Object.keys(members).length > 0 ? Object.keys(members).map((member) => `${name}.${member}`) : [name]))
    .join(', ');

/** Longest single setTimeout (larger delays overflow to 1 ms): a longer sleep is waited in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A pending `ctx.sleep`. */
interface Sleeper {
  wakeAt: number;
  timer: NodeJS.Timeout | undefined;
  resolve: () => void;
  reject: (error: unknown) => void;
}

const CAPABILITY_OF: Record<InputRequest['method'], string> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

export class ToolExecution {
  readonly outcome: Promise<ExecutionOutcome>;
  private readonly controller = new AbortController();
  /*
   * The key and sleep collections below are made on first use: a run that
   * never asks for input or sleeps (most) holds none of them. Nine empty
   * Maps and Sets were ~1.5 KB of every live task's heap (issue 20 item 3)
   * and nine allocations of every create (item 2).
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
  private readonly now: () => number;
  /** Resolves when the task's changes so far are stored (its persister); set once the run belongs to a task. */
  private durable: { flushed(): Promise<void> } | undefined;
  private checkpointValue: unknown;
  /**
   * Keys answered before this run that the handler has not asked for again:
   * while any is left, the handler is replaying what it did before (a
   * restart or rehydration, `resume: 'replay'`), and the status messages it
   * set back then are not set again (the task would show an old one, issue
   * 20 item 3). Empty once it asks for anything new. A `resume` run starts
   * from its checkpoint, past some of those keys: it replays nothing.
   */
  private replaying: Set<string> | undefined;
  /** Wake time of every sleep key known to the task (earlier runs' and this one's), by key. */
  private sleeps: Map<string, number> | undefined;
  /** Sleep keys this run has slept: a key sleeps once per run, like an input key is asked once (T-18). */
  private slept: Set<string> | undefined;
  /** The sleeps this run waits for now. */
  private sleepers: Map<string, Sleeper> | undefined;

  constructor(private readonly options: ToolExecutionOptions) {
    if (options.issuedKeys?.length) this.issuedKeys = new Set(options.issuedKeys);
    if (options.outstandingKeys?.length) this.outstanding = new Set(options.outstandingKeys);
    if (options.answers && hasOwnKeys(options.answers)) this.answers = { ...options.answers };
    this.inputMode = options.inputMode;
    this.taskIdValue = options.taskId;
    this.now = options.now ?? Date.now;
    this.checkpointValue = options.checkpoint;
    if (options.sleeps) this.sleeps = new Map(Object.entries(options.sleeps));
    // Slept keys are replayed work too: a status message set before a sleep the handler sleeps again is not set again.
    if (options.checkpoint === undefined && (options.answers || options.sleeps)) {
      const replayed = [...Object.keys(options.answers ?? {}), ...Object.keys(options.sleeps ?? {})];
      if (replayed.length > 0) this.replaying = new Set(replayed);
    }
    // The outcome becomes the task's terminal event once an actor listens (`run` emits it as it settles).
    this.outcome = this.run();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get taskId(): string | undefined {
    return this.taskIdValue;
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
    if (this.controller.signal.aborted) return;
    this.controller.abort(reason);
    if (this.waiters) for (const waiter of this.waiters.values()) waiter.reject(reason);
    this.waiters?.clear();
    if (this.sleepers?.size) {
      for (const sleeper of this.sleepers.values()) {
        clearTimeout(sleeper.timer);
        sleeper.reject(reason);
      }
      this.sleepers.clear();
      // Its sleeps are over: a cancelled handler that goes on is no sleeping task (never passivated as one).
      this.emit({ type: 'WOKE', at: this.now(), until: null });
    }
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

  private emit(event: TaskEvent): void {
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
      if (this.cancelRequested && this.controller.signal.aborted) return this.settle({ kind: 'aborted' });
      return this.settle({ kind: 'failed', error: toTaskError(this.options.tool.name, error) });
    }
  }

  /**
   * The run's outcome, emitted on the next microtask: queued as `run` returns, so it comes before every
   * reaction to {@link outcome}, as a `then` the constructor added would. Queued only now, not waiting on
   * `outcome` all the run long: that was a closure, a promise and a reaction per live task (issue 20).
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
    if (this.taskIdValue === undefined) this.options.relay?.log?.({ level, data, ...(logger !== undefined ? { logger } : {}) });
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
    if (this.taskIdValue === undefined) this.options.relay?.progress?.(update);
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

  /**
   * `ctx.sleep`: resolves at the key's wake time, fixed the first time the
   * task sleeps it (now + `ms`) and kept in its context, so a run of the
   * handler again (restart, rehydration) wakes at the stored time, at once
   * when it has passed. Before the call is a task the wake time is kept in
   * memory and handed to the task if the call is promoted (as its buffered
   * events are); a synchronous call that is never promoted just waits.
   */
  sleep(key: string, ms: number): Promise<void> {
    if (typeof key !== 'string' || key.length === 0) return Promise.reject(new TypeError('sleep(key, ms): key must be a non-empty string'));
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0)
      return Promise.reject(new TypeError(`sleep(key, ms): ms must be a finite number >= 0, got ${String(ms)}`));
    if (this.controller.signal.aborted) return Promise.reject(this.controller.signal.reason);
    if (this.slept?.has(key))
      return Promise.reject(
        new Error(`Sleep key ${JSON.stringify(key)} was already used by this call; sleep keys are unique for the task's life`),
      );
    (this.slept ??= new Set()).add(key);
    const now = this.now();
    let wakeAt = this.sleeps?.get(key);
    if (wakeAt === undefined) {
      // New work: from here on the handler does what it never did before.
      this.replaying?.clear();
      wakeAt = now + ms;
      (this.sleeps ??= new Map()).set(key, wakeAt);
      // Recorded even when due at once: a run again must find every key it slept.
      this.emit({ type: 'SLEEP', at: now, key, wakeAt, until: Math.min(wakeAt, this.earliestSleep()) });
    } else {
      this.replaying?.delete(key);
      // Replayed and still ahead (a restart while it slept): waited for again, until its stored time.
      if (wakeAt > now) this.emit({ type: 'SLEEP', at: now, key, wakeAt, until: Math.min(wakeAt, this.earliestSleep()) });
    }
    if (wakeAt <= now) {
      // Past (replayed after its time): the task may still show it as the sleep it waits for (restarted while it slept).
      const earliest = this.earliestSleep();
      this.emit({ type: 'WOKE', at: now, until: earliest === Infinity ? null : earliest });
      return Promise.resolve();
    }
    const due = wakeAt;
    return new Promise<void>((resolve, reject) => {
      const sleeper: Sleeper = { wakeAt: due, timer: undefined, resolve, reject };
      (this.sleepers ??= new Map()).set(key, sleeper);
      this.armSleep(key, sleeper);
    });
  }

  /** Earliest wake time of the pending sleeps, Infinity when none. */
  private earliestSleep(): number {
    let earliest = Infinity;
    if (this.sleepers) for (const sleeper of this.sleepers.values()) earliest = Math.min(earliest, sleeper.wakeAt);
    return earliest;
  }

  private armSleep(key: string, sleeper: Sleeper): void {
    const remaining = sleeper.wakeAt - this.now();
    if (remaining > 0) {
      sleeper.timer = setTimeout(() => this.armSleep(key, sleeper), Math.min(remaining, MAX_TIMER_MS));
      return;
    }
    this.sleepers?.delete(key);
    const earliest = this.earliestSleep();
    this.emit({ type: 'WOKE', at: this.now(), until: earliest === Infinity ? null : earliest });
    sleeper.resolve();
  }

  requestInput(key: string, request: InputRequest): Promise<unknown> {
    if (typeof key !== 'string' || key.length === 0) {
      return Promise.reject(new TypeError('Input request keys must be non-empty strings'));
    }
    if (this.controller.signal.aborted) return Promise.reject(this.controller.signal.reason);
    // A restored or retried run gets the answers it was already given (replay).
    if (this.answers && Object.hasOwn(this.answers, key)) {
      // T-19: an MRTR retry's answers come straight from the client; an accepted form that does not fit the
      // requestedSchema is refused (-32602), never handed to the handler.
      const refused = this.options.answersFromClient ? refusedAnswer(key, request, this.answers[key]) : undefined;
      if (refused) return Promise.reject(new ToolError(refused.code, refused.message));
      this.replaying?.delete(key);
      return Promise.resolve(this.answers[key]);
    }
    // Past everything it did before: from here on the handler does new work.
    this.replaying?.clear();
    const capability = CAPABILITY_OF[request.method];
    if (!capability) return Promise.reject(new TypeError(`Unsupported input request method ${JSON.stringify(request.method)}`));
    // Only request kinds the client declared on the originating call, down to members like elicitation.url (T-19, D-10).
    const missing =
      this.options.clientCapabilities && missingCapabilities(requiredCapabilitiesFor(request), this.options.clientCapabilities);
    if (missing) {
      return Promise.reject(
        new ToolError(
          ErrorCode.MissingRequiredClientCapability,
          `The client did not declare the ${describeCapabilities(missing)} capability`,
          {
            requiredCapabilities: missing,
          },
        ),
      );
    }
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

/**
 * The `ctx` a handler gets. A class, not an object literal: a literal with a
 * `get taskId()` accessor is kept by V8 in dictionary mode, each with its own
 * property table and a closure per member (+1.0 KB per live idle task, issue
 * 20; measured −2.8 KB with this class). Here the instance holds five fields
 * in one hidden class shared by every run, and the members live once on the
 * prototype as accessors that hand out a function bound to this run on each
 * read: handlers written as `async (args, { signal, setStatus }) => …` keep
 * working, as they did with the literal, and nothing is allocated per task
 * until a member is read.
 */
class HandlerContext implements ToolContext {
  readonly signal: AbortSignal;
  readonly principal: string;
  readonly checkpoint: unknown;
  readonly trace: TraceContext | undefined;
  readonly #execution: ToolExecution;

  constructor(execution: ToolExecution, options: ToolExecutionOptions) {
    this.#execution = execution;
    this.signal = execution.signal;
    this.principal = options.principal;
    this.checkpoint = options.checkpoint;
    this.trace = options.trace;
  }

  get taskId(): string | undefined {
    return this.#execution.currentTaskId();
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

/** A handler's return value as a `CallToolResult`; a string is one text block. */
export function normalizeResult(toolName: string, returned: ToolResult | string): JsonObject {
  if (typeof returned === 'string') return { content: [{ type: 'text', text: returned }] };
  if (returned === null || typeof returned !== 'object' || !Array.isArray(returned.content)) {
    throw new ToolError(
      ErrorCode.InternalError,
      `Tool ${toolName} returned an invalid result: expected a string or an object with a content array`,
    );
  }
  const { resultType: _ignored, ...result } = returned as ToolResult & { resultType?: unknown };
  return result;
}

/**
 * A tool that declares an `outputSchema` must answer `structuredContent`
 * matching it (MCP tools: "servers MUST provide structured results that
 * conform to this schema"); an `isError` result is exempt. A mismatch is the
 * tool's bug, so the call fails rather than handing clients data their
 * schema says cannot exist.
 */
function checkStructuredContent(tool: ToolDefinition, result: JsonObject): JsonObject {
  const output = schemasOf(tool).output;
  if (!output || result.isError === true) return result;
  const checked =
    result.structuredContent === undefined
      ? { ok: false as const, problems: ['(root): structuredContent is missing'] }
      : output.check(result.structuredContent);
  if (checked.ok) return result;
  throw new ToolError(
    ErrorCode.InternalError,
    `Tool ${tool.name} returned structuredContent that does not match its outputSchema: ${checked.problems.join('; ')}`,
  );
}

/** A thrown value as the JSON-RPC error of a failed task (T-15, I-5). */
export function toTaskError(toolName: string, error: unknown): TaskError {
  // A failed task keeps its error for its whole life: bounded here, where the tool's text enters.
  if (error instanceof ToolError || isCodedError(error)) {
    const coded = error as { code: number; message: string; data?: unknown };
    return boundedTaskError({
      code: coded.code,
      message: String(coded.message),
      ...(coded.data !== undefined ? { data: coded.data } : {}),
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return boundedTaskError({ code: ErrorCode.InternalError, message: `Tool ${toolName} failed: ${message}` });
}

function isCodedError(error: unknown): boolean {
  return error instanceof Error && 'code' in error && typeof error.code === 'number' && Number.isInteger(error.code);
}
