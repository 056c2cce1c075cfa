/**
 * The Tasks extension on one SDK server instance, modelled on the SDK's own
 * `SkillsExtension.attach`: declares the capability and answers
 * `tasks/get`, `tasks/update`, `tasks/cancel`. `tasks/list` and
 * `tasks/result` are not registered, so the SDK answers `-32601` (T-35).
 * What each answer is lives in {@link TaskRequests}, shared with the HTTP
 * fast lane; this file only decodes the SDK's request context.
 */
import { type Server, type ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { tasksCapability } from '../core/tasksExtension.js';
import { clientCapabilitiesOf } from './envelope.js';
import { mappingErrors } from './errors.js';
import type { Logger } from '../runtime/Logger.js';
import type { TaskRequests } from './TaskRequests.js';

export type { ForwardedTasks } from './TaskRequests.js';

/** Explicit schemas are required: `tasks/get|cancel` are 2025 spec names the 2026 era gate would refuse otherwise. */
const TaskIdParams = z.object({ taskId: z.string() }).loose();

export interface TasksExtensionOptions {
  /** The runtime's answers to `tasks/*` (shared with the HTTP fast lane). */
  requests: TaskRequests;
  /** The principal of the request this server instance serves (I-7). */
  principal: string;
  /** Where server faults go (the client gets a stable message and a reference id). */
  logger?: Logger;
}

export const TasksExtension = {
  /** Declares `extensions["io.modelcontextprotocol/tasks"]: {}` (T-11) and registers the handlers. Call before connect. */
  attach(server: Server, { requests, principal, logger }: TasksExtensionOptions): void {
    server.registerCapabilities(tasksCapability());

    // Checked on each request's own envelope (T-33).
    const inboundOf = (ctx: ServerContext, method: 'tasks/get' | 'tasks/update' | 'tasks/cancel') => {
      const inbound = clientCapabilitiesOf(ctx);
      requests.requireTasks(method, inbound);
      return inbound;
    };

    server.setRequestHandler(
      'tasks/get',
      { params: TaskIdParams },
      mappingErrors(async ({ taskId }, ctx) => await requests.get(taskId, principal, inboundOf(ctx, 'tasks/get')), logger),
    );

    server.setRequestHandler(
      'tasks/update',
      { params: TaskIdParams },
      mappingErrors(async ({ taskId }, ctx) => {
        const inbound = inboundOf(ctx, 'tasks/update');
        // The SDK lifts inputResponses out of every request's params and partitions them (P2).
        const accepted = ctx.mcpReq.inputResponses;
        const responses = {
          accepted: accepted !== null && typeof accepted === 'object' ? accepted : undefined,
          dropped: ctx.mcpReq.droppedInputResponseKeys ?? [],
        };
        return await requests.update(taskId, principal, responses, inbound);
      }, logger),
    );

    server.setRequestHandler(
      'tasks/cancel',
      { params: TaskIdParams },
      mappingErrors(async ({ taskId }, ctx) => await requests.cancel(taskId, principal, inboundOf(ctx, 'tasks/cancel')), logger),
    );
  },
};
