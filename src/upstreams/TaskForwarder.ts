/**
 * Forwards tool calls and `tasks/*` to upstreams (ARCHITECTURE "Aggregator
 * task forwarding"):
 *
 * - passthrough: a Tasks-capable inbound request gets the upstream's task
 *   under a wrapped id, and drives it through taskvisor's `tasks/*`;
 * - collapse: an inbound request that cannot take a task (no capability on
 *   this request, or a 2025-11-25 client) gets the final `CallToolResult`:
 *   taskvisor polls the upstream task itself and cancels it when the inbound
 *   request goes away;
 * - `-32021` naming the tasks extension when the upstream insists on
 *   something only a task-capable client could give.
 *
 * Routing is stateless: everything needed is in the wrapped id.
 */
import { traceMeta } from '../core/traceContext.js';
import { ProtocolError } from '@modelcontextprotocol/server';
import type { InputRequest } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import { ErrorCode, TaskNotFoundError, taskNotFound } from '../core/errors.js';
import { isTerminalStatus } from '../core/statuses.js';
import { TASKS_EXTENSION_ID, tasksCapability } from '../core/tasksExtension.js';
import type { ToolCallOutcome, ToolCallRequest } from '../runtime/ToolCaller.js';
import { progressText } from '../tools/CallerRelay.js';
import { LegacyTaskBridge } from './LegacyTaskBridge.js';
import { TaskProgressBoard } from './TaskProgressBoard.js';
import type { LegacyTaskSupport } from './legacyTaskShapes.js';
import type { RawOutcome, UpstreamConnection } from './UpstreamConnection.js';
import { UpstreamUnavailableError } from './UpstreamUnavailableError.js';
import { WrappedTaskIds } from './WrappedTaskIds.js';

const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';

/** What the forwarder needs from the upstream manager. */
export interface UpstreamDirectory {
  /** The open connection of `name`, or `undefined` while it is down. */
  connection(name: string): UpstreamConnection | undefined;
  /** Whether `name` is a configured upstream (known, perhaps down). */
  has(name: string): boolean;
  /** One line on why `name` is down and when it is retried. */
  describeDown(name: string): { state: string; lastError: string | null; retryAt: number | null };
}

/**
 * The error for an upstream that cannot be reached now: retryable, never an
 * invented task status. Clients get a stable message: the upstream's last
 * error (stderr lines, URLs, paths) stays in the log and `taskvisor upstreams`.
 */
export function upstreamUnavailable(name: string, down: { state: string; retryAt: number | null }): ProtocolError {
  const retry = down.retryAt !== null ? `; next connection attempt at ${new Date(down.retryAt).toISOString()}` : '';
  // A call cut off mid-flight may come before the upstream's machine has left `ready`.
  const why = down.state === 'ready' || down.state === 'degraded' ? 'the connection was lost' : down.state;
  return new ProtocolError(ErrorCode.InternalError, `Upstream ${name} is unavailable (${why})${retry}; retry later`, {
    upstream: name,
    retryable: true,
    state: down.state,
    ...(down.retryAt !== null ? { retryAt: new Date(down.retryAt).toISOString() } : {}),
  });
}

/** What following one upstream task needs, whichever era the upstream speaks. */
interface UpstreamTaskOps {
  /** The task as a 2026-07-28 `tasks/get` answers it (upstream id). */
  get(taskId: string): Promise<JsonObject>;
  cancel(taskId: string): Promise<void>;
}

const TASKS_ONLY: JsonObject = { extensions: { [TASKS_EXTENSION_ID]: {} } };

/** One forwarded call's relay (see `TaskForwarder.relayFor`). */
interface CallRelay {
  /** The progress token sent upstream with the call. */
  token: string;
  /** The call became the forwarded task `upstreamId`: its progress goes to the task's statusMessage from now on. */
  handOver(upstreamId: string): void;
  /** The call was answered: stop relaying to the caller. */
  end(): void;
}

