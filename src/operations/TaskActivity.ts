/**
 * What the tasks of one runtime are doing, as an operator sees it:
 * live tasks by status, finished counts, and a bounded timeline per task
 * (created, status changes, status messages, input requests, result or
 * error). Fed from `taskvisor:store.operation`: only what was durably
 * written is shown, in the order it was written.
 *
 * Memory is bounded: timelines of the most recent `maxTasks` tasks, each at
 * most `maxEntriesPerTask` entries (the oldest entries give way, the first
 * one stays).
 */
import { subscribe, type StoreOperationMessage, type StoredTaskSummary } from '../core/diagnostics.js';
import type { TaskStatus } from '../../machines/task/index.js';
import { MAX_ERROR_MESSAGE_CHARS, MAX_STATUS_MESSAGE_CHARS, truncateText } from '../tasks/storedText.js';

/** One entry of a task's timeline. */
export interface TimelineEntry {
  /** Epoch ms (the record's `lastUpdatedAt`). */
  at: number;
  kind: 'created' | 'status' | 'message' | 'input' | 'result' | 'error';
  status: TaskStatus;
  statusMessage?: string;
  /** Keys of the input requests asked (`input`). */
  inputRequestKeys?: string[];
  /** Error text of a failed task or an `isError` result (`error`). */
  errorMessage?: string;
}

/** A change of one task, as the dashboard's live feed sends it. */
export interface TaskActivityEvent {
  taskId: string;
  tool: string;
  owner: string;
  status: TaskStatus;
  /** Status before this write; absent for a created task. */
  previousStatus?: TaskStatus;
  /** The timeline entries this write added. */
  entries: TimelineEntry[];
  createdAt: number;
  lastUpdatedAt: number;
  statusMessage?: string;
}

export interface TaskActivityOptions {
  /** Only writes of this store object are counted (`runtime.store`). */
  source: object;
  maxTasks?: number;
  maxEntriesPerTask?: number;
}

interface Known {
  summary: StoredTaskSummary;
  timeline: TimelineEntry[];
}

const TERMINAL = new Set<TaskStatus>(['completed', 'failed', 'cancelled']);
/**
 * Longest statusMessage a timeline entry keeps: up to maxTasks × maxEntriesPerTask
 * entries are held, so each must be small (the task's current message is in its record).
 */
const TIMELINE_MESSAGE_CHARS = 500;

export class TaskActivity {
  readonly #options: Required<TaskActivityOptions>;
  /** Insertion order is recency: a write moves its task to the end. */
  readonly #known = new Map<string, Known>();
  readonly #live = new Map<string, TaskStatus>();
  readonly #finished = new Map<TaskStatus, number>();
  readonly #listeners = new Set<(event: TaskActivityEvent) => void>();
  readonly #unsubscribe: () => void;

  constructor(options: TaskActivityOptions) {
    this.#options = { maxTasks: 2000, maxEntriesPerTask: 200, ...options };
    this.#unsubscribe = subscribe('taskvisor:store.operation', (message) => this.#onWrite(message));
  }

