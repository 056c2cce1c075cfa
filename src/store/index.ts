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
  TaskRecordDamagedError,
  TaskDamagedError,
  type QuarantinedRecord,
  type TaskListQuery,
  type TaskStore,
  type TaskOwnership,
  type TaskCommand,
  type QueuedTaskCommand,
  type TaskChange,
  type TaskFeedHandlers,
} from './TaskStore.js';
import { definedProps } from '../core/definedProps.js';
export { PostgresTaskStore, POSTGRES_SCHEMA_VERSION, type PostgresTaskStoreOptions } from './PostgresTaskStore.js';
export { DEFAULT_POSTGRES_SCHEMA, DEFAULT_POSTGRES_POOL_SIZE, DEFAULT_LEASE_MS, POSTGRES_SCHEMA_PATTERN } from './postgres/options.js';
export { MemoryTaskStore, type MemoryTaskStoreOptions } from './MemoryTaskStore.js';
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
   * Take an embedded store's exclusive lock on open (default true: one
   * process owns an embedded store). `false` only for read-only views of a
   * store another process may be serving; such a store must not be written,
   * and no store opened so (postgres included) moves a damaged record.
   */
  lock?: boolean;
  /** Called once for each stored record found damaged, with its task id (every store alike). Default: one line on stderr. */
  onCorrupt?: (where: string, error: Error) => void;
}

/**
 * Builds the configured store. The caller still calls `open()` (and later
 * `close()`): construction does no I/O.
 */
export function createTaskStore(config: TaskStoreConfig, options: CreateTaskStoreOptions = {}): TaskStore {
  const extra = { ...(options.lock === false ? { lock: false } : {}), ...(options.onCorrupt ? { onCorrupt: options.onCorrupt } : {}) };
  switch (config.kind) {
    case 'memory':
      return new MemoryTaskStore(options.onCorrupt ? { onCorrupt: options.onCorrupt } : {});
    case 'lowdb':
      return new LowdbTaskStore({ dir: config.dir, ...extra });
    case 'sqlite':
      return new SqliteTaskStore({ file: config.file, ...extra });
    case 'postgres':
      return new PostgresTaskStore({
        url: config.url,
        ...definedProps({ schema: config.schema, poolSize: config.poolSize, leaseMs: config.leaseMs, instanceId: config.instanceId }),
        ...(options.onCorrupt ? { onCorrupt: options.onCorrupt } : {}),
        ...(options.lock === false ? { readOnly: true } : {}),
      });
    default: {
      const unknown: never = config;
      throw new Error(`unknown task store kind ${JSON.stringify((unknown as { kind?: unknown }).kind)}`);
    }
  }
}
