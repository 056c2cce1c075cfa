/**
 * Any {@link TaskStore}, its writes reported on `taskvisor:store.operation`
 * (src/core/diagnostics.ts): duration, failure kind, and a summary of the
 * task written. Metrics, the dashboard's timelines and OpenTelemetry spans
 * are built from these reports (issue 16); the store itself is untouched.
 *
 * A Proxy rather than a wrapper class: every other member (`ownership`,
 * `description`, a store's own extras) passes through unchanged, and methods
 * run bound to the real store so its `#private` fields keep working.
 */
import { performance } from 'node:perf_hooks';
import { publish, type StoredTaskSummary } from '../core/diagnostics.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import type { TaskStore } from './TaskStore.js';

const OBSERVED = Symbol('taskvisor.observedStore');
const WRITES = new Set<PropertyKey>(['create', 'put', 'delete']);

/** One report of a write: `op` on one task, `argument` its record (or only its id for a delete). */
type Report = (op: 'create' | 'put' | 'delete', argument: TaskRecord | string, durationMs: number, error?: unknown) => void;

/** The store's writes, reported; a store already observed is returned as is. */
export function observeStore<S extends TaskStore>(store: S): S {
  if ((store as { [OBSERVED]?: boolean })[OBSERVED]) return store;
  const name = store.constructor?.name || 'TaskStore';
  const report: Report = (op, argument, durationMs, error) =>
    publish('taskvisor:store.operation', () => ({
      store: name,
      source: proxy,
      op,
      durationMs,
      taskId: typeof argument === 'string' ? argument : argument.taskId,
      ...(error !== undefined ? { error: errorKind(error) } : {}),
      ...(typeof argument === 'string' ? {} : { summary: summarize(argument) }),
    }));
  /** The function handed out for a method, made once per method value (was one bound copy per call: ~1 % of a tasks/get). */
  const made = new Map<PropertyKey, { value: unknown; fn: unknown }>();
  const handOut = (property: PropertyKey, value: (...args: unknown[]) => unknown, target: S): unknown => {
    const known = made.get(property);
    if (known?.value === value) return known.fn;
    const fn = wrap(property, value, target);
    made.set(property, { value, fn });
    return fn;
  };
  const wrap = (property: PropertyKey, value: (...args: unknown[]) => unknown, target: S): unknown => {
    // A batch is reported as one put per record, each with the batch's duration: consumers count task writes.
    if (property === 'putMany') {
      return (records: readonly TaskRecord[]) => {
        const startedAt = performance.now();
        const written = value.call(target, records) as Promise<void>;
        const each = (error?: unknown) => {
          const durationMs = performance.now() - startedAt;
          for (const record of records) report('put', record, durationMs, error);
        };
        written.then(
          () => each(),
          (error: unknown) => each(error),
        );
        return written;
      };
    }
    if (!WRITES.has(property)) return value.bind(target);
    const op = property as 'create' | 'put' | 'delete';
    return (argument: TaskRecord | string) => {
      const startedAt = performance.now();
      const written = value.call(target, argument) as Promise<unknown>;
      written.then(
        () => report(op, argument, performance.now() - startedAt),
        (error: unknown) => report(op, argument, performance.now() - startedAt, error),
      );
      return written;
    };
  };
  const proxy: S = new Proxy(store, {
    get(target, property) {
      if (property === OBSERVED) return true;
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      return handOut(property, value as (...args: unknown[]) => unknown, target);
    },
  });
  return proxy;
}

/** What a subscriber may see of a record: no arguments, no result content, no snapshot. */
export function summarize(record: TaskRecord): StoredTaskSummary {
  const errorMessage = record.error?.message ?? (record.result?.isError === true ? firstText(record.result) : undefined);
  return {
    taskId: record.taskId,
    tool: record.tool,
    owner: record.owner,
    status: record.status,
    ...(record.statusMessage !== undefined ? { statusMessage: record.statusMessage } : {}),
    ...(record.inputRequests ? { inputRequestKeys: Object.keys(record.inputRequests) } : {}),
    ...(errorMessage !== undefined ? { errorMessage } : {}),
    createdAt: record.createdAt,
    lastUpdatedAt: record.lastUpdatedAt,
    version: record.version,
    ...(record.checkpoint !== undefined ? { checkpoint: record.checkpoint } : {}),
    ...(record.trace !== undefined ? { trace: record.trace } : {}),
  };
}

/** A short, bounded kind for a failed write: an errno code or an error class name, never a message (paths, SQL). */
function errorKind(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z0-9_]{2,32}$/.test(code)) return code;
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' && /^[A-Za-z]{1,40}$/.test(name) ? name : 'Error';
}

function firstText(result: Record<string, unknown>): string | undefined {
  const content = result.content;
  if (!Array.isArray(content)) return undefined;
  const text = content.find((block: unknown) => (block as { type?: unknown }).type === 'text') as { text?: unknown } | undefined;
  return typeof text?.text === 'string' ? text.text.slice(0, 500) : undefined;
}
