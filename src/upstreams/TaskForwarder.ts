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
 * Routing is stateless: everything needed is in the wrapped id. Its parts:
 * talking to an upstream (UpstreamChannel), collapsing (collapseTask),
 * following for listens (TaskFollower), relaying progress (callRelay).
 */
import { ProtocolError } from '@modelcontextprotocol/server';
import type { JsonObject } from '../core/json.js';
import type { Logger } from '../runtime/Logger.js';
import { ErrorCode, TaskNotFoundError, taskNotFound } from '../core/errors.js';
import { isTerminalStatus } from '../core/statuses.js';
import { traceMeta } from '../core/traceContext.js';
import type { ToolCallOutcome, ToolCallRequest } from '../runtime/ToolCaller.js';
import { relayCall, type CallRelay } from './callRelay.js';
import { collapseTask, upstreamTaskOps } from './collapseTask.js';
import { answersFor, resumeOf, type ResumeRound, type ResumeTask } from './forwardedResume.js';
import {
  asNotification,
  inputRequestsOf,
  namingOurTool,
  protocolError,
  stripMeta,
  TASKS_ONLY,
  withoutResultType,
  withTasks,
} from './forwardedShapes.js';
import { LegacyTaskBridge } from './LegacyTaskBridge.js';
import type { LegacyTaskSupport } from './legacyTaskShapes.js';
import { UpstreamChannel, type UpstreamDirectory } from './UpstreamChannel.js';
import type { UpstreamConnection } from './UpstreamConnection.js';
import { followTask } from './TaskFollower.js';
import { TaskProgressBoard } from './TaskProgressBoard.js';
import { WrappedTaskIds } from './WrappedTaskIds.js';

export class TaskForwarder {
  /** 2025-11-25 task-augmented tools (execution.taskSupport) spoken to v1-era upstreams. */
  private readonly legacy: LegacyTaskBridge;
  /** Upstream progress of passed-through tasks, shown as their statusMessage. */
  private readonly progress = new TaskProgressBoard();
  private readonly channel: UpstreamChannel;

  constructor(
    private readonly directory: UpstreamDirectory,
    private readonly ids: WrappedTaskIds,
    logger?: Logger,
  ) {
    const channel = new UpstreamChannel(directory, logger);
    this.channel = channel;
    this.legacy = new LegacyTaskBridge(
      (connection, method, params, options) => channel.send(connection, method, params, {}, options),
      (outcome) => channel.answer(outcome),
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
    const connection = await this.channel.open(upstream, request.principal);
    // The MRTR retry of a collapsed call whose upstream task waits for input answers that task, in either era.
    const resume = resumeOf(request);
    if (resume?.kind === 'task') return this.resumeTask(upstream, connection, resume, request);
    const relay = relayCall(this.progress, upstream, connection, request);
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
    // The caller's trace context goes on: the upstream's work joins the caller's trace.
    if (request.trace) params._meta = traceMeta(request.trace);
    if (resume?.kind === 'round') {
      // The MRTR retry of an upstream's own input round: its answers and its requestState go back as they came (§4.4).
      params.inputResponses = answersFor(resume.keys, request.answers);
      if (resume.requestState !== undefined) params.requestState = resume.requestState;
    }
    const outcome = await this.channel.send(connection, 'tools/call', params, capabilities, {
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
      return collapseTask(this.ids, upstream, upstreamTaskOps(connection, this.channel, this.legacy), upstreamId, result, request);
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
    const ops = upstreamTaskOps(connection, this.channel, this.legacy);
    try {
      const responses = answersFor(resume.keys, request.answers);
      if (Object.keys(responses).length > 0) {
        if (connection.era === 'legacy') this.legacy.update(connection, ref.taskId, responses);
        else
          this.channel.answer(
            await this.channel.send(connection, 'tasks/update', { taskId: ref.taskId, inputResponses: responses }, TASKS_ONLY),
          );
      }
      return await collapseTask(this.ids, upstream, ops, ref.taskId, await ops.get(ref.taskId), request);
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
      // The caller's trace context goes on to a 2025-11-25 upstream too.
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
    return collapseTask(this.ids, upstream, upstreamTaskOps(connection, this.channel, this.legacy), upstreamId, outcome.task, request);
  }

  /** `tasks/get` of a wrapped id: the upstream's answer with the id wrapped again. */
  async get(taskId: string, principal: string, inbound: JsonObject | undefined): Promise<JsonObject> {
    const { upstream, id, connection } = await this.route(taskId, principal);
    const task =
      connection.era === 'legacy'
        ? await this.legacy.get(connection, id)
        : this.channel.answer(await this.channel.send(connection, 'tasks/get', { taskId: id }, withTasks(inbound ?? {}, true)));
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

  /** Follows a wrapped task for a listen stream and reports each visible change (see {@link followTask}). */
  follow(taskId: string, principal: string, current: JsonObject, onChange: (task: JsonObject) => void): () => void {
    return followTask(this, taskId, principal, this.ids.unwrap(taskId, principal), current, onChange);
  }

  /** The open connection `principal`'s requests to `upstream` go over, or `undefined` (down, or not opened for the principal). */
  connection(upstream: string, principal: string): UpstreamConnection | undefined {
    return this.directory.openConnectionOf(upstream, principal);
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
    const { connection, id } = await this.route(taskId, principal);
    if (connection.era === 'legacy') return this.legacy.update(connection, id, responses, dropped);
    this.channel.answer(
      await this.channel.send(connection, 'tasks/update', { taskId: id, inputResponses: responses }, withTasks(inbound ?? {}, true)),
    );
  }

  async cancel(taskId: string, principal: string, inbound: JsonObject | undefined): Promise<void> {
    const { connection, id } = await this.route(taskId, principal);
    if (connection.era === 'legacy') return this.legacy.cancel(connection, id);
    this.channel.answer(await this.channel.send(connection, 'tasks/cancel', { taskId: id }, withTasks(inbound ?? {}, true)));
  }

  /** Unwraps (MAC-checked for `principal`, I-7) and finds the connection. */
  private async route(taskId: string, principal: string): Promise<{ upstream: string; id: string; connection: UpstreamConnection }> {
    const ref = this.ids.unwrap(taskId, principal);
    // Forged, altered, foreign, or of an upstream no longer configured: exactly the unknown-id error (T-14, T-10).
    if (!ref || !this.directory.has(ref.upstream)) throw taskNotFound();
    // The principal bound in the id (I-7) is whom the upstream sees, after a restart too: the id is all it takes.
    return { upstream: ref.upstream, id: ref.taskId, connection: await this.channel.open(ref.upstream, principal) };
  }
}
