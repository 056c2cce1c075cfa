/**
 * Filtering and ordering shared by every {@link TaskStore} implementation, so
 * all stores answer `list` and `listExpired` identically (the contract suite
 * compares them against the same expectations).
 */
import type { TaskStatus } from '../../machines/task/types.js';
import { TERMINAL_STATUSES } from '../core/statuses.js';
import { expiresAt, type TaskRecord } from '../tasks/TaskRecord.js';
import type { TaskListQuery } from './TaskStore.js';

/** The fields of a record that queries look at; a store may index only these. */
export type TaskQueryFields = Pick<TaskRecord, 'taskId' | 'owner' | 'status' | 'createdAt' | 'ttlMs'>;

/** Statuses a task can still leave (recovery on start re-hydrates these). */
export function isNonTerminal(status: TaskStatus): boolean {
  return !TERMINAL_STATUSES.has(status);
}

/**
 * Turns a caller's `limit` into a count: `undefined` or `Infinity` means all,
 * negatives and NaN mean none, fractions round down.
 */
export function normalizeLimit(limit: number | undefined): number {
  if (limit === undefined || limit === Number.POSITIVE_INFINITY) return Number.POSITIVE_INFINITY;
  if (!Number.isFinite(limit) || limit <= 0) return 0;
  return Math.floor(limit);
}

/** Does a record satisfy the owner/status filters of a {@link TaskListQuery}? */
export function matchesQuery(fields: TaskQueryFields, query: TaskListQuery): boolean {
  if (query.owner !== undefined && fields.owner !== query.owner) return false;
  if (query.status !== undefined && !query.status.includes(fields.status)) return false;
  return true;
}

/** Newest first by `createdAt`; ties broken by `taskId` so the order is total and stable. */
export function compareNewestFirst(a: TaskQueryFields, b: TaskQueryFields): number {
  if (a.createdAt !== b.createdAt) return b.createdAt - a.createdAt;
  return a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0;
}

/**
 * Applies a {@link TaskListQuery} to index entries: filter, order newest
 * first, cut at `limit`.
 */
export function selectListed<E extends TaskQueryFields>(entries: Iterable<E>, query: TaskListQuery): E[] {
  const limit = normalizeLimit(query.limit);
  if (limit === 0) return [];
  const hits: E[] = [];
  for (const entry of entries) if (matchesQuery(entry, query)) hits.push(entry);
  hits.sort(compareNewestFirst);
  return hits.length > limit ? hits.slice(0, limit) : hits;
}

/**
 * Ids of expired tasks (`createdAt + ttlMs <= now`; `ttlMs: null` never
 * expires, T-26), most overdue first so a reaper working in batches of
 * `limit` purges the oldest debt first.
 */
export function selectExpired(entries: Iterable<TaskQueryFields>, now: number, limit: number): string[] {
  const max = normalizeLimit(limit);
  if (max === 0) return [];
  const hits: { taskId: string; at: number }[] = [];
  for (const entry of entries) {
    const at = expiresAt(entry);
    if (at !== null && at <= now) hits.push({ taskId: entry.taskId, at });
  }
  hits.sort((a, b) => a.at - b.at || (a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0));
  return hits.slice(0, max).map((hit) => hit.taskId);
}