export class TaskForwarder {
  /** 2025-11-25 task-augmented tools (execution.taskSupport) spoken to v1-era upstreams. */
  private readonly legacy: LegacyTaskBridge;
  /** Upstream progress of passed-through tasks, shown as their statusMessage. */
  private readonly progress = new TaskProgressBoard();

  constructor(
    private readonly directory: UpstreamDirectory,
    private readonly ids: WrappedTaskIds,
  ) {
    this.legacy = new LegacyTaskBridge(
      (connection, method, params, options) => this.send(connection, method, params, {}, options),
      (outcome) => this.answer(outcome),
    );
  }

  /** Whether `taskId` is routed here (shape only; the MAC is checked per request). */
  owns(taskId: unknown): boolean {
    return WrappedTaskIds.looksWrapped(taskId);
  }

  /**
   * One call of upstream `upstream`'s tool `tool` on behalf of `request`.
   * `taskSupport` is the tool's 2025-11-25 `execution.taskSupport` (only a
   * v1-era upstream has it): such a tool is called as a task, in that era's
   * protocol, whenever it must be (`required`) or the caller can take one.
   */
  async callTool(
    upstream: string,
    tool: string,
    request: ToolCallRequest,
    taskSupport: LegacyTaskSupport = 'forbidden',
  ): Promise<ToolCallOutcome> {
    const connection = this.open(upstream);
    // The MRTR retry of a collapsed call whose upstream task waits for input answers that task, in either era.
    const resume = resumeOf(request);
    if (resume?.kind === 'task') return this.resumeTask(upstream, connection, resume, request);
    const relay = this.relayFor(upstream, connection, request);
    try {
      const outcome =
        connection.era === 'legacy' && (taskSupport === 'required' || (taskSupport === 'optional' && request.declaresTasks))
          ? await this.callLegacyTask(upstream, connection, tool, request, relay)
          : await this.callModern(upstream, connection, tool, request, relay, resume);
      return outcome;
    } finally {
      relay.end();
    }
  }

  /**
   * Relays what the upstream says about one call while it runs: its progress
   * (for our progress token) to the caller's `progressToken`, its log
   * messages to the caller. Once the call became a forwarded task, progress
   * keeps arriving with no request to carry it: it becomes the task's
   * `statusMessage` ({@link TaskProgressBoard}) until the task ends.
   */
  private relayFor(upstream: string, connection: UpstreamConnection, request: ToolCallRequest): CallRelay {
    const token = connection.newProgressToken();
    let taskKey: string | undefined;
    const stopProgress = connection.onProgress(token, (update) => {
      if (taskKey !== undefined) this.progress.set(taskKey, progressText(update));
      else request.relay?.progress?.(update);
    });
    const stopLog = request.relay?.log ? connection.addLogSink(request.relay.log) : () => {};
    return {
      token,
      handOver: (upstreamId) => {
        taskKey = TaskProgressBoard.key(upstream, upstreamId);
        this.progress.track(taskKey, stopProgress);
      },
      end: () => {
        stopLog();
        if (taskKey === undefined) stopProgress();
      },
    };
  }

