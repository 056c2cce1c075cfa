/**
 * Prometheus metrics of one runtime, with prom-client in a
 * registry of its own (never the library's global one: two runtimes, or an
 * embedder's own metrics, never collide).
 *
 * Built from the diagnostics channels (src/core/diagnostics.ts) and
 * {@link TaskActivity}; labels are bounded: tool, workflow and upstream
 * names are capped ({@link LabelCap}), statuses, ops and outcomes are fixed
 * sets, and no task id, principal or argument is ever a label.
 */
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';
import { subscribe } from '../core/diagnostics.js';
import { LabelCap } from './LabelCap.js';
import type { OperationsRuntime } from './OperationsRuntime.js';
import type { TaskActivity } from './TaskActivity.js';

/** Seconds: from a few ms (a store write) to hours (a long tool run). */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const RUN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400];

/**
 * prom-client, loaded when the first metrics are made (a server
 * without metrics does not pay for it at start). Synchronously: it is
 * CommonJS, and {@link createOperations} builds the metrics synchronously.
 */
let promClient: typeof PromClient | undefined;
function prom(): typeof PromClient {
  return (promClient ??= createRequire(import.meta.url)('prom-client') as typeof PromClient);
}

export interface MetricsOptions {
  /** Also export Node's process metrics (CPU, memory, event loop, GC). Default true. */
  processMetrics?: boolean;
  /** Distinct values kept per capped label (tool, workflow, upstream). Default 500. */
  maxLabelValues?: number;
}

export class TaskvisorMetrics {
  /** The registry holding every taskvisor metric (add your own here, or merge it with yours). */
  readonly registry: PromClient.Registry = new (prom().Registry)();
  readonly #unsubscribes: (() => void)[] = [];

