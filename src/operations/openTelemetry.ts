/**
 * OpenTelemetry spans through `@opentelemetry/api` only: no
 * SDK is forced on anyone. The API is an optional peer dependency, loaded
 * when spans are asked for; the application registers whatever SDK and
 * exporter it wants (without one, the API's no-op tracer records nothing).
 *
 * Spans are built from the diagnostics channels, after the fact, with their
 * real start times, and join the caller's trace through the task's W3C
 * trace context:
 *
 * - `taskvisor.task.create`: from a task's creation to its record being durable;
 * - `taskvisor.task.run`: from creation to its terminal status (error status when it failed);
 * - `taskvisor.store.<op>`: each store write (error status and kind when it failed);
 * - `taskvisor.upstream.call`: each request to an upstream server.
 */
import type * as OtelApi from '@opentelemetry/api';
import { subscribe } from '../core/diagnostics.js';
import { traceIdsOf, type TraceContext } from '../core/traceContext.js';

/** `@opentelemetry/api` is not installed: spans were asked for but cannot be made. */
export class OpenTelemetryUnavailableError extends Error {
  constructor() {
    super('OpenTelemetry spans need @opentelemetry/api: npm install @opentelemetry/api (and an SDK to export them)');
    this.name = 'OpenTelemetryUnavailableError';
  }
}

export interface OpenTelemetryOptions {
  /** Only writes of this store object (`runtime.store`) make task and store spans. Default: every runtime's. */
  source?: object;
  /** The tracer name. Default `taskvisor`. */
  tracerName?: string;
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * Starts making spans; resolves with the function that stops it. Rejects with
 * {@link OpenTelemetryUnavailableError} when `@opentelemetry/api` cannot be loaded.
 */
export async function enableOpenTelemetry(options: OpenTelemetryOptions = {}): Promise<() => void> {
  let api: typeof OtelApi;
  try {
    api = await import('@opentelemetry/api');
  } catch {
    throw new OpenTelemetryUnavailableError();
  }
  const tracer = api.trace.getTracer(options.tracerName ?? 'taskvisor');
  const parentOf = (trace: TraceContext | string | undefined): OtelApi.Context => {
    const traceparent = typeof trace === 'string' ? trace : trace?.traceparent;
    if (!traceparent) return api.ROOT_CONTEXT;
    const { traceId, spanId, sampled } = traceIdsOf(traceparent);
    return api.trace.setSpanContext(api.ROOT_CONTEXT, {
      traceId,
      spanId,
      traceFlags: sampled ? api.TraceFlags.SAMPLED : api.TraceFlags.NONE,
      isRemote: true,
      ...(typeof trace === 'object' && trace.tracestate ? { traceState: api.createTraceState(trace.tracestate) } : {}),
    });
  };
  const span = (
    name: string,
    startTime: number,
    endTime: number,
    parent: OtelApi.Context,
    attributes: OtelApi.Attributes,
    error?: string,
  ) => {
    const made = tracer.startSpan(name, { startTime, attributes, kind: api.SpanKind.INTERNAL }, parent);
    if (error !== undefined) made.setStatus({ code: api.SpanStatusCode.ERROR, message: error });
    made.end(endTime);
  };
  /** Tasks already given their create / run span (a late write never makes a second one). */
  const finished = new Set<string>();
  const unsubscribes = [
    subscribe('taskvisor:store.operation', (message) => {
      if (options.source !== undefined && message.source !== options.source) return;
      const now = Date.now();
      const summary = message.summary;
      const parent = parentOf(summary?.trace);
      span(
        `taskvisor.store.${message.op}`,
        now - message.durationMs,
        now,
        parent,
        {
          'taskvisor.task.id': message.taskId,
          'taskvisor.store': message.store,
          ...(message.error ? { 'error.type': message.error } : {}),
        },
        message.error,
      );
      if (!summary || message.error !== undefined) return;
      const attributes = { 'taskvisor.task.id': summary.taskId, 'taskvisor.tool': summary.tool };
      if (message.op === 'create') span('taskvisor.task.create', summary.createdAt, now, parent, attributes);
      if (TERMINAL.has(summary.status) && !finished.has(summary.taskId)) {
        finished.add(summary.taskId);
        if (finished.size > 10_000) finished.delete(finished.values().next().value as string);
        span(
          'taskvisor.task.run',
          summary.createdAt,
          summary.lastUpdatedAt,
          parent,
          { ...attributes, 'taskvisor.task.status': summary.status },
          summary.status === 'failed' ? (summary.errorMessage ?? 'failed') : undefined,
        );
      }
    }),
    subscribe('taskvisor:upstream.call', (message) => {
      const now = Date.now();
      span(
        'taskvisor.upstream.call',
        now - message.durationMs,
        now,
        parentOf(message.traceparent),
        { 'taskvisor.upstream': message.upstream, 'rpc.method': message.method, 'taskvisor.outcome': message.outcome },
        message.outcome === 'result' ? undefined : message.outcome,
      );
    }),
  ];
  return () => {
    for (const unsubscribe of unsubscribes) unsubscribe();
  };
}