  private async callModern(
    upstream: string,
    connection: UpstreamConnection,
    tool: string,
    request: ToolCallRequest,
    relay: CallRelay,
    resume: ResumeRound | undefined,
  ): Promise<ToolCallOutcome> {
    // The caller's own capabilities go upstream on every call, collapsed ones too: the upstream checks them (T-19).
    // Upstream tasks are requested whenever the upstream supports them: passed through to a Tasks-capable caller,
    // collapsed for any other (the upstream never sees who is behind us).
    const askTask = connection.tasks;
    const capabilities = withTasks(request.clientCapabilities ?? {}, askTask);
    const params: JsonObject = { name: tool, arguments: request.args ?? {} };
    // The caller's trace context goes on (issue 16.3): the upstream's work joins the caller's trace.
    if (request.trace) params._meta = traceMeta(request.trace);
    if (resume?.kind === 'round') {
      // The MRTR retry of an upstream's own input round: its answers and its requestState go back as they came (§4.4).
      params.inputResponses = answersFor(resume.keys, request.answers);
      if (resume.requestState !== undefined) params.requestState = resume.requestState;
    }
    const outcome = await this.send(connection, 'tools/call', params, capabilities, {
      ...(request.signal ? { signal: request.signal } : {}),
      progressToken: relay.token,
    });
    if (outcome.kind === 'error') {
      // T-03/T-19: the upstream needs a capability the caller did not declare. The tasks extension is never
      // the missing one here (we declare it whenever the upstream takes tasks): say what the upstream said.
      if (outcome.error.code === ErrorCode.MissingRequiredClientCapability && !request.declaresTasks) {
        throw new ProtocolError(
          ErrorCode.MissingRequiredClientCapability,
          `Missing required client capability: the upstream tool ${request.name} needs a capability this request did not declare (${outcome.error.message})`,
          outcome.error.data,
        );
      }
      throw protocolError(namingOurTool(outcome.error, tool, request.name));
    }
    const result = outcome.result;
    if (result.resultType === 'task') {
      const upstreamId = result.taskId;
      if (typeof upstreamId !== 'string' || upstreamId.length === 0) {
        throw new ProtocolError(ErrorCode.InternalError, `Upstream ${upstream} answered a task without a taskId`);
      }
      // Passthrough only when this request declared the extension and we asked for a task;
      // a task the upstream returned unasked is collapsed, not trusted.
      if (request.declaresTasks && askTask) {
        relay.handOver(upstreamId);
        return { kind: 'forwarded-task', task: { ...stripMeta(result), taskId: this.ids.wrap(upstream, upstreamId, request.principal) } };
      }
      return this.collapse(upstream, this.opsOf(connection), upstreamId, result, request);
    }
    if (result.resultType === 'input_required') {
      // A synchronous upstream input round (MRTR, T-08) is the caller's to answer: relayed as ours, the upstream's
      // requestState kept inside our own (integrity-protected) one for the retry.
      const requests = inputRequestsOf(result);
      if (!requests) throw new ProtocolError(ErrorCode.InternalError, `Upstream ${upstream} asked for input without input requests`);
      const round: ResumeRound = {
        kind: 'round',
        keys: Object.keys(requests),
        ...(typeof result.requestState === 'string' ? { requestState: result.requestState } : {}),
      };
      return { kind: 'input-required', requests, answers: request.answers ?? {}, resume: round };
    }
    return { kind: 'result', result: withoutResultType(stripMeta(result)) };
  }

  /**
   * The MRTR retry of a collapsed call whose upstream task waits for input:
   * the answers go to that task (`tasks/update`), then it is followed again.
   */
  private async resumeTask(
    upstream: string,
    connection: UpstreamConnection,
    resume: ResumeTask,
    request: ToolCallRequest,
  ): Promise<ToolCallOutcome> {
    const ref = this.ids.unwrap(resume.taskId, request.principal);
    if (!ref || ref.upstream !== upstream) {
      throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid params: requestState does not belong to this call');
    }
    const ops = this.opsOf(connection);
    try {
      const responses = answersFor(resume.keys, request.answers);
      if (Object.keys(responses).length > 0) {
        if (connection.era === 'legacy') this.legacy.update(connection, ref.taskId, responses);
        else this.answer(await this.send(connection, 'tasks/update', { taskId: ref.taskId, inputResponses: responses }, TASKS_ONLY));
      }
      return await this.collapse(upstream, ops, ref.taskId, await ops.get(ref.taskId), request);
    } catch (error) {
      if (error instanceof TaskNotFoundError) {
        throw new ProtocolError(
          ErrorCode.InvalidParams,
          `Invalid params: the upstream work waiting for these answers has ended (it may have expired); call ${request.name} again`,
        );
      }
      throw error;
    }
  }

