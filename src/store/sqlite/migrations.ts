/**
 * The sqlite store's schema: its migrations, in order, and the one function
 * that brings a file up to date (or refuses a file written by a newer
 * taskvisor).
 */
import type Database from 'better-sqlite3';
import { ownerOfStored } from '../../tasks/storedOwner.js';
import { errorMessage } from '../DurableJsonFile.js';

/**
 * Schema migrations, in order: entry `i` brings the schema from version `i`
 * to `i + 1`. Never edit a released migration; append a new one.
 */
export const SQLITE_MIGRATIONS: readonly string[] = [
  // 1: the tasks table and its indexes.
  `
  CREATE TABLE tasks (
    task_id         TEXT PRIMARY KEY NOT NULL,
    owner           TEXT NOT NULL,
    tool            TEXT NOT NULL,
    status          TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    last_updated_at INTEGER NOT NULL,
    ttl_ms          INTEGER,
    -- NULL when ttl_ms is NULL: the task never expires (T-26).
    expires_at      INTEGER GENERATED ALWAYS AS (created_at + ttl_ms) STORED,
    version         INTEGER NOT NULL,
    machine_version INTEGER NOT NULL,
    -- The whole TaskRecord as JSON: the source of truth; the columns above are for queries.
    record          TEXT NOT NULL
  );
  CREATE INDEX tasks_status ON tasks (status);
  CREATE INDEX tasks_expires ON tasks (expires_at, task_id) WHERE expires_at IS NOT NULL;
  CREATE INDEX tasks_owner_created ON tasks (owner, created_at DESC, task_id);
  `,
  // 2: damaged records set aside, kept as stored.
  `
  CREATE TABLE quarantine (
    task_id         TEXT PRIMARY KEY NOT NULL,
    record          TEXT NOT NULL,
    reason          TEXT NOT NULL,
    quarantined_at  INTEGER NOT NULL
  );
  `,
  // 3: a quarantined record keeps its owner, so only that principal learns it was set aside (I-7);
  // NULL when it cannot be told. Rows set aside under schema 2 get it from their bytes (see migrate()).
  `
  ALTER TABLE quarantine ADD COLUMN owner TEXT;
  `,
];

/** Fills in what a migration's SQL cannot: run right after the migration to the keyed version, in the same transaction. */
const AFTER_MIGRATION: Readonly<Record<number, (db: Database.Database) => void>> = {
  3: (db) => {
    const rows = db.prepare<[], { task_id: string; record: string }>('SELECT task_id, record FROM quarantine WHERE owner IS NULL').all();
    const set = db.prepare<[string, string]>('UPDATE quarantine SET owner = ? WHERE task_id = ?');
    for (const row of rows) {
      const owner = ownerOfStored(row.record, row.task_id);
      if (owner !== undefined) set.run(owner, row.task_id);
    }
  },
};

/** The schema version this code writes and reads. */
export const SQLITE_SCHEMA_VERSION = SQLITE_MIGRATIONS.length;

/**
 * Brings the schema to {@link SQLITE_SCHEMA_VERSION} in one IMMEDIATE
 * transaction (so two processes opening a new file cannot both migrate).
 * Refuses a file whose schema is newer than this code knows.
 */
export function migrate(db: Database.Database): void {
  db.transaction(() => {
    db.exec('CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY NOT NULL, value)');
    const stored = db.prepare<[], unknown>(`SELECT value FROM meta WHERE key = 'schema_version'`).pluck().get();
    const current = stored === undefined ? 0 : Number(stored);
    if (!Number.isInteger(current) || current < 0)
      throw new Error(`meta.schema_version is ${JSON.stringify(stored)}, not a version number`);
    if (current > SQLITE_SCHEMA_VERSION) {
      throw new Error(
        `the file has schema version ${current}, but this taskvisor knows only up to schema version ${SQLITE_SCHEMA_VERSION}: it was written by a newer taskvisor (upgrade taskvisor, or use another file)`,
      );
    }
    for (let version = current; version < SQLITE_SCHEMA_VERSION; version++) {
      try {
        db.exec(SQLITE_MIGRATIONS[version] as string);
        AFTER_MIGRATION[version + 1]?.(db);
      } catch (error) {
        throw new Error(
          `migrating the schema from version ${version} to ${version + 1} failed (is this a taskvisor store?): ${errorMessage(error)}`,
          {
            cause: error,
          },
        );
      }
    }
    if (current !== SQLITE_SCHEMA_VERSION) {
      db.prepare(`INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(
        SQLITE_SCHEMA_VERSION,
      );
    }
  }).immediate();
}
