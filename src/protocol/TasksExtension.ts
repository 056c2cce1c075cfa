/**
 * The Tasks extension on one SDK server instance, modelled on the SDK's own
 * `SkillsExtension.attach`: declares the capability and answers
 * `tasks/get`, `tasks/update`, `tasks/cancel`. `tasks/list` and
 * `tasks/result` are not registered, so the SDK answers `-32601` (T-35).
 */
import { publish } from '../core/diagnostics.js';
import { CreateMessageResultV2Schema, ElicitResultV2Schema, ListRootsResultV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { ProtocolError, type Server, type ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { InputRequest, JsonObject } from '../../machines/task/index.js';
import { ErrorCode, missingTasksCapability } from '../core/errors.js';
import { tasksCapability } from '../core/tasksExtension.js';
import type { TaskSupervisor } from '../runtime/TaskSupervisor.js';
import type { PollRateLimiter } from '../runtime/PollRateLimiter.js';
import { clientCapabilitiesOf, declaresTasks } from './envelope.js';
import { toDetailedTask } from './wire.js';
import { mappingErrors } from './errors.js';
import type { Logger } from '../runtime/Logger.js';

/** Explicit schemas are required: `tasks/get|cancel` are 2025 spec names the 2026 era gate would refuse otherwise. */
const TaskIdParams = z.object({ taskId: z.string() }).loose();

const RESPONSE_SCHEMA: Record<InputRequest['method'], z.ZodType> = {
  'elicitation/create': ElicitResultV2Schema,
  'sampling/createMessage': CreateMessageResultV2Schema,
  'roots/list': ListRootsResultV2Schema,
};

/**
 * Tasks that live on an upstream server under wrapped ids (the aggregator's
 * `TaskForwarder` implements it), so this layer does not depend on upstreams.
 * `inbound` is the request's own `clientCapabilities` (T-33).
 */
export interface ForwardedTasks {
  owns(taskId: unknown): boolean;
  get(taskId: string, principal: string, inbound: JsonObject | undefined): Promise<JsonObject>;
  /** `dropped`: keys whose entries the SDK removed from `inputResponses` as malformed (P2). */
  update(
    taskId: string,
    principal: string,
    responses: Record<string, unknown>,
    inbound: JsonObject | undefined,
    dropped?: readonly string[],
  ): Promise<void>;
  cancel(taskId: string, principal: string, inbound: JsonObject | undefined): Promise<void>;
}

export interface TasksExtensionOptions {
  supervisor: TaskSupervisor;
  /** The principal of the request this server instance serves (I-7). */
  principal: string;
  /** Paces clients polling much faster than asked (T-27); absent = off. */
  pollRateLimiter?: PollRateLimiter;
  /** Routes wrapped upstream task ids (src/upstreams); absent = every id is local. */
  forwarder?: ForwardedTasks;
  /** Where server faults go (the client gets a stable message and a reference id, issue 12.10). */
  logger?: Logger;
}

export const TasksExtension = {
  /** Declares `extensions["io.modelcontextprotocol/tasks"]: {}` (T-11) and registers the handlers. Call before connect. */
  attach(server: Server, { supervisor, principal, pollRateLimiter, forwarder, logger }: TasksExtensionOptions): void {
    server.registerCapabilities(tasksCapability());

    // Checked on each request's own envelope (T-33).
    const requireTasks = (ctx: ServerContext, method: string) => {
      if (!declaresTasks(ctx)) throw missingTasksCapability(method);
    };

    server.setRequestHandler(
      'tasks/get',
      { params: TaskIdParams },
      mappingErrors(async ({ taskId }, ctx) => {
        requireTasks(ctx, 'tasks/get');
        publish('taskvisor:tasks.poll', () => ({ local: !forwarder?.owns(taskId) }));
        // A wrapped id goes upstream (MAC-checked for this principal, I-7); anything else stays local.
        if (forwarder?.owns(taskId)) return (await forwarder.get(taskId, principal, clientCapabilitiesOf(ctx))) as never;
        let record = await supervisor.get(taskId, principal);
        if (pollRateLimiter && (await pollRateLimiter.admit(principal, taskId, record.pollIntervalMs)) > 0) {
          record = await supervisor.get(taskId, principal); // answered late: answer with the state as it is now
        }
        return { resultType: 'complete', ...toDetailedTask(record) }; // T-06, T-12
      }, logger),
    );

    server.setRequestHandler(
      'tasks/update',
      { params: TaskIdParams },
      mappingErrors(async ({ taskId }, ctx) => {
        requireTasks(ctx, 'tasks/update');
        // The SDK lifts inputResponses out of every request's params (P2).
        const responses = ctx.mcpReq.inputResponses;
        if (responses === undefined || responses === null || typeof responses !== 'object') {
          throw new ProtocolError(
            ErrorCode.InvalidParams,
            'Invalid params for tasks/update: inputResponses is required (an object keyed by input request key)',
          );
        }
        if (forwarder?.owns(taskId)) {
          // The upstream validates its own input requests' answers.
          await forwarder.update(taskId, principal, responses, clientCapabilitiesOf(ctx), ctx.mcpReq.droppedInputResponseKeys ?? []);
          return { resultType: 'complete' };
        }
        const record = await supervisor.get(taskId, principal);
        // Validate answers to outstanding keys against their request kind; other keys are ignored (T-22).
        for (const [key, request] of Object.entries(record.inputRequests ?? {})) {
          if (!Object.hasOwn(responses, key)) continue;
          const parsed = RESPONSE_SCHEMA[request.method]?.safeParse(responses[key]);
          if (parsed && !parsed.success) {
            const issue = parsed.error.issues[0];
            throw new ProtocolError(
              ErrorCode.InvalidParams,
              `Invalid params for tasks/update: inputResponses.${key}${issue?.path.length ? '.' + issue.path.join('.') : ''}: ${issue?.message ?? 'invalid'} (expected a ${request.method} result)`,
            );
          }
        }
        const dropped = ctx.mcpReq.droppedInputResponseKeys ?? [];
        if (dropped.some((key) => Object.hasOwn(record.inputRequests ?? {}, key))) {
          throw new ProtocolError(
            ErrorCode.InvalidParams,
            `Invalid params for tasks/update: inputResponses entries must be bare results, not {method, result} wrappers (keys: ${dropped.join(', ')})`,
          );
        }
        await supervisor.update(taskId, principal, responses);
        return { resultType: 'complete' }; // T-20
      }, logger),
    );

    server.setRequestHandler(
      'tasks/cancel',
      { params: TaskIdParams },
      mappingErrors(async ({ taskId }, ctx) => {
        requireTasks(ctx, 'tasks/cancel');
        if (forwarder?.owns(taskId)) {
          await forwarder.cancel(taskId, principal, clientCapabilitiesOf(ctx));
          return { resultType: 'complete' };
        }
        await supervisor.cancel(taskId, principal);
        return { resultType: 'complete' }; // T-23: an acknowledgement only
      }, logger),
    );
  },
};