  /**
   * A 2025-11-25 task-augmented tool: the task is passed through to a
   * Tasks-capable caller under a wrapped id (like a 2026-07-28 upstream's),
   * collapsed for any other caller.
   */
  private async callLegacyTask(
    upstream: string,
    connection: UpstreamConnection,
    tool: string,
    request: ToolCallRequest,
    relay: CallRelay,
  ): Promise<ToolCallOutcome> {
    const outcome = await this.legacy.call(connection, tool, (request.args ?? {}) as JsonObject, {
      ...(request.signal ? { signal: request.signal } : {}),
      progressToken: relay.token,
      // The caller's trace context goes on to a 2025-11-25 upstream too (issue 16.3).
      ...(request.trace ? { meta: traceMeta(request.trace) } : {}),
    });
    if (outcome.kind === 'error') throw protocolError(outcome.error);
    if (outcome.kind === 'result') return { kind: 'result', result: withoutResultType(stripMeta(outcome.result)) }; // answered without a task
    const upstreamId = String(outcome.task.taskId);
    if (request.declaresTasks) {
      relay.handOver(upstreamId);
      return {
        kind: 'forwarded-task',
        task: { resultType: 'task', ...outcome.task, taskId: this.ids.wrap(upstream, upstreamId, request.principal) },
      };
    }
    return this.collapse(upstream, this.opsOf(connection), upstreamId, outcome.task, request);
  }

  /** `tasks/get` of a wrapped id: the upstream's answer with the id wrapped again. */
  async get(taskId: string, principal: string, inbound: JsonObject | undefined): Promise<JsonObject> {
    const { upstream, id, connection } = this.route(taskId, principal);
    const task =
      connection.era === 'legacy'
        ? await this.legacy.get(connection, id)
        : this.answer(await this.send(connection, 'tasks/get', { taskId: id }, withTasks(inbound ?? {}, true)));
    return { ...this.withProgress(upstream, id, stripMeta(task)), taskId };
  }

  /** A working task shows the upstream's latest progress as its `statusMessage` ("3/10: …"); an ended one stops being tracked. */
  private withProgress(upstream: string, upstreamId: string, task: JsonObject): JsonObject {
    const key = TaskProgressBoard.key(upstream, upstreamId);
    if (isTerminalStatus(task.status)) {
      this.progress.forget(key);
      return task;
    }
    const text = this.progress.text(key);
    return text !== undefined && task.status === 'working' ? { ...task, statusMessage: text } : task;
  }

  /** The task as a `notifications/tasks` frame carries it: no `resultType`, no upstream `_meta` (T-31). */
  async read(taskId: string, principal: string): Promise<JsonObject> {
    return asNotification(await this.get(taskId, principal, undefined));
  }

  /**
   * Follows a wrapped task for a listen stream and reports each visible
   * change. A Tasks-capable upstream is subscribed to (`subscriptions/listen`
   * with its task id, pushes arrive at once); in any case the task is also
   * polled at its own `pollIntervalMs` (bounded 100 ms – 5 s), since pushing
   * is optional for the upstream (T-29, T-50). While the upstream is down
   * nothing is reported (never an invented status); polling goes on slowly
   * and the subscription is opened again once it is back.
   */
  follow(taskId: string, principal: string, current: JsonObject, onChange: (task: JsonObject) => void): () => void {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    let last = visibleKey(current);
    let delay = followDelay(current);
    let unsubscribe: (() => void) | undefined;
    const ref = this.ids.unwrap(taskId, principal);
    const report = (task: JsonObject) => {
      if (stopped) return;
      const key = visibleKey(task);
      if (key === last) return;
      last = key;
      onChange(task);
      if (isTerminalStatus(task.status)) stop();
    };
    const subscribe = () => {
      const connection = ref ? this.directory.connection(ref.upstream) : undefined;
      if (!ref || unsubscribe || !connection?.isOpen || !connection.tasks) return;
      unsubscribe = connection.listen(
        [ref.taskId],
        (frame) => {
          if (frame.taskId === ref.taskId) report({ ...asNotification(stripMeta(frame)), taskId });
        },
        () => {
          unsubscribe = undefined; // the stream ended (upstream gone or closed it): polling goes on, we re-subscribe on the next good poll
        },
      );
    };
    const tick = async () => {
      if (stopped) return;
      try {
        const task = await this.read(taskId, principal);
        delay = followDelay(task);
        report(task);
        subscribe();
      } catch {
        delay = Math.min(5_000, Math.max(1_000, delay * 2));
      }
      if (!stopped) timer = setTimeout(() => void tick(), delay);
    };
    const stop = () => {
      stopped = true;
      clearTimeout(timer);
      unsubscribe?.();
      unsubscribe = undefined;
    };
    subscribe();
    timer = setTimeout(() => void tick(), delay);
    return stop;
  }

