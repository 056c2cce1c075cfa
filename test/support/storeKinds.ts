/**
 * One factory per store implementation, for suites that must run against
 * every store (memory, lowdb, sqlite, the real PostgreSQL with its own
 * schema). Each harness owns its files or schema and removes them in `cleanup`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LowdbTaskStore, MemoryTaskStore, PostgresTaskStore, SqliteTaskStore, type TaskStore } from '../../src/store/index.js';
import { plantLowdb, plantPostgres, plantSqlite, type PlantedRow } from '../store/planting.js';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';
import { freshSchema, TEST_PG_URL } from './postgres.js';

export const STORE_KINDS = ['memory', 'lowdb', 'sqlite', 'postgres'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

/** Whether a second store made at a site of `kind` sees what the first wrote (known before the site is made). */
export const isDurableKind = (kind: StoreKind): boolean => kind !== 'memory';

export interface StoreSite {
  /** A new, unopened store over this site's data (the same data on every call); damaged records it meets go to `onCorrupt`. */
  make(onCorrupt?: (taskId: string) => void): TaskStore;
  /**
   * Writes `row` as a stored record behind the store's back (`test/store/planting.ts`): a durable site's store
   * must be closed (it holds the lock); a memory site's is planted through the store made last, while open.
   */
  plant: (row: PlantedRow) => Promise<void>;
  /** Whether a second store made here sees what the first wrote (false for memory). */
  durable: boolean;
  /** Removes the site's data; a plain function (no `this`), safe to pass around. */
  cleanup: () => Promise<void>;
}

const reportingTo = (onCorrupt: ((taskId: string) => void) | undefined) => (onCorrupt ? { onCorrupt } : {});

/** A fresh, empty place for a store of `kind`. */
export async function storeSite(kind: StoreKind): Promise<StoreSite> {
  switch (kind) {
    case 'memory': {
      // Not durable: every store made here starts empty. It holds what it is handed: a record that is not one gets in through create.
      let last: MemoryTaskStore | undefined;
      return {
        make: (onCorrupt) => (last = new MemoryTaskStore(reportingTo(onCorrupt))),
        plant: ({ text }) => last!.create(JSON.parse(text) as TaskRecord),
        durable: false,
        cleanup: async () => undefined,
      };
    }
    case 'lowdb':
    case 'sqlite': {
      const dir = await mkdtemp(join(tmpdir(), `taskvisor-faults-${kind}-`));
      const file = join(dir, 'tasks.sqlite');
      return {
        make: (onCorrupt) =>
          kind === 'lowdb'
            ? new LowdbTaskStore({ dir, ...reportingTo(onCorrupt) })
            : new SqliteTaskStore({ file, ...reportingTo(onCorrupt) }),
        plant: (row) => (kind === 'lowdb' ? plantLowdb(dir, row) : plantSqlite(file, row)),
        durable: true,
        cleanup: () => rm(dir, { recursive: true, force: true }),
      };
    }
    case 'postgres': {
      const { schema, drop } = await freshSchema('tv_faults');
      // Reopened under the same instance id: a restart of "the same process".
      const instanceId = `faults-${schema}`;
      return {
        make: (onCorrupt) => new PostgresTaskStore({ url: TEST_PG_URL, schema, instanceId, poolSize: 4, ...reportingTo(onCorrupt) }),
        plant: (row) => plantPostgres(schema, row),
        durable: true,
        cleanup: drop,
      };
    }
  }
}
