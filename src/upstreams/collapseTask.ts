/**
 * A forwarded call collapsed to synchronous, for a caller that cannot take a
 * task (no tasks capability on this request, or a 2025-11-25 client):
 * taskvisor follows the upstream task itself, in whichever era the upstream
 * speaks, and answers the call with its end.
 */
import { ProtocolError } from '@modelcontextprotocol/server';
import type { JsonObject } from '../core/json.js';
import { ErrorCode } from '../core/errors.js';
import { isTerminalStatus } from '../core/statuses.js';
import type { ToolCallOutcome, ToolCallRequest } from '../runtime/ToolCaller.js';
import type { ResumeTask } from './forwardedResume.js';
import { inputRequestsOf, stripMeta, TASKS_ONLY, withoutResultType } from './forwardedShapes.js';
import type { LegacyTaskBridge } from './LegacyTaskBridge.js';
import type { UpstreamChannel } from './UpstreamChannel.js';
import type { UpstreamConnection } from './UpstreamConnection.js';
import type { WrappedTaskIds } from './WrappedTaskIds.js';

/** What following one upstream task needs, whichever era the upstream speaks. */
export interface UpstreamTaskOps {
  /** The task as a 2026-07-28 `tasks/get` answers it (upstream id). */
  get(taskId: string): Promise<JsonObject>;
  cancel(taskId: string): Promise<void>;
}

/** `tasks/get` and `tasks/cancel` on `connection` in the era it speaks. */
export function upstreamTaskOps(connection: UpstreamConnection, channel: UpstreamChannel, legacy: LegacyTaskBridge): UpstreamTaskOps {
  if (connection.era === 'legacy') {
    return { get: (id) => legacy.get(connection, id), cancel: (id) => legacy.cancel(connection, id) };
  }
  return {
    get: async (id) => channel.answer(await channel.send(connection, 'tasks/get', { taskId: id }, TASKS_ONLY)),
    cancel: async (id) => {
      channel.answer(await channel.send(connection, 'tasks/cancel', { taskId: id }, TASKS_ONLY));
    },
  };
}

/**
 * Collapse to synchronous: follow the upstream task to its end at the
 * polling pace it asks for; cancel it upstream when the inbound request
 * goes away (T-24 on the upstream's side). Input the task asks for goes to
 * the caller as an MRTR round (T-08) whose retry answers the same upstream
 * task (`TaskForwarder.resumeTask`); the task waits upstream meanwhile, for at most
 * its own ttl.
 */
export async function collapseTask(
  ids: WrappedTaskIds,
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
        taskId: ids.wrap(upstream, upstreamId, request.principal),
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