  /**
   * `tasks/update` of a wrapped id: the input responses go to the upstream as
   * they came. `dropped` names entries the SDK removed as malformed: a
   * 2025-11-25 task's requests are held here, so refusing those is ours.
   */
  async update(
    taskId: string,
    principal: string,
    responses: Record<string, unknown>,
    inbound: JsonObject | undefined,
    dropped: readonly string[] = [],
  ): Promise<void> {
    const { connection, id } = this.route(taskId, principal);
    if (connection.era === 'legacy') return this.legacy.update(connection, id, responses, dropped);
    this.answer(await this.send(connection, 'tasks/update', { taskId: id, inputResponses: responses }, withTasks(inbound ?? {}, true)));
  }

  async cancel(taskId: string, principal: string, inbound: JsonObject | undefined): Promise<void> {
    const { connection, id } = this.route(taskId, principal);
    if (connection.era === 'legacy') return this.legacy.cancel(connection, id);
    this.answer(await this.send(connection, 'tasks/cancel', { taskId: id }, withTasks(inbound ?? {}, true)));
  }

  /** Unwraps (MAC-checked for `principal`, I-7) and finds the connection. */
  private route(taskId: string, principal: string): { upstream: string; id: string; connection: UpstreamConnection } {
    const ref = this.ids.unwrap(taskId, principal);
    // Forged, altered, foreign, or of an upstream no longer configured: exactly the unknown-id error (T-14, T-10).
    if (!ref || !this.directory.has(ref.upstream)) throw taskNotFound();
    return { upstream: ref.upstream, id: ref.taskId, connection: this.open(ref.upstream) };
  }

  private open(upstream: string): UpstreamConnection {
    const connection = this.directory.connection(upstream);
    if (!connection || !connection.isOpen) throw upstreamUnavailable(upstream, this.directory.describeDown(upstream));
    return connection;
  }

  private async send(
    connection: UpstreamConnection,
    method: string,
    params: JsonObject,
    capabilities: JsonObject,
    options: { signal?: AbortSignal; progressToken?: string } = {},
  ): Promise<RawOutcome> {
    try {
      return await connection.request(method, params, capabilities, options);
    } catch (error) {
      if (error instanceof UpstreamUnavailableError) {
        const down = this.directory.describeDown(error.upstream);
        throw upstreamUnavailable(error.upstream, down);
      }
      throw error;
    }
  }

  /** A `tasks/*` answer, with the upstream's unknown-id error made ours word for word. */
  private answer(outcome: RawOutcome): JsonObject {
    if (outcome.kind === 'result') return outcome.result;
    // Only the upstream's "no such task" becomes ours word for word; other -32602s (bad inputResponses…) pass as they are.
    if (outcome.error.code === ErrorCode.InvalidParams && /task not found|task has expired|unknown task/i.test(outcome.error.message))
      throw taskNotFound();
    throw protocolError(outcome.error);
  }