  constructor(runtime: OperationsRuntime, activity: TaskActivity, options: MetricsOptions = {}) {
    const { collectDefaultMetrics, Counter, Gauge, Histogram } = prom();
    const registers = [this.registry];
    const tools = new LabelCap(options.maxLabelValues);
    const workflows = new LabelCap(options.maxLabelValues);
    const upstreams = new LabelCap(options.maxLabelValues);
    const source = runtime.store;

    const created = new Counter({
      name: 'taskvisor_tasks_created_total',
      help: 'Tasks created (durably stored), by tool',
      labelNames: ['tool'],
      registers,
    });
    const finished = new Counter({
      name: 'taskvisor_tasks_finished_total',
      help: 'Tasks that reached a terminal status, by tool and status',
      labelNames: ['tool', 'status'],
      registers,
    });
    new Gauge({
      name: 'taskvisor_tasks_live',
      help: 'Unfinished tasks of this instance, by status',
      labelNames: ['status'],
      registers,
      collect() {
        for (const [status, count] of Object.entries(activity.liveByStatus())) this.set({ status }, count);
      },
    });
    const createToDurable = new Histogram({
      name: 'taskvisor_task_create_durable_seconds',
      help: 'From a task being created to its record being durable (the CreateTaskResult waits for it, T-07)',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const runTime = new Histogram({
      name: 'taskvisor_task_run_seconds',
      help: 'From creation to the terminal status, by tool and status',
      labelNames: ['tool', 'status'],
      buckets: RUN_BUCKETS,
      registers,
    });
    const storeWrite = new Histogram({
      name: 'taskvisor_store_write_seconds',
      help: 'Store write latency (create, put, delete), durable on return',
      labelNames: ['op'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const storeErrors = new Counter({
      name: 'taskvisor_store_write_errors_total',
      help: 'Failed store writes, by op and error kind (ENOSPC, EIO, TaskFencedError...)',
      labelNames: ['op', 'error'],
      registers,
    });
    const errorKinds = new LabelCap(50);
    const polls = new Counter({
      name: 'taskvisor_task_polls_total',
      help: 'tasks/get requests answered, local or forwarded to an upstream',
      labelNames: ['target'],
      registers,
    });
    new Gauge({
      name: 'taskvisor_listen_streams',
      help: 'Open subscriptions/listen streams',
      registers,
      collect() {
        this.set(runtime.subscriptions?.size ?? 0);
      },
    });
    const frames = new Counter({
      name: 'taskvisor_listen_frames_total',
      help: 'Frames sent on listen streams, by notification method',
      labelNames: ['method'],
      registers,
    });
    const methods = new LabelCap(20);
    // No principal label (unbounded); the limit is a fixed set, the tool a capped label.
    const rateLimited = new Counter({
      name: 'taskvisor_rate_limited_total',
      help: 'Requests refused by a per-principal rate limit (answered 429 / -32029), by limit',
      labelNames: ['limit'],
      registers,
    });
    const forbidden = new Counter({
      name: 'taskvisor_tool_calls_forbidden_total',
      help: 'Tool calls tool policy refused (-32031), by tool',
      labelNames: ['tool'],
      registers,
    });
    const backpressure = new Counter({
      name: 'taskvisor_backpressure_closes_total',
      help: 'Streams closed because their consumer stopped reading',
      labelNames: ['stream'],
      registers,
    });
    new Gauge({
      name: 'taskvisor_upstream_state',
      help: 'Each upstream server: 1 for its current state',
      labelNames: ['upstream', 'state'],
      registers,
      collect() {
        this.reset();
        for (const status of runtime.upstreams?.status() ?? []) this.set({ upstream: upstreams.of(status.name), state: status.state }, 1);
      },
    });
    const upstreamCalls = new Histogram({
      name: 'taskvisor_upstream_call_seconds',
      help: 'Requests to upstream servers, by upstream, method and outcome (result, error, unavailable)',
      labelNames: ['upstream', 'method', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    const upstreamMethods = new LabelCap(30);
    const steps = new Counter({
      name: 'taskvisor_workflow_steps_total',
      help: 'Workflow steps ended, by workflow and outcome (completed, failed, skipped, cancelled, interrupted)',
      labelNames: ['workflow', 'outcome'],
      registers,
    });
    const renewals = new Counter({
      name: 'taskvisor_cluster_lease_renewals_total',
      help: 'Cluster lease renewals, by outcome (renewed, failed)',
      labelNames: ['outcome'],
      registers,
    });
    const leaseLost = new Counter({ name: 'taskvisor_cluster_lease_lost_total', help: 'Times this instance lost its lease', registers });
    const adopted = new Counter({
      name: 'taskvisor_cluster_adopted_tasks_total',
      help: 'Unfinished tasks adopted from instances whose lease expired',
      registers,
    });
    new Gauge({
      name: 'taskvisor_cluster_lease_held',
      help: '1 while this instance holds its cluster lease (shared stores only)',
      registers,
      collect() {
        if (runtime.cluster) this.set(runtime.cluster.leaseHeld ? 1 : 0);
      },
    });
    new Gauge({
      name: 'taskvisor_ready',
      help: '1 while the runtime is ready (recovery finished, not stopping)',
      registers,
      collect() {
        this.set(runtime.phase === 'ready' ? 1 : 0);
      },
    });
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry });

    this.#unsubscribes.push(
      activity.onEvent((event) => {
        const tool = tools.of(event.tool);
        if (event.previousStatus === undefined && event.entries[0]?.kind === 'created') created.inc({ tool });
        if (event.status === 'completed' || event.status === 'failed' || event.status === 'cancelled') {
          finished.inc({ tool, status: event.status });
          runTime.observe({ tool, status: event.status }, Math.max(0, event.lastUpdatedAt - event.createdAt) / 1000);
        }
      }),
      subscribe('taskvisor:store.operation', (message) => {
        if (message.source !== source) return;
        storeWrite.observe({ op: message.op }, message.durationMs / 1000);
        if (message.error !== undefined) storeErrors.inc({ op: message.op, error: errorKinds.of(message.error) });
        else if (message.op === 'create' && message.summary)
          createToDurable.observe(Math.max(0, Date.now() - message.summary.createdAt) / 1000);
      }),
      subscribe('taskvisor:tasks.poll', (message) => polls.inc({ target: message.local ? 'local' : 'upstream' })),
      subscribe('taskvisor:listen.frame', (message) => frames.inc({ method: methods.of(message.method) })),
      subscribe('taskvisor:backpressure.close', (message) => backpressure.inc({ stream: message.stream })),
      subscribe('taskvisor:ratelimit.refused', (message) => rateLimited.inc({ limit: message.limit })),
      subscribe('taskvisor:tool.forbidden', (message) => forbidden.inc({ tool: tools.of(message.tool) })),
      subscribe('taskvisor:upstream.call', (message) =>
        upstreamCalls.observe(
          { upstream: upstreams.of(message.upstream), method: upstreamMethods.of(message.method), outcome: message.outcome },
          message.durationMs / 1000,
        ),
      ),
      subscribe('taskvisor:workflow.step', (message) => steps.inc({ workflow: workflows.of(message.workflow), outcome: message.outcome })),
      subscribe('taskvisor:cluster.lease', (message) => {
        if (message.event === 'renewed') renewals.inc({ outcome: 'renewed' });
        else if (message.event === 'renewal-failed') renewals.inc({ outcome: 'failed' });
        else if (message.event === 'lost') leaseLost.inc();
        else if (message.event === 'adopted') adopted.inc(message.count ?? 0);
      }),
    );
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** `text/plain; version=0.0.4; charset=utf-8`. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stops listening and forgets every metric. */
  close(): void {
    for (const unsubscribe of this.#unsubscribes.splice(0)) unsubscribe();
    this.registry.clear();
  }
}
