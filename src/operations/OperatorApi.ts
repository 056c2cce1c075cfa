/**
 * The read-only operator API behind the dashboard, under
 * `/ops/api/`. Every request passes the {@link OperatorGate} first: an
 * ordinary principal's credentials never reach it, and it is the only way
 * the page reads tasks (never through a principal's task ids on MCP).
 *
 * - `GET /ops/api/overview`: phase, readiness, live and finished counts,
 *   upstream health, the metric totals;
 * - `GET /ops/api/tasks?status=&tool=&owner=&limit=&offset=`: recent tasks,
 *   newest first, as list entries (id, tool, owner, status, timestamps, a
 *   short statusMessage); a page ends at `limit` tasks or {@link MAX_PAGE_BYTES},
 *   whichever comes first, and names the `offset` of the next one;
 * - `GET /ops/api/tasks/<id>`: one task in full (its summary, error message,
 *   outstanding input keys), its timeline, its workflow graph;
 * - `GET /ops/api/events`: server-sent events: `task` for every durable
 *   change, `overview` every few seconds; ended (`end` event) when the
 *   operator's token is revoked or expires.
 *
 * Answers carry summaries only: no arguments, no result content, no snapshot.
 * A request that fails answers 500 with a reference id; the detail is logged
 * under it.
 */
import type { TaskStatus } from '../../machines/task/index.js';
import { TASK_STATUSES as STATUSES } from '../core/statuses.js';
import type { StoredTaskSummary } from '../core/diagnostics.js';
import { summarize } from '../store/ObservedTaskStore.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { MAX_ERROR_MESSAGE_CHARS, MAX_STATUS_MESSAGE_CHARS, truncateText } from '../tasks/storedText.js';
import type { Principal } from '../core/principal.js';
import { scrubErrorText } from '../transports/transportErrors.js';
import { referenceId } from '../transports/listenerGuard.js';
import type { HealthMonitor } from './HealthMonitor.js';
import { BASE_HEADERS, json, methodNotAllowed, notFound } from './httpResponses.js';
import type { OperatorGate } from './OperatorGate.js';
import type { OperationsRuntime } from './OperationsRuntime.js';
import type { TaskActivity, TimelineEntry } from './TaskActivity.js';
import type { TaskvisorMetrics } from './TaskvisorMetrics.js';
import { isWorkflowCheckpoint, workflowGraph } from './workflowGraph.js';

export const OPERATOR_API_PREFIX = '/ops/api/';
const MAX_LIMIT = 500;
/** How many stored tasks are read to filter by tool (the store indexes owner and status, not tool); also the deepest page. */
const TOOL_SCAN = 2000;
/** Most bytes of list entries one page of `/ops/api/tasks` carries: every principal's strings meet in it. */
export const MAX_PAGE_BYTES = 1024 * 1024;
/** Longest statusMessage a list entry shows (the full one is in the task's own answer). */
export const LIST_MESSAGE_CHARS = 200;

export interface OperatorApiOptions {
  runtime: OperationsRuntime;
  health: HealthMonitor;
  activity: TaskActivity;
  metrics: TaskvisorMetrics;
  /** Ties an operator's event stream to its token (ended on revocation). Absent: streams end only with the runtime. */
  gate?: Pick<OperatorGate, 'trackSession'>;
  /** Interval of `overview` events on the event stream. Default 2000 ms. */
  overviewIntervalMs?: number;
  /** Most bytes of list entries one page carries. Default {@link MAX_PAGE_BYTES}. */
  maxPageBytes?: number;
}

/** A task as the API shows it on its own (`/ops/api/tasks/<id>`). */
export type TaskSummaryView = Omit<StoredTaskSummary, 'checkpoint'> & { workflow?: string; expiresAt: number | null };

/** A task as `/ops/api/tasks` lists it: bounded whatever the task's strings. */
export interface TaskListEntry {
  taskId: string;
  tool: string;
  owner: string;
  status: TaskStatus;
  /** Cut to {@link LIST_MESSAGE_CHARS}. */
  statusMessage?: string;
  createdAt: number;
  lastUpdatedAt: number;
  expiresAt: number | null;
  workflow?: string;
}

const listEntry = (record: TaskRecord): TaskListEntry => ({
  taskId: record.taskId,
  tool: record.tool,
  owner: record.owner,
  status: record.status,
  ...(record.statusMessage !== undefined ? { statusMessage: truncateText(record.statusMessage, LIST_MESSAGE_CHARS) } : {}),
  createdAt: record.createdAt,
  lastUpdatedAt: record.lastUpdatedAt,
  expiresAt: record.ttlMs === null ? null : record.createdAt + record.ttlMs,
  ...(isWorkflowCheckpoint(record.checkpoint) ? { workflow: record.checkpoint.workflow } : {}),
});

