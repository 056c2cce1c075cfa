/**
 * The real PostgreSQL the tests use (127.0.0.1:5432, trust auth, database
 * `test`; override with TASKVISOR_TEST_PG_URL). Each test gets its own schema
 * and drops it afterwards. An unreachable server fails the test with a message
 * saying how to start it: never a silent skip.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const TEST_PG_URL = process.env.TASKVISOR_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Runs one statement on a short-lived connection. */
export async function pgQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(
  sql: string,
  params: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  const client = new pg.Client({ connectionString: TEST_PG_URL, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL is needed by this test and cannot be reached at ${TEST_PG_URL} (${(error as Error).message}). ` +
        'Start it (e.g. `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`) or set TASKVISOR_TEST_PG_URL.',
      { cause: error },
    );
  }
  try {
    return await client.query<R>(sql, params);
  } finally {
    await client.end();
  }
}

/** A fresh schema name (not created: the store creates it); `drop()` removes it with everything in it. */
export async function freshSchema(prefix = 'tv_test'): Promise<{ schema: string; drop: () => Promise<void> }> {
  await pgQuery('SELECT 1');
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
  return { schema, drop: async () => void (await pgQuery(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`)) };
}