  /** Calls `listener` after each durable change of a task; returns the unsubscription. */
  onEvent(listener: (event: TaskActivityEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** Live (unfinished) tasks of this instance by status. */
  liveByStatus(): Record<'working' | 'input_required', number> {
    const counts = { working: 0, input_required: 0 };
    for (const status of this.#live.values()) if (status === 'working' || status === 'input_required') counts[status]++;
    return counts;
  }

  /** Tasks finished since this process started, by terminal status. */
  finishedByStatus(): Record<'completed' | 'failed' | 'cancelled', number> {
    return {
      completed: this.#finished.get('completed') ?? 0,
      failed: this.#finished.get('failed') ?? 0,
      cancelled: this.#finished.get('cancelled') ?? 0,
    };
  }

  /** The timeline kept for `taskId` (empty when it is not among the recent tasks). */
  timeline(taskId: string): TimelineEntry[] {
    return [...(this.#known.get(taskId)?.timeline ?? [])];
  }

  /** Seeds the live set with unfinished tasks found at start (recovered ones are written again only when they change). */
  seed(summaries: StoredTaskSummary[]): void {
    for (const summary of summaries) {
      if (this.#known.has(summary.taskId)) continue;
      this.#remember(bounded(summary), [{ at: summary.lastUpdatedAt, kind: 'status', status: summary.status }]);
      if (!TERMINAL.has(summary.status)) this.#live.set(summary.taskId, summary.status);
    }
  }

  close(): void {
    this.#unsubscribe();
    this.#listeners.clear();
  }

  #onWrite(message: StoreOperationMessage): void {
    if (message.source !== this.#options.source || message.error !== undefined) return;
    if (message.op === 'delete') {
      // Purged (ttl): no longer live; its timeline stays until it ages out.
      this.#live.delete(message.taskId);
      return;
    }
    if (!message.summary) return;
    const summary = bounded(message.summary);
    const before = this.#known.get(summary.taskId)?.summary;
    // A late write with an older version never undoes a newer one (the store ignores it too).
    if (before && summary.version <= before.version) return;
    // A finished task changes no more (I-2): a write after it is not a second finish.
    if (before && TERMINAL.has(before.status)) return;
    const entries = diff(before, summary, message.op);
    this.#remember(summary, entries);
    if (TERMINAL.has(summary.status)) {
      this.#live.delete(summary.taskId);
      this.#finished.set(summary.status, (this.#finished.get(summary.status) ?? 0) + 1);
    } else {
      this.#live.set(summary.taskId, summary.status);
    }
    if (entries.length === 0) return;
    const event: TaskActivityEvent = {
      taskId: summary.taskId,
      tool: summary.tool,
      owner: summary.owner,
      status: summary.status,
      ...(before ? { previousStatus: before.status } : {}),
      entries,
      createdAt: summary.createdAt,
      lastUpdatedAt: summary.lastUpdatedAt,
      ...(summary.statusMessage !== undefined ? { statusMessage: summary.statusMessage } : {}),
    };
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A subscriber's failure is its own; the feed goes on.
      }
    }
  }

  #remember(summary: StoredTaskSummary, entries: TimelineEntry[]): void {
    const known = this.#known.get(summary.taskId);
    const timeline = known?.timeline ?? [];
    timeline.push(...entries);
    // Keep the first entry (creation) and the most recent ones.
    if (timeline.length > this.#options.maxEntriesPerTask) timeline.splice(1, timeline.length - this.#options.maxEntriesPerTask);
    this.#known.delete(summary.taskId);
    this.#known.set(summary.taskId, { summary: { ...summary, checkpoint: undefined }, timeline });
    while (this.#known.size > this.#options.maxTasks) {
      const oldest = this.#known.keys().next().value as string;
      this.#known.delete(oldest);
    }
  }
}

/**
 * `summary` with its messages within the bounds a task keeps: a record written
 * before they applied (or by another writer) may hold megabytes, and up to
 * `maxTasks` summaries are kept and sent on the live feed.
 */
function bounded(summary: StoredTaskSummary): StoredTaskSummary {
  const { statusMessage, errorMessage } = summary;
  if ((statusMessage?.length ?? 0) <= MAX_STATUS_MESSAGE_CHARS && (errorMessage?.length ?? 0) <= MAX_ERROR_MESSAGE_CHARS) return summary;
  return {
    ...summary,
    ...(statusMessage !== undefined ? { statusMessage: truncateText(statusMessage, MAX_STATUS_MESSAGE_CHARS) } : {}),
    ...(errorMessage !== undefined ? { errorMessage: truncateText(errorMessage, MAX_ERROR_MESSAGE_CHARS) } : {}),
  };
}

/** The timeline entries a write adds, from what changed since the previous one. */
function diff(before: StoredTaskSummary | undefined, after: StoredTaskSummary, op: 'create' | 'put'): TimelineEntry[] {
  const at = after.lastUpdatedAt;
  const entries: TimelineEntry[] = [];
  const shown = after.statusMessage === undefined ? undefined : truncateText(after.statusMessage, TIMELINE_MESSAGE_CHARS);
  const message = shown !== undefined ? { statusMessage: shown } : {};
  if (!before) {
    entries.push({ at: after.createdAt, kind: op === 'create' ? 'created' : 'status', status: after.status, ...message });
  } else if (before.status !== after.status) {
    entries.push({ at, kind: 'status', status: after.status, ...message });
  } else if (before.statusMessage !== after.statusMessage && after.statusMessage !== undefined) {
    entries.push({ at, kind: 'message', status: after.status, statusMessage: shown! });
  }
  const asked = after.inputRequestKeys ?? [];
  const askedBefore = new Set(before?.inputRequestKeys ?? []);
  if (after.status === 'input_required' && asked.some((key) => !askedBefore.has(key))) {
    entries.push({ at, kind: 'input', status: after.status, inputRequestKeys: asked });
  }
  if (after.status === 'completed' || after.status === 'failed' || after.status === 'cancelled') {
    if (after.errorMessage !== undefined) entries.push({ at, kind: 'error', status: after.status, errorMessage: after.errorMessage });
    else if (after.status === 'completed') entries.push({ at, kind: 'result', status: after.status });
  }
  return entries;
}
