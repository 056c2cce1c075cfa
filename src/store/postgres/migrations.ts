/**
 * The Postgres store's schema: versioned migrations applied once, under an
 * advisory lock, however many instances start at the same time.
 */
import type pg from 'pg';
import { ownerOfStored } from '../../tasks/storedOwner.js';
import { escapeIdentifier } from './pgModule.js';

/**
 * Versioned migrations: entry `i` brings the schema from version `i` to
 * `i + 1`. Run under a transaction-level advisory lock, so instances starting
 * at the same time migrate once. Never edit a released one; append.
 * `$S` stands for the quoted schema name.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE $S.tasks (
    task_id         text COLLATE "C" PRIMARY KEY,
    owner           text NOT NULL,
    tool            text NOT NULL,
    status          text NOT NULL,
    created_at      bigint NOT NULL,
    last_updated_at bigint NOT NULL,
    ttl_ms          bigint,
    expires_at      bigint GENERATED ALWAYS AS (created_at + ttl_ms) STORED,
    version         integer NOT NULL,
    machine_version integer NOT NULL,
    -- The whole TaskRecord as JSON text: the source of truth; the columns above are for queries.
    record          text NOT NULL,
    -- Instance running the task and the fencing token of its claim.
    owner_instance  text,
    fencing_token   bigint NOT NULL DEFAULT 1
  );
  CREATE INDEX tasks_unfinished_by_instance ON $S.tasks (owner_instance) WHERE status IN ('working', 'input_required');
  CREATE INDEX tasks_status ON $S.tasks (status);
  CREATE INDEX tasks_expires ON $S.tasks (expires_at, task_id) WHERE expires_at IS NOT NULL;
  CREATE INDEX tasks_owner_created ON $S.tasks (owner, created_at DESC, task_id);
  CREATE TABLE $S.instances (
    instance_id      text PRIMARY KEY,
    started_at       timestamptz NOT NULL DEFAULT now(),
    lease_expires_at timestamptz NOT NULL
  );
  CREATE INDEX instances_lease ON $S.instances (lease_expires_at);
  CREATE TABLE $S.task_commands (
    id              bigserial PRIMARY KEY,
    task_id         text COLLATE "C" NOT NULL,
    target_instance text NOT NULL,
    command         text NOT NULL
  );
  CREATE INDEX task_commands_target ON $S.task_commands (target_instance, id);
  CREATE INDEX task_commands_task ON $S.task_commands (task_id);
  CREATE FUNCTION $S.notify_task_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    PERFORM pg_notify(TG_TABLE_SCHEMA || '.tasks', NEW.task_id || ' ' || NEW.version || ' ' || coalesce(NEW.owner_instance, ''));
    RETURN NULL;
  END $fn$;
  CREATE TRIGGER tasks_changed AFTER UPDATE ON $S.tasks FOR EACH ROW EXECUTE FUNCTION $S.notify_task_change();
  `,
  // 2: damaged records set aside, kept as stored.
  `
  CREATE TABLE $S.quarantine (
    task_id        text COLLATE "C" PRIMARY KEY,
    record         text NOT NULL,
    reason         text NOT NULL,
    quarantined_at bigint NOT NULL
  );
  `,
  // 3: a quarantined record keeps its owner, so only that principal learns it was set aside (I-7: a foreign id answers as an unknown one);
  // NULL when it cannot be told. Rows set aside under version 2 get it from their bytes (AFTER_MIGRATION).
  `
  ALTER TABLE $S.quarantine ADD COLUMN owner text;
  `,
  // 4: start-up recovery reads unfinished tasks in keyset pages by id: one index range per page,
  // never an OFFSET, and finished rows (most of a large table) are not in the index at all.
  `
  CREATE INDEX tasks_unfinished_by_id ON $S.tasks (task_id) WHERE status IN ('working', 'input_required');
  `,
];

/** Fills in what a migration's SQL cannot: run right after the migration to the keyed version, in the same transaction. */
const AFTER_MIGRATION: Readonly<Record<number, (client: pg.PoolClient, q: string) => Promise<void>>> = {
  3: async (client, q) => {
    const rows = await client.query<{ task_id: string; record: string }>(`SELECT task_id, record FROM ${q}.quarantine WHERE owner IS NULL`);
    for (const row of rows.rows) {
      const owner = ownerOfStored(row.record, row.task_id);
      if (owner !== undefined) await client.query(`UPDATE ${q}.quarantine SET owner = $1 WHERE task_id = $2`, [owner, row.task_id]);
    }
  },
};

/** The schema version this code writes and reads. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

/** Creates the schema if missing and applies pending migrations, once, however many instances start at once. */
export async function migrate(pool: pg.Pool, schema: string): Promise<void> {
  const q = escapeIdentifier(schema);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // Serializes migrations of this schema across instances (released at COMMIT/ROLLBACK).
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('taskvisor migrate ' || $1))`, [schema]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${q}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${q}.schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const applied = await client.query<{ version: number | null }>(`SELECT max(version) AS version FROM ${q}.schema_migrations`);
    const current = applied.rows[0]?.version ?? 0;
    if (current > MIGRATIONS.length) {
      throw new Error(
        `schema ${schema} is at version ${current}, newer than this taskvisor understands (${MIGRATIONS.length}): upgrade taskvisor`,
      );
    }
    for (let version = current; version < MIGRATIONS.length; version++) {
      await client.query(MIGRATIONS[version]!.replaceAll('$S', q));
      await AFTER_MIGRATION[version + 1]?.(client, q);
      await client.query(`INSERT INTO ${q}.schema_migrations (version) VALUES ($1)`, [version + 1]);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
