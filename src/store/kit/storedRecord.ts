/**
 * The one check every store makes of a record it read, before anyone sees
 * it: the bytes parse, and the value is a task record of the id it was
 * stored under (`tasks/recordProblem.ts`: identity, owner, status, times,
 * ttl, versions). Anything else is damage, set aside by the store kit.
 */
import { taskRecordProblem } from '../../tasks/recordProblem.js';
import type { TaskRecord } from '../../tasks/TaskRecord.js';

/** What a store found under one task id: the JSON text it keeps, or (memory) the value itself. */
export type StoredRecord = { readonly taskId: string; readonly text: string } | { readonly taskId: string; readonly value: unknown };

/** A stored record that passed the check, or why it did not. */
export type CheckedRecord = { readonly record: TaskRecord } | { readonly problem: string };

export function checkStoredRecord(stored: StoredRecord): CheckedRecord {
  let value: unknown;
  if ('text' in stored) {
    try {
      value = JSON.parse(stored.text);
    } catch (error) {
      return { problem: `invalid JSON: ${error instanceof Error ? error.message : String(error)}` };
    }
  } else value = stored.value;
  const problem = taskRecordProblem(value, stored.taskId);
  // Checked just above: the value has every field a TaskRecord needs, of the right type.
  return problem === undefined ? { record: value as TaskRecord } : { problem };
}
