/**
 * Any {@link TaskStore}, its writes reported on `taskvisor:store.operation`
 * (src/core/diagnostics.ts): duration, failure kind, and a summary of the
 * task written. Metrics, the dashboard's timelines and OpenTelemetry spans
 * are built from these reports; the store itself is untouched. A
 * {@link ForwardingTaskStore}: everything it does not report is forwarded.
 */
import { performance } from 'node:perf_hooks';
import { publish, type StoredTaskSummary } from '../core/diagnostics.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { ForwardingTaskStore } from './kit/ForwardingTaskStore.js';
import { putRecords, type TaskStore } from './TaskStore.js';

type WriteOp = 'create' | 'put' | 'delete';

export class ObservedTaskStore extends ForwardingTaskStore {
  /** Named after the store underneath, as reports name it. */
  readonly #name: string;

  constructor(inner: TaskStore) {
    super(inner);
    this.#name = inner.constructor?.name || 'TaskStore';
  }

  override create(record: TaskRecord): Promise<void> {
    return this.#observed('create', record, this.inner.create(record));
  }

  override put(record: TaskRecord): Promise<void> {
    return this.#observed('put', record, this.inner.put(record));
  }

  override delete(taskId: string): Promise<boolean> {
    return this.#observed('delete', taskId, this.inner.delete(taskId));
  }

  /** A batch is reported as one put per record, each with the batch's duration: consumers count task writes. */
  override putMany(records: readonly TaskRecord[]): Promise<void> {
    const startedAt = performance.now();
    const written = putRecords(this.inner, records);
    const each = (error?: unknown) => {
      const durationMs = performance.now() - startedAt;
      for (const record of records) this.#report('put', record, durationMs, error);
    };
    written.then(
      () => each(),
      (error: unknown) => each(error),
    );
    return written;
  }

  #observed<T>(op: WriteOp, argument: TaskRecord | string, written: Promise<T>): Promise<T> {
    const startedAt = performance.now();
    written.then(
      () => this.#report(op, argument, performance.now() - startedAt),
      (error: unknown) => this.#report(op, argument, performance.now() - startedAt, error),
    );
    return written;
  }

  /** One report of a write: `op` on one task, `argument` its record (or only its id for a delete). */
  #report(op: WriteOp, argument: TaskRecord | string, durationMs: number, error?: unknown): void {
    publish('taskvisor:store.operation', () => ({
      store: this.#name,
      // The store observed: what callers hold (`runtime.store`) and filter reports by.
      source: this.inner,
      op,
      durationMs,
      taskId: typeof argument === 'string' ? argument : argument.taskId,
      ...(error !== undefined ? { error: errorKind(error) } : {}),
      ...(typeof argument === 'string' ? {} : { summary: summarize(argument) }),
    }));
  }
}

/** The store's writes, reported; a store already observed is returned as is. */
export function observeStore(store: TaskStore): ObservedTaskStore {
  return store instanceof ObservedTaskStore ? store : new ObservedTaskStore(store);
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
