/**
 * An unfinished stored task whose snapshot cannot be used (a tool that is
 * gone, an older machine version, a snapshot that would not restore) taken
 * through one event by a fresh task actor built from what its record shows
 * (I-3): recovery ends such tasks `failed` this way.
 */
import { createActor } from 'xstate';
import { taskMachine, TASK_MACHINE_VERSION, type TaskEvent } from '../../machines/task/index.js';
import { recordOf } from '../tasks/project.js';
import type { TaskRecord } from '../tasks/TaskRecord.js';
import { inputOf, throwIfUnrestorable } from './TaskActorFactory.js';

/** A fresh actor built from what the stored record shows (its snapshot cannot be used), taken through `event`. */
export function endFromRecord(record: TaskRecord, event: TaskEvent): TaskRecord {
  // The machine does no I/O and no run is wired to this actor: this runs only the transitions.
  const actor = createActor(taskMachine, { input: inputOf(record) });
  throwIfUnrestorable(actor);
  actor.start();
  // A fresh actor carries the stored progress report on (a restored one has it in its context).
  if (record.checkpoint !== undefined) actor.send({ type: 'CHECKPOINT', at: event.at, checkpoint: record.checkpoint });
  actor.send(event);
  const failed = recordOf(actor.getSnapshot(), undefined, record.version + 1, TASK_MACHINE_VERSION);
  actor.stop();
  return failed;
}
