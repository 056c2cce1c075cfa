/**
 * What taskvisor reports about its own work, on `node:diagnostics_channel`:
 * metrics, the dashboard's activity feed and OpenTelemetry spans
 * subscribe here, so the code doing the work knows nothing of them, and a
 * channel nobody subscribes to costs one boolean check (the message is only
 * built when someone listens).
 *
 * Messages carry task ids and tool names for in-process subscribers; the
 * metrics built from them never use task ids or arguments as labels.
 * Anyone may subscribe: `diagnostics_channel.subscribe('taskvisor:store.operation', fn)`.
 */
import { channel, type Channel } from 'node:diagnostics_channel';
import type { TaskStatus } from '../../machines/task/index.js';
import type { TraceContext } from './traceContext.js';

/** The channel names (stable: part of the public interface, docs/operations.md). */
export const DIAGNOSTICS_CHANNELS = {
  storeOperation: 'taskvisor:store.operation',
  tasksPoll: 'taskvisor:tasks.poll',
  listenFrame: 'taskvisor:listen.frame',
  backpressureClose: 'taskvisor:backpressure.close',
  upstreamCall: 'taskvisor:upstream.call',
  workflowStep: 'taskvisor:workflow.step',
  clusterLease: 'taskvisor:cluster.lease',
  rateLimitRefused: 'taskvisor:ratelimit.refused',
  toolForbidden: 'taskvisor:tool.forbidden',
} as const;

/** What a store write left behind for one task: enough for metrics and a timeline, no arguments, no result body. */
export interface StoredTaskSummary {
  taskId: string;
  tool: string;
  owner: string;
  status: TaskStatus;
  statusMessage?: string;
  /** Keys of the outstanding input requests (`input_required`). */
  inputRequestKeys?: string[];
  /** The error message of a failed task, or of an `isError` result. */
  errorMessage?: string;
  createdAt: number;
  lastUpdatedAt: number;
  /** The version written (a retried write takes a fresh one). */
  version: number;
  /** A workflow run's step records (the checkpoint), when the task is one. */
  checkpoint?: unknown;
  /** W3C trace context of the creating call (spans join it). */
  trace?: TraceContext;
}

/** `taskvisor:store.operation`: one create/put/delete, after it resolved or failed. */
export interface StoreOperationMessage {
  /** The store's class name (`LowdbTaskStore`, `PostgresTaskStore`...). */
  store: string;
  /** The observed store object itself (`runtime.store`): tells apart several runtimes in one process. */
  source: object;
  op: 'create' | 'put' | 'delete';
  durationMs: number;
  /** A short error kind (`ENOSPC`, `TaskFencedError`...) when the write failed. */
  error?: string;
  /** The task written (create, put), or only its id (delete). */
  summary?: StoredTaskSummary;
  taskId: string;
}

/** `taskvisor:tasks.poll`: a `tasks/get` answered from this instance. */
export interface TasksPollMessage {
  /** Whether the poll read a local task (false: forwarded to an upstream). */
  local: boolean;
}

/** `taskvisor:listen.frame`: one frame written on a listen stream. */
export interface ListenFrameMessage {
  method: string;
}

/** `taskvisor:backpressure.close`: a stream closed because its consumer stopped reading. */
export interface BackpressureCloseMessage {
  /** `listen` (a subscriptions/listen stream), `websocket`... */
  stream: string;
}

/** `taskvisor:upstream.call`: one request to an upstream server, after it settled. */
export interface UpstreamCallMessage {
  upstream: string;
  method: string;
  durationMs: number;
  /** `result`, `error` (a JSON-RPC error answer) or `unavailable` (no answer). */
  outcome: 'result' | 'error' | 'unavailable';
  /** The W3C traceparent sent with the request, when it carried one. */
  traceparent?: string;
}

/** `taskvisor:workflow.step`: one workflow step ended. */
export interface WorkflowStepMessage {
  workflow: string;
  step: string;
  /** `completed`, `failed`, `skipped`... as recorded in the run's checkpoint. */
  outcome: string;
  durationMs?: number;
}

/** `taskvisor:cluster.lease`: the cluster lease changed hands or was renewed, or tasks were adopted. */
/** A request refused by a rate limit (config `rateLimits`); never names the principal (unbounded). */
export interface RateLimitRefusedMessage {
  limit: 'requests' | 'taskCreations' | 'toolCalls';
}

/** A call tool policy refused (config `toolPolicy`). */
export interface ToolForbiddenMessage {
  tool: string;
}

export interface ClusterLeaseMessage {
  event: 'renewed' | 'renewal-failed' | 'lost' | 'joined' | 'adopted';
  instanceId: string;
  /** Tasks adopted (`adopted`). */
  count?: number;
}

interface Messages {
  'taskvisor:store.operation': StoreOperationMessage;
  'taskvisor:tasks.poll': TasksPollMessage;
  'taskvisor:listen.frame': ListenFrameMessage;
  'taskvisor:backpressure.close': BackpressureCloseMessage;
  'taskvisor:upstream.call': UpstreamCallMessage;
  'taskvisor:workflow.step': WorkflowStepMessage;
  'taskvisor:cluster.lease': ClusterLeaseMessage;
  'taskvisor:ratelimit.refused': RateLimitRefusedMessage;
  'taskvisor:tool.forbidden': ToolForbiddenMessage;
}

export type DiagnosticsChannelName = keyof Messages;
export type DiagnosticsMessage<N extends DiagnosticsChannelName> = Messages[N];

const channels = new Map<string, Channel>();
const channelOf = (name: string): Channel => {
  let found = channels.get(name);
  if (!found) channels.set(name, (found = channel(name)));
  return found;
};

/** Publishes on `name`; `build` runs only when someone subscribes (no cost otherwise). */
export function publish<N extends DiagnosticsChannelName>(name: N, build: () => Messages[N]): void {
  const target = channelOf(name);
  if (target.hasSubscribers) target.publish(build());
}

/** Subscribes to `name`; returns the unsubscription. */
export function subscribe<N extends DiagnosticsChannelName>(name: N, listener: (message: Messages[N]) => void): () => void {
  const target = channelOf(name);
  const onMessage = (message: unknown) => listener(message as Messages[N]);
  target.subscribe(onMessage);
  return () => void target.unsubscribe(onMessage);
}