  /**
   * Collapse to synchronous: follow the upstream task to its end at the
   * polling pace it asks for; cancel it upstream when the inbound request
   * goes away (T-24 on the upstream's side). Input the task asks for goes to
   * the caller as an MRTR round (T-08) whose retry answers the same upstream
   * task ({@link resumeTask}); the task waits upstream meanwhile, for at most
   * its own ttl.
   */
  private async collapse(
    upstream: string,
    ops: UpstreamTaskOps,
    upstreamId: string,
    first: JsonObject,
    request: ToolCallRequest,
  ): Promise<ToolCallOutcome> {
    const signal = request.signal;
    const cancelUpstream = () => ops.cancel(upstreamId).catch(() => undefined);
    let task = first;
    for (;;) {
      const status = task.status;
      if (status === 'completed') {
        return { kind: 'result', result: withoutResultType(stripMeta((task.result as JsonObject | undefined) ?? { content: [] })) };
      }
      if (status === 'failed') {
        const error = (task.error as { code?: number; message?: string; data?: unknown } | undefined) ?? {};
        throw new ProtocolError(error.code ?? ErrorCode.InternalError, error.message ?? 'The upstream task failed', error.data);
      }
      if (status === 'cancelled') throw new ProtocolError(ErrorCode.InternalError, 'The upstream task was cancelled');
      if (status === 'input_required') {
        const requests = inputRequestsOf(task);
        if (!requests && task === first) {
          // A CreateTaskResult never carries inputRequests (spec §1.3), also when it is created input_required: read them.
          task = await ops.get(upstreamId);
          continue;
        }
        if (!requests || request.cannotAnswerInput) {
          await cancelUpstream();
          if (request.cannotAnswerInput && requests) return { kind: 'input-required', requests, answers: request.answers ?? {} };
          // input_required with no request shown (a 2025-11-25 task whose request did not arrive in time): nothing to relay.
          throw new ProtocolError(
            ErrorCode.InternalError,
            `The upstream tool ${request.name} asked for input but sent no input request; the call was cancelled`,
          );
        }
        const waiting: ResumeTask = {
          kind: 'task',
          taskId: this.ids.wrap(upstream, upstreamId, request.principal),
          keys: Object.keys(requests),
        };
        return { kind: 'input-required', requests, answers: request.answers ?? {}, resume: waiting };
      }
      if (!isTerminalStatus(status) && !(await pause(pollDelay(task), signal))) {
        await cancelUpstream();
        throw new ProtocolError(ErrorCode.InternalError, 'The call was cancelled');
      }
      task = await ops.get(upstreamId);
    }
  }

  /** `tasks/get` and `tasks/cancel` on `connection` in the era it speaks. */
  private opsOf(connection: UpstreamConnection): UpstreamTaskOps {
    if (connection.era === 'legacy') {
      return { get: (id) => this.legacy.get(connection, id), cancel: (id) => this.legacy.cancel(connection, id) };
    }
    return {
      get: async (id) => this.answer(await this.send(connection, 'tasks/get', { taskId: id }, TASKS_ONLY)),
      cancel: async (id) => {
        this.answer(await this.send(connection, 'tasks/cancel', { taskId: id }, TASKS_ONLY));
      },
    };
  }
}

function asNotification(task: JsonObject): JsonObject {
  const { resultType: _resultType, _meta: _dropped, ...rest } = task;
  return rest;
}

/** What a listener sees change: status, message, input requests, result, error. */
function visibleKey(task: JsonObject): string {
  return JSON.stringify([task.status, task.statusMessage, task.inputRequests, task.result, task.error]);
}

function followDelay(task: JsonObject): number {
  const hint = typeof task.pollIntervalMs === 'number' ? task.pollIntervalMs : 1000;
  return Math.min(5_000, Math.max(100, hint));
}

