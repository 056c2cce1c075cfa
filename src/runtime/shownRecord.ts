import type { TaskRecord } from '../tasks/TaskRecord.js';

/** A stored record as clients and listeners get it: without the machine snapshot (as a live actor's view always was). */
export function shown(record: TaskRecord): TaskRecord {
  const { snapshot: _internal, ...rest } = record;
  return rest;
}