const view = (record: TaskRecord): TaskSummaryView => {
  const { checkpoint: _checkpoint, ...summary } = boundedSummary(record);
  return {
    ...summary,
    ...(isWorkflowCheckpoint(record.checkpoint) ? { workflow: record.checkpoint.workflow } : {}),
    expiresAt: record.ttlMs === null ? null : record.createdAt + record.ttlMs,
  };
};

export class OperatorApi {
  readonly #options: OperatorApiOptions;
  readonly #streams = new Set<() => void>();

  constructor(options: OperatorApiOptions) {
    this.#options = options;
  }

  /** Answers the request of `operator` (admitted by the gate) under {@link OPERATOR_API_PREFIX}. */
  async fetch(request: Request, operator?: Principal): Promise<Response> {
    try {
      return await this.#route(request, operator);
    } catch (error) {
      // Never the adapter's bare 500: the operator gets an id to quote, the log has the detail (docs/security.md).
      const ref = referenceId();
      this.#options.runtime.logger.error(`operator API: request failed (ref ${ref})`, scrubErrorText(error));
      return json(500, { error: `internal error (ref ${ref})`, ref });
    }
  }

  async #route(request: Request, operator: Principal | undefined): Promise<Response> {
    if (request.method !== 'GET') return methodNotAllowed('GET');
    const url = new URL(request.url);
    const path = url.pathname.slice(OPERATOR_API_PREFIX.length);
    if (path === 'overview') return json(200, await this.overview());
    if (path === 'tasks') return await this.#tasks(url.searchParams);
    if (path.startsWith('tasks/')) return await this.#task(decodeURIComponent(path.slice('tasks/'.length)));
    if (path === 'events') return this.#events(request, operator);
    return notFound();
  }

  /** Ends every open event stream (the runtime is closing). */
  close(): void {
    for (const end of [...this.#streams]) end();
  }

  async overview(): Promise<Record<string, unknown>> {
    const { runtime, health, activity, metrics } = this.#options;
    const readiness = health.readiness();
    return {
      phase: runtime.phase,
      ready: readiness.status === 'ready',
      reasons: readiness.reasons,
      instanceId: runtime.cluster?.instanceId ?? null,
      live: activity.liveByStatus(),
      finished: activity.finishedByStatus(),
      upstreams: (runtime.upstreams?.status() ?? []).map((status) => ({
        name: status.name,
        state: status.state,
        toolCount: status.toolCount,
        lastError: status.lastError,
        retryAt: status.retryAt,
      })),
      metrics: await metricTotals(metrics),
    };
  }

  async #tasks(query: URLSearchParams): Promise<Response> {
    const limitText = query.get('limit');
    const limit = limitText === null ? 100 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
      return json(400, { error: `limit must be an integer from 1 to ${MAX_LIMIT}` });
    const offsetText = query.get('offset');
    const offset = offsetText === null ? 0 : Number(offsetText);
    if (!Number.isInteger(offset) || offset < 0 || offset + limit > TOOL_SCAN)
      return json(400, { error: `offset must be an integer from 0, and offset + limit at most ${TOOL_SCAN}` });
    const statuses = query
      .getAll('status')
      .flatMap((value) => value.split(','))
      .filter(Boolean);
    const unknown = statuses.filter((status) => !STATUSES.includes(status as TaskStatus));
    if (unknown.length > 0) return json(400, { error: `unknown status ${JSON.stringify(unknown[0])}; use ${STATUSES.join(', ')}` });
    const tool = query.get('tool') || undefined;
    const owner = query.get('owner') || undefined;
    const records = await this.#options.runtime.store.list({
      ...(owner ? { owner } : {}),
      ...(statuses.length ? { status: statuses as TaskStatus[] } : {}),
      limit: tool ? TOOL_SCAN : offset + limit,
    });
    const matching = (tool ? records.filter((record) => record.tool === tool) : records).slice(offset, offset + limit);
    // A page ends at `limit` entries or MAX_PAGE_BYTES, whichever comes first (at least one entry: each is bounded).
    const tasks: TaskListEntry[] = [];
    const maxBytes = this.#options.maxPageBytes ?? MAX_PAGE_BYTES;
    let bytes = 0;
    for (const record of matching) {
      const entry = listEntry(record);
      bytes += Buffer.byteLength(JSON.stringify(entry)) + 1;
      if (tasks.length > 0 && bytes > maxBytes) break;
      tasks.push(entry);
    }
    const cut = tasks.length < matching.length;
    const next = cut || (matching.length === limit && offset + limit < TOOL_SCAN) ? { nextOffset: offset + tasks.length } : {};
    return json(200, { tasks, ...next });
  }

  async #task(taskId: string): Promise<Response> {
    if (taskId.length === 0 || taskId.length > 200) return notFound();
    const record = await this.#options.runtime.store.get(taskId);
    if (!record) return json(404, { error: 'no such task' });
    const kept = this.#options.activity.timeline(taskId);
    // A task from before this process started has no kept timeline: what its record says.
    const timeline: TimelineEntry[] = kept.length > 0 ? kept : fromRecord(record);
    return json(200, {
      task: view(record),
      timeline,
      ...(isWorkflowCheckpoint(record.checkpoint) ? { workflow: workflowGraph(record.checkpoint) } : {}),
    });
  }

  #events(request: Request, operator: Principal | undefined): Response {
    const { activity } = this.#options;
    const encoder = new TextEncoder();
    let end = () => {};
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        let ended = false;
        const send = (event: string, data: unknown) => {
          if (ended) return;
          try {
            controller.enqueue(encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`));
          } catch {
            end();
          }
        };
        const overview = () =>
          void this.overview().then(
            (body) => send('overview', body),
            () => undefined,
          );
        const unsubscribe = activity.onEvent((event) => send('task', event));
        const timer = setInterval(overview, this.#options.overviewIntervalMs ?? 2000);
        timer.unref();
        let untrack = () => {};
        end = () => {
          if (ended) return;
          ended = true;
          untrack();
          unsubscribe();
          clearInterval(timer);
          this.#streams.delete(end);
          request.signal.removeEventListener('abort', end);
          try {
            controller.close();
          } catch {
            // already closed by the consumer
          }
        };
        this.#streams.add(end);
        request.signal.addEventListener('abort', end, { once: true });
        // Admitted once, at the start: a token revoked (or expired) since ends the stream, as it ends listens and WebSockets.
        if (operator && this.#options.gate) {
          untrack = this.#options.gate.trackSession(operator, (reason) => {
            send('end', { reason });
            end();
          });
        }
        controller.enqueue(encoder.encode(': taskvisor operator events\n\n'));
        overview();
      },
      cancel: () => end(),
    });
    return new Response(stream, {
      status: 200,
      headers: { 'content-type': 'text/event-stream', connection: 'keep-alive', 'x-accel-buffering': 'no', ...BASE_HEADERS },
    });
  }
}

/**
 * The record's summary with its strings within the bounds a task keeps now: a
 * record stored before they applied may still hold megabytes.
 */
function boundedSummary(record: TaskRecord): StoredTaskSummary {
  const summary = summarize(record);
  if (summary.statusMessage !== undefined) summary.statusMessage = truncateText(summary.statusMessage, MAX_STATUS_MESSAGE_CHARS);
  if (summary.errorMessage !== undefined) summary.errorMessage = truncateText(summary.errorMessage, MAX_ERROR_MESSAGE_CHARS);
  return summary;
}

/** What a stored record alone tells of its history. */
function fromRecord(record: TaskRecord): TimelineEntry[] {
  const summary = boundedSummary(record);
  const entries: TimelineEntry[] = [{ at: record.createdAt, kind: 'created', status: 'working' }];
  if (record.status !== 'working' || summary.statusMessage !== undefined) {
    entries.push({
      at: record.lastUpdatedAt,
      kind: 'status',
      status: record.status,
      ...(summary.statusMessage !== undefined ? { statusMessage: summary.statusMessage } : {}),
    });
  }
  if (summary.inputRequestKeys?.length)
    entries.push({ at: record.lastUpdatedAt, kind: 'input', status: record.status, inputRequestKeys: summary.inputRequestKeys });
  if (summary.errorMessage !== undefined)
    entries.push({ at: record.lastUpdatedAt, kind: 'error', status: record.status, errorMessage: summary.errorMessage });
  else if (record.status === 'completed') entries.push({ at: record.lastUpdatedAt, kind: 'result', status: record.status });
  return entries;
}

/** Every taskvisor metric summed over its labels (histograms: their count and sum). */
async function metricTotals(metrics: TaskvisorMetrics): Promise<Record<string, number>> {
  const totals: Record<string, number> = {};
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    if (!metric.name.startsWith('taskvisor_')) continue;
    for (const value of metric.values as { value: number; metricName?: string }[]) {
      const name = value.metricName ?? metric.name;
      // Widening (an upcast, never wrong): prom-client's d.ts declares `type` a numeric enum (MetricType) but
      // getMetricsAsJSON gives the string 'histogram'.
      if ((metric.type as typeof metric.type | string) === 'histogram' && !name.endsWith('_count') && !name.endsWith('_sum')) continue;
      totals[name] = (totals[name] ?? 0) + value.value;
    }
  }
  return totals;
}
