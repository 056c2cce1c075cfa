/**
 * `taskvisor tasks check [--repair]`: finds the records of
 * a store that the server cannot serve — unreadable bytes, or a record that
 * fails the record check (`tasks/recordProblem.ts`) — and lists the ones
 * already set aside. Without `--repair` it only reads (no lock: safe next to
 * a running server) and exits 1 when damaged records are in the live set;
 * with `--repair` it takes the store's lock (refused while a server uses the
 * store) and quarantines them: kept as stored, never deleted.
 */
import { createTaskStore, type TaskStoreConfig } from '../store/index.js';
import type { QuarantinedRecord, TaskStore } from '../store/TaskStore.js';
import { taskRecordProblem } from '../tasks/recordProblem.js';
import type { CliIo } from './usage.js';

/** One record the check found. */
export interface CheckFinding {
  /** The task id (every store reports a damaged record by its id). */
  taskId: string;
  state: 'unreadable' | 'invalid' | 'quarantined';
  reason: string;
  /** `--repair` set it aside in this run. */
  repaired?: boolean;
}

export async function checkStore(storeConfig: TaskStoreConfig, options: { repair: boolean; json: boolean }, io: CliIo): Promise<number> {
  const unreadable = new Map<string, string>();
  const store: TaskStore = createTaskStore(storeConfig, {
    lock: options.repair,
    onCorrupt: (where, error) => unreadable.set(where, error.message),
  });
  await store.open();
  const findings: CheckFinding[] = [];
  let checked = 0;
  try {
    for (const record of await store.list()) {
      checked++;
      const problem = taskRecordProblem(record, record.taskId);
      if (problem === undefined) continue;
      const finding: CheckFinding = { taskId: record.taskId, state: 'invalid', reason: problem };
      if (options.repair) finding.repaired = await store.quarantine(record.taskId, problem);
      findings.push(finding);
    }
    // A store that owns its files quarantined the unreadable ones as it met them (lowdb at open, the others as listed).
    for (const [where, reason] of unreadable)
      findings.push({ taskId: where, state: 'unreadable', reason, ...(options.repair ? { repaired: true } : {}) });
    const setAside: QuarantinedRecord[] = await store.listQuarantined();
    const reported = new Set(findings.filter((finding) => finding.repaired).map((finding) => finding.taskId));
    for (const entry of setAside) {
      if (!reported.has(entry.taskId)) findings.push({ taskId: entry.taskId, state: 'quarantined', reason: entry.reason });
    }
  } finally {
    await store.close();
  }
  const open = findings.filter((finding) => finding.state !== 'quarantined' && !finding.repaired);
  if (options.json) {
    io.stdout.write(`${JSON.stringify({ checked: checked + unreadable.size, damaged: open.length, findings }, null, 2)}\n`);
  } else {
    if (findings.length > 0) io.stdout.write('TASK ID\tSTATE\tREASON\n');
    for (const finding of findings) {
      const state = finding.repaired ? `${finding.state}, now quarantined` : finding.state;
      io.stdout.write(`${finding.taskId}\t${state}\t${finding.reason}\n`);
    }
    const quarantined = findings.filter((finding) => finding.state === 'quarantined' || finding.repaired).length;
    io.stdout.write(
      `${checked + unreadable.size} records checked: ${open.length} damaged in the live set, ${quarantined} in quarantine${open.length > 0 ? ' (taskvisor tasks check --repair sets them aside)' : ''}\n`,
    );
  }
  return open.length > 0 ? 1 : 0;
}
