/**
 * The decisions behind `tasks/get`, `tasks/update` and `tasks/cancel`, once,
 * for both ways a request reaches them: the SDK handlers of
 * {@link TasksExtension} and the Streamable HTTP fast lane
 * (transports/tasksFastLane.ts). Both paths decode the request their own way
 * and hand the same values here, so they can differ only in parsing and
 * writing, never in what they decide.
 *
 * Errors are thrown as the runtime throws them (`TaskvisorError`s,
 * `ProtocolError`s); each path maps them with `toProtocolError`.
 */
import { CreateMessageResultV2Schema, ElicitResultV2Schema, ListRootsResultV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { ProtocolError } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import type { InputRequest } from '../../machines/task/index.js';
import type { JsonObject } from '../core/json.js';
import { clipClientText, clipQuotedSegments } from '../core/clientText.js';
import { publish } from '../core/diagnostics.js';
import { ErrorCode, missingTasksCapability } from '../core/errors.js';
import { declaresTasksExtension } from '../core/tasksExtension.js';
import type { PollRateLimiter } from '../runtime/PollRateLimiter.js';
import type { TaskSupervisor } from '../runtime/TaskSupervisor.js';
import { refusedAnswer } from '../tools/elicitationAnswer.js';
import { toDetailedTask } from './wire.js';

const RESPONSE_SCHEMA: Record<InputRequest['method'], z.ZodType> = {
  'elicitation/create': ElicitResultV2Schema,
  'sampling/createMessage': CreateMessageResultV2Schema,
  'roots/list': ListRootsResultV2Schema,
};

/** The three methods answered here. */
export type TaskMethod = 'tasks/get' | 'tasks/update' | 'tasks/cancel';

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

export interface TaskRequestsOptions {
  supervisor: TaskSupervisor;
  /** Paces clients polling much faster than asked (T-27); absent = off. */
  pollRateLimiter?: PollRateLimiter | undefined;
  /**
   * Routes wrapped upstream task ids (src/upstreams); absent = every id is
   * local. Read on each request: the aggregator's forwarder exists only once
   * its upstreams have started, after this object is built.
   */
  forwarder?: (() => ForwardedTasks | undefined) | undefined;
}

/** One decoded `tasks/update`: the bare answers and the keys of entries that were not bare (P2, as the SDK partitions them). */
export interface InputResponses {
  /** `undefined` when the request carried no `inputResponses` at all. */
  accepted: Record<string, unknown> | undefined;
  dropped: readonly string[];
}

const complete = (): JsonObject => ({ resultType: 'complete' });

/** The shared answers of `tasks/*`; one per runtime. */
export class TaskRequests {
  constructor(private readonly options: TaskRequestsOptions) {}

  /** Whether a wrapped upstream id (answered by the forwarder, not by this process's tasks). */
  forwards(taskId: string): boolean {
    return this.options.forwarder?.()?.owns(taskId) === true;
  }

  /** T-33: `tasks/*` need the extension declared in this request's own `clientCapabilities` (-32021 otherwise). */
  requireTasks(method: TaskMethod, inbound: unknown): void {
    if (!declaresTasksExtension(inbound)) throw missingTasksCapability(method);
  }

  /** `tasks/get`: the `DetailedTask` of the current status (T-12), stamped `resultType: "complete"` (T-06). */
  async get(taskId: string, principal: string, inbound: JsonObject | undefined): Promise<JsonObject> {
    const { supervisor, pollRateLimiter } = this.options;
    const forwarder = this.options.forwarder?.();
    publish('taskvisor:tasks.poll', () => ({ local: !forwarder?.owns(taskId) }));
    // A wrapped id goes upstream (MAC-checked for this principal, I-7); anything else stays local.
    if (forwarder?.owns(taskId)) return forwarder.get(taskId, principal, inbound);
    let record = await supervisor.get(taskId, principal);
    if (pollRateLimiter && (await pollRateLimiter.admit(principal, taskId, record.pollIntervalMs)) > 0) {
      record = await supervisor.get(taskId, principal); // answered late: answer with the state as it is now
    }
    return toDetailedTask(record, { resultType: 'complete' }); // T-06, T-12
  }

  /** `tasks/update`: answers validated against their request kind, delivered, acknowledged (T-20, T-22). */
  async update(taskId: string, principal: string, responses: InputResponses, inbound: JsonObject | undefined): Promise<JsonObject> {
    const { supervisor } = this.options;
    const forwarder = this.options.forwarder?.();
    const answers = responses.accepted;
    if (answers === undefined) {
      throw new ProtocolError(
        ErrorCode.InvalidParams,
        'Invalid params for tasks/update: inputResponses is required (an object keyed by input request key)',
      );
    }
    if (forwarder?.owns(taskId)) {
      // The upstream validates its own input requests' answers.
      await forwarder.update(taskId, principal, answers, inbound, responses.dropped);
      return complete();
    }
    const record = await supervisor.get(taskId, principal);
    // Validate answers to outstanding keys against their request kind; other keys are ignored (T-22).
    for (const [key, request] of Object.entries(record.inputRequests ?? {})) {
      if (!Object.hasOwn(answers, key)) continue;
      const parsed = RESPONSE_SCHEMA[request.method]?.safeParse(answers[key]);
      // T-19: an accepted form's content must fit the requestedSchema it answers; refused before delivery, the
      // request stays open and the tool never sees it.
      const refused = parsed?.success === false ? undefined : refusedAnswer(key, request, answers[key], 'tasks/update');
      if (refused) throw new ProtocolError(refused.code, refused.message);
      if (parsed && !parsed.success) {
        const issue = parsed.error.issues[0];
        throw new ProtocolError(
          ErrorCode.InvalidParams,
          `Invalid params for tasks/update: inputResponses.${key}${issue?.path.length ? '.' + clipClientText(issue.path.join('.')) : ''}: ${clipQuotedSegments(issue?.message ?? 'invalid')} (expected a ${request.method} result)`,
        );
      }
    }
    const dropped = responses.dropped;
    if (dropped.some((key) => Object.hasOwn(record.inputRequests ?? {}, key))) {
      throw new ProtocolError(
        ErrorCode.InvalidParams,
        `Invalid params for tasks/update: inputResponses entries must be bare results, not {method, result} wrappers (keys: ${clipClientText(dropped.join(', '))})`,
      );
    }
    await supervisor.update(taskId, principal, answers);
    return complete(); // T-20
  }

  /** `tasks/cancel`: an acknowledgement only (T-23, T-24). */
  async cancel(taskId: string, principal: string, inbound: JsonObject | undefined): Promise<JsonObject> {
    const { supervisor } = this.options;
    const forwarder = this.options.forwarder?.();
    if (forwarder?.owns(taskId)) await forwarder.cancel(taskId, principal, inbound);
    else await supervisor.cancel(taskId, principal);
    return complete();
  }
}
