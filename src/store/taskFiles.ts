/**
 * Where a task's record lives on disk: `tasks/<shard>/<name>.json`.
 *
 * Task ids come from the wire, so the mapping must be safe for any string:
 * the name only ever contains `[A-Za-z0-9._%~-]` (never `/`, never a bare
 * `..`), so an id cannot address a file outside its shard folder. The shard
 * (first two hex chars of sha256(id), 256 folders) keeps folders small, so a
 * create costs the same at 100 or 100k stored tasks.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';

/** Longer ids are never stored: `get`/`delete`/`put` treat them as unknown, `create` rejects. */
export const MAX_TASK_ID_LENGTH = 200;

/** Encoded names longer than this are replaced by a hash so every name stays well under NAME_MAX (255 bytes) even with the temp-file suffix. */
const MAX_ENCODED_NAME_LENGTH = 200;

/** Characters left as they are; everything else is `%XX`-escaped (UTF-8 bytes). */
const UNRESERVED_BY_ENCODE_URI = /[!'()*~]/g;

export interface TaskLocation {
  shard: string;
  shardDir: string;
  file: string;
}

/**
 * Escapes every character outside `[A-Za-z0-9._-]` as `%XX` (encodeURIComponent
 * plus `!'()*~`). `undefined` for strings that are not well-formed UTF-16 (a
 * lone surrogate would otherwise collide with U+FFFD).
 */
export function encodeTaskId(taskId: string): string | undefined {
  let encoded: string;
  try {
    encoded = encodeURIComponent(taskId);
  } catch {
    return undefined;
  }
  return encoded.replace(UNRESERVED_BY_ENCODE_URI, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Why `taskId` cannot be stored, or `undefined` when it can. */
export function invalidTaskIdReason(taskId: unknown): string | undefined {
  if (typeof taskId !== 'string') return 'task id is not a string';
  if (taskId.length === 0) return 'task id is empty';
  if (taskId.length > MAX_TASK_ID_LENGTH) return `task id is ${taskId.length} characters long (max ${MAX_TASK_ID_LENGTH})`;
  // isWellFormed (ES2024, V8 ≥ 11.1: every Node this runs on) rejects exactly what encodeURIComponent throws on
  // (a lone surrogate), without building the encoded copy: this runs for every store write (0.6% of a create).
  if (!(taskId as string & { isWellFormed(): boolean }).isWellFormed()) return 'task id is not well-formed UTF-16';
  return undefined;
}

/** The file name (without folder) for a storable task id. */
export function taskFileName(taskId: string): string | undefined {
  if (invalidTaskIdReason(taskId) !== undefined) return undefined;
  const encoded = encodeTaskId(taskId);
  if (encoded === undefined) return undefined;
  // '~' is always escaped by encodeTaskId, so hashed names cannot collide with encoded ones.
  const base = encoded.length <= MAX_ENCODED_NAME_LENGTH ? encoded : `~${sha256Hex(taskId)}`;
  return `${base}.json`;
}

/** First two hex chars of sha256(taskId). */
export function taskShard(taskId: string): string {
  return sha256Hex(taskId).slice(0, 2);
}

/** Full location of a task's file under `tasksDir`, or `undefined` when the id cannot be stored. */
export function locateTask(tasksDir: string, taskId: string): TaskLocation | undefined {
  const name = taskFileName(taskId);
  if (name === undefined) return undefined;
  const shard = taskShard(taskId);
  const shardDir = join(tasksDir, shard);
  return { shard, shardDir, file: join(shardDir, name) };
}

/** Shard folder names: exactly two lowercase hex chars. */
export const SHARD_NAME = /^[0-9a-f]{2}$/;

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
