/**
 * One factory per store implementation, for suites that must run against
 * every store (memory, lowdb, sqlite, the real PostgreSQL with its own
 * schema). Each harness owns its files or schema and removes them in `cleanup`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LowdbTaskStore, MemoryTaskStore, PostgresTaskStore, SqliteTaskStore, type TaskStore } from '../../src/store/index.js';
import { freshSchema, TEST_PG_URL } from './postgres.js';

export const STORE_KINDS = ['memory', 'lowdb', 'sqlite', 'postgres'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

export interface StoreSite {
  /** A new, unopened store over this site's data (the same data on every call). */
  make(): TaskStore;
  /** Whether a second store made here sees what the first wrote (false for memory). */
  durable: boolean;
  /** Removes the site's data; a plain function (no `this`), safe to pass around. */
  cleanup: () => Promise<void>;
}

/** A fresh, empty place for a store of `kind`. */
export async function storeSite(kind: StoreKind): Promise<StoreSite> {
  switch (kind) {
    case 'memory':
      // Not durable: every store made here starts empty.
      return { make: () => new MemoryTaskStore(), durable: false, cleanup: async () => undefined };
    case 'lowdb':
    case 'sqlite': {
      const dir = await mkdtemp(join(tmpdir(), `taskvisor-faults-${kind}-`));
      return {
        make: () => (kind === 'lowdb' ? new LowdbTaskStore({ dir }) : new SqliteTaskStore({ file: join(dir, 'tasks.sqlite') })),
        durable: true,
        cleanup: () => rm(dir, { recursive: true, force: true }),
      };
    }
    case 'postgres': {
      const { schema, drop } = await freshSchema('tv_faults');
      // Reopened under the same instance id: a restart of "the same process".
      const instanceId = `faults-${schema}`;
      return { make: () => new PostgresTaskStore({ url: TEST_PG_URL, schema, instanceId, poolSize: 4 }), durable: true, cleanup: drop };
    }
  }
}