/** The inbound capabilities with the tasks extension set (or removed when `tasks` is false). */
function withTasks(capabilities: JsonObject, tasks: boolean): JsonObject {
  const extensions = { ...((capabilities.extensions as JsonObject | undefined) ?? {}) };
  if (tasks) extensions[TASKS_EXTENSION_ID] = {};
  else delete extensions[TASKS_EXTENSION_ID];
  return { ...capabilities, extensions };
}

/** Drops the upstream's `serverInfo` (our SDK stamps ours); other `_meta` keys pass. */
function stripMeta(result: JsonObject): JsonObject {
  const meta = result._meta as JsonObject | undefined;
  if (!meta || !(SERVER_INFO_META_KEY in meta)) return result;
  const { [SERVER_INFO_META_KEY]: _dropped, ...rest } = meta;
  const { _meta, ...body } = result;
  return Object.keys(rest).length > 0 ? { ...body, _meta: rest } : body;
}

function withoutResultType(result: JsonObject): JsonObject {
  const { resultType: _resultType, ...rest } = result;
  return rest;
}

function protocolError(error: { code: number; message: string; data?: unknown }): ProtocolError {
  return new ProtocolError(
    typeof error.code === 'number' ? error.code : ErrorCode.InternalError,
    String(error.message ?? 'Upstream error'),
    error.data,
  );
}

/** The upstream's polling hint, bounded to 50 ms – 5 s. */
function pollDelay(task: JsonObject): number {
  const hint = typeof task.pollIntervalMs === 'number' ? task.pollIntervalMs : 1000;
  return Math.min(5_000, Math.max(50, hint));
}

/** Waits `ms`; resolves `false` when `signal` fired first. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A JSON-RPC error as an upstream answered it. */
type RawError = { code: number; message: string; data?: unknown };

/**
 * The upstream's error with its own name of the tool ("Invalid arguments for
 * tool sleep") replaced by the one the caller used (`x_demo_sleep`): the
 * caller has never heard of the upstream's name.
 */
function namingOurTool(error: RawError, upstreamName: string, ourName: string): RawError {
  if (typeof error.message !== 'string') return error;
  const pattern = new RegExp(`(\\btool\\s+["'\`]?)${upstreamName.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w-])`, 'gi');
  return { ...error, message: error.message.replace(pattern, `$1${ourName}`) };
}

/**
 * Where an MRTR retry of a forwarded call picks up: an upstream input round, or an upstream task waiting for input.
 * Type aliases, not interfaces: they are JSON objects (kept in the requestState), which only an alias is assignable to.
 */
type ResumeRound = {
  kind: 'round';
  keys: string[];
  requestState?: string;
};
type ResumeTask = {
  kind: 'task';
  /** Wrapped for the caller's principal (I-7), like every id of an upstream task we hand out. */
  taskId: string;
  keys: string[];
};

function resumeOf(request: ToolCallRequest): ResumeRound | ResumeTask | undefined {
  const resume = request.resume as { kind?: unknown; keys?: unknown; taskId?: unknown } | undefined;
  if (!resume || !Array.isArray(resume.keys)) return undefined;
  if (resume.kind === 'task' && typeof resume.taskId === 'string') return resume as ResumeTask;
  if (resume.kind === 'round') return resume as ResumeRound;
  return undefined;
}

/** The caller's answers to `keys` (the requests the upstream made), nothing else. */
function answersFor(keys: string[], answers: Record<string, unknown> | undefined): JsonObject {
  const picked: JsonObject = {};
  for (const key of keys) if (answers && Object.hasOwn(answers, key)) picked[key] = answers[key];
  return picked;
}

/** A task's or an MRTR result's non-empty `inputRequests`, or `undefined`. */
function inputRequestsOf(value: JsonObject): Record<string, InputRequest> | undefined {
  const requests = value.inputRequests;
  if (requests === null || typeof requests !== 'object' || Array.isArray(requests)) return undefined;
  // Cast: an upstream's input requests are relayed as it sent them; the client that answers them checks each (T-19).
  return Object.keys(requests).length > 0 ? (requests as unknown as Record<string, InputRequest>) : undefined;
}
