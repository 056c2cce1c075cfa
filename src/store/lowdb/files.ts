/**
 * What the lowdb store keeps in memory about its files (an index entry per
 * task) and the small file helpers it reads them with.
 */
import { readdir, readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { TaskStatus } from '../../../machines/task/types.js';
import type { TaskRecord } from '../../tasks/TaskRecord.js';
import { errorCode } from '../DurableJsonFile.js';

/** Parallel file operations during open and listing; bounded so 10k records do not hit EMFILE. */
export const IO_CONCURRENCY = 32;

/** What the index keeps per task: enough to answer list/listNonTerminal/listExpired and version checks without disk reads. */
export interface IndexEntry {
  taskId: string;
  status: TaskStatus;
  owner: string;
  createdAt: number;
  ttlMs: number | null;
  version: number;
}

export function indexEntryOf(record: TaskRecord): IndexEntry {
  const { taskId, status, owner, createdAt, ttlMs, version } = record;
  return { taskId, status, owner, createdAt, ttlMs, version };
}

/** The task id a record file's name encodes (a hashed name of a very long id stands for itself). */
export function taskIdOfFile(path: string): string {
  const name = basename(path, '.json');
  try {
    return name.startsWith('~') ? name : decodeURIComponent(name);
  } catch {
    return name;
  }
}

export async function readdirIfAny(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
}

/** The file's text, or `undefined` when there is none; other errors (EIO, EACCES) are thrown as they are. */
export async function readTextIfAny(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/** `fn` over `items` with at most `limit` calls in flight; results keep the input order. */
export async function mapLimit<I, O>(items: readonly I[], limit: number, fn: (item: I) => Promise<O>): Promise<O[]> {
  const out = new Array<O>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as I);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * `fn` over `items` with at most `limit` calls in flight; rejects with the
 * first failure only after every call started has settled (a checkpoint must
 * not leave a write running behind the next one) and starts no new call after it.
 */
export async function forEachSettled<I>(items: readonly I[], limit: number, fn: (item: I) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < items.length && failure === undefined) {
      const item = items[next++] as I;
      try {
        await fn(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure.error;
}
