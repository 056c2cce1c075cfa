/**
 * Task persistence: the {@link TaskStore} port, its two implementations and a
 * factory choosing one from configuration.
 */
import { LowdbTaskStore } from './LowdbTaskStore.js';
import { MemoryTaskStore } from './MemoryTaskStore.js';
import type { TaskStore } from './TaskStore.js';

export { TaskExistsError, type TaskListQuery, type TaskStore } from './TaskStore.js';
export { MemoryTaskStore } from './MemoryTaskStore.js';
export { LowdbTaskStore, type LowdbTaskStoreOptions } from './LowdbTaskStore.js';
export { DurableJsonFile, fsyncDir, type DurableJsonFileHooks, type DurableJsonFileOptions } from './DurableJsonFile.js';
export { MAX_TASK_ID_LENGTH } from './taskFiles.js';

/** Store selection as it appears in configuration. */
export type TaskStoreConfig = { kind: 'memory' } | { kind: 'lowdb'; dir: string };

/**
 * Builds the configured store. The caller still calls `open()` (and later
 * `close()`): construction does no I/O.
 */
export function createTaskStore(config: TaskStoreConfig): TaskStore {
  switch (config.kind) {
    case 'memory':
      return new MemoryTaskStore();
    case 'lowdb':
      return new LowdbTaskStore({ dir: config.dir });
    default: {
      const unknown: never = config;
      throw new Error(`unknown task store kind ${JSON.stringify((unknown as { kind?: unknown }).kind)}`);
    }
  }
}
