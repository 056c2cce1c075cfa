/**
 * A {@link TaskSupervisor} on an SQLite file, passivating after 0 ms unless
 * told otherwise: the fixture of the passivation tests (input-waiting and
 * sleeping tasks), which stop and reopen it on the same file.
 */
import { join } from 'node:path';
import { silentLogger, type TaskRecord } from '../../src/index.js';
import { TaskSupervisor, type TaskSupervisorOptions } from '../../src/runtime/TaskSupervisor.js';
import { SqliteTaskStore } from '../../src/store/index.js';
import type { ToolRegistry } from '../../src/tools/ToolRegistry.js';

export interface OpenedSupervisor {
  supervisor: TaskSupervisor;
  store: SqliteTaskStore;
  /** Every record the supervisor published, in order. */
  changes: TaskRecord[];
  close(): Promise<void>;
}

/** Opens `dir`/tasks.db and starts a supervisor over `tools` on it (recovering what the file holds). */
export async function openSqliteSupervisor(
  dir: string,
  tools: ToolRegistry,
  maxLiveTasksPerPrincipal: number,
  options: Partial<TaskSupervisorOptions> = {},
): Promise<OpenedSupervisor> {
  const store = new SqliteTaskStore({ file: join(dir, 'tasks.db') });
  await store.open();
  const supervisor = new TaskSupervisor({
    store,
    tools,
    logger: silentLogger,
    reapIntervalMs: 0,
    passivateIdleAfterMs: 0,
    limits: { maxLiveTasksPerPrincipal, maxPendingInputRequestsPerTask: 4 },
    ...options,
  });
  const changes: TaskRecord[] = [];
  supervisor.onChange((record) => changes.push(record));
  await supervisor.start();
  return {
    supervisor,
    store,
    changes,
    async close() {
      await supervisor.stop();
      await store.close();
    },
  };
}
