/**
 * W3C Trace Context carried in a request's `_meta` (spec §4.1: `traceparent`,
 * `tracestate`, `baggage`). A task keeps the context of the
 * `tools/call` that created it, hands it to its tool (`ctx.trace`), and
 * sends it on with the upstream calls and workflow steps it makes, so one
 * trace spans the client, taskvisor and every server behind it, across
 * restarts (it is stored with the task).
 *
 * A malformed value is dropped, never an error: tracing must not fail a call.
 */

/** The trace context of a call (W3C Trace Context, Baggage). */
export interface TraceContext {
  /** `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`. */
  traceparent: string;
  tracestate?: string;
  baggage?: string;
}

/** W3C traceparent, version 00 (a later version is read by its first four fields). */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
/** tracestate and baggage: printable ASCII, bounded (W3C: 512 bytes of tracestate are always kept; 8192 for baggage). */
const PRINTABLE = /^[\x20-\x7e]*$/;

/** Whether `value` is a valid W3C `traceparent`. */
export function isTraceparent(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > 256) return false;
  const match = TRACEPARENT.exec(value);
  if (!match) return false;
  const [, version, traceId, parentId, , rest] = match;
  if (version === 'ff' || /^0+$/.test(traceId!) || /^0+$/.test(parentId!)) return false;
  // Version 00 has exactly four fields.
  return version !== '00' || rest === undefined;
}

/** The trace context in a request's `_meta`, or `undefined` when there is none (or it is malformed). */
export function traceContextOf(meta: unknown): TraceContext | undefined {
  if (typeof meta !== 'object' || meta === null) return undefined;
  const { traceparent, tracestate, baggage } = meta as Record<string, unknown>;
  if (!isTraceparent(traceparent)) return undefined;
  return {
    traceparent,
    ...(typeof tracestate === 'string' && tracestate.length <= 512 && PRINTABLE.test(tracestate) ? { tracestate } : {}),
    ...(typeof baggage === 'string' && baggage.length <= 8192 && PRINTABLE.test(baggage) ? { baggage } : {}),
  };
}

/** The `_meta` keys carrying `trace` on an outgoing request (none without one). */
export function traceMeta(trace: TraceContext | undefined): Record<string, string> {
  if (!trace) return {};
  return {
    traceparent: trace.traceparent,
    ...(trace.tracestate !== undefined ? { tracestate: trace.tracestate } : {}),
    ...(trace.baggage !== undefined ? { baggage: trace.baggage } : {}),
  };
}

/** The trace id and parent span id of a valid traceparent. */
export function traceIdsOf(traceparent: string): { traceId: string; spanId: string; sampled: boolean } {
  const [, traceId, spanId, flags] = traceparent.split('-') as [string, string, string, string];
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}
