/**
 * Task persistence: the {@link TaskStore} port, its implementations and a
 * factory choosing one from configuration.
 */
import { LowdbTaskStore } from './LowdbTaskStore.js';
import { MemoryTaskStore } from './MemoryTaskStore.js';
import { SqliteTaskStore } from './SqliteTaskStore.js';
import { PostgresTaskStore } from './PostgresTaskStore.js';
import type { TaskStore } from './TaskStore.js';

export {
  TaskExistsError,
  TaskFencedError,
  type TaskListQuery,
  type TaskStore,
  type TaskOwnership,
  type TaskCommand,
  type QueuedTaskCommand,
  type TaskChange,
  type TaskFeedHandlers,
} from './TaskStore.js';
export {
  PostgresTaskStore,
  DEFAULT_POSTGRES_SCHEMA,
  DEFAULT_POSTGRES_POOL_SIZE,
  DEFAULT_LEASE_MS,
  POSTGRES_SCHEMA_PATTERN,
  POSTGRES_SCHEMA_VERSION,
  type PostgresTaskStoreOptions,
} from './PostgresTaskStore.js';
export { MemoryTaskStore } from './MemoryTaskStore.js';
export { LowdbTaskStore, type LowdbTaskStoreOptions } from './LowdbTaskStore.js';
export { SqliteTaskStore, DEFAULT_SQLITE_FILE, SQLITE_SCHEMA_VERSION, type SqliteTaskStoreOptions } from './SqliteTaskStore.js';
export { DurableJsonFile, fsyncDir, type DurableJsonFileHooks, type DurableJsonFileOptions } from './DurableJsonFile.js';
export { MAX_TASK_ID_LENGTH } from './taskFiles.js';
export { StoreInUseError } from './StoreLock.js';

/** Store selection as it appears in configuration. */
export type TaskStoreConfig =
  | { kind: 'memory' }
  | { kind: 'lowdb'; dir: string }
  | { kind: 'sqlite'; file: string }
  | { kind: 'postgres'; url: string; schema?: string; poolSize?: number; leaseMs?: number; instanceId?: string };

/** How {@link createTaskStore} builds a store beyond its configuration. */
export interface CreateTaskStoreOptions {
  /**
   * Take an embedded store's exclusive lock on open (default true, issue 13
   * item 2). `false` only for read-only views of a store another process may
   * be serving; such a store must not be written.
   */
  lock?: boolean;
}

/**
 * Builds the configured store. The caller still calls `open()` (and later
 * `close()`): construction does no I/O.
 */
export function createTaskStore(config: TaskStoreConfig, options: CreateTaskStoreOptions = {}): TaskStore {
  const lock = options.lock === false ? { lock: false } : {};
  switch (config.kind) {
    case 'memory':
      return new MemoryTaskStore();
    case 'lowdb':
      return new LowdbTaskStore({ dir: config.dir, ...lock });
    case 'sqlite':
      return new SqliteTaskStore({ file: config.file, ...lock });
    case 'postgres':
      return new PostgresTaskStore({
        url: config.url,
        ...(config.schema !== undefined ? { schema: config.schema } : {}),
        ...(config.poolSize !== undefined ? { poolSize: config.poolSize } : {}),
        ...(config.leaseMs !== undefined ? { leaseMs: config.leaseMs } : {}),
        ...(config.instanceId !== undefined ? { instanceId: config.instanceId } : {}),
      });
    default: {
      const unknown: never = config;
      throw new Error(`unknown task store kind ${JSON.stringify((unknown as { kind?: unknown }).kind)}`);
    }
  }
}
