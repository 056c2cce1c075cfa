/**
 * Writes raw bytes as a task's stored record behind a store's back, the way
 * damage arrives (a crash, a bad migration, a hand edit): for the contract's
 * damaged-record case, which plants the same bytes in every store.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { requireSqliteDriver } from '../../src/store/sqliteDriver.js';
import { locateTask } from '../../src/store/taskFiles.js';
import { pgQuery } from '../support/postgres.js';

/** better-sqlite3 as the stores load it (the major this Node runs). */
const Database = requireSqliteDriver();

/** The row's own columns, which a store fills from the record when it writes it (damage leaves them intact). */
export interface PlantedRow {
  taskId: string;
  owner: string;
  text: string;
}

/** lowdb: the task's file (the store must be closed: it holds the folder's lock). */
export async function plantLowdb(dir: string, { taskId, text }: PlantedRow): Promise<void> {
  const file = locateTask(join(dir, 'tasks'), taskId)!.file;
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, text);
}

/** sqlite: a `tasks` row (the store must be closed: it holds the file's lock). */
export function plantSqlite(file: string, { taskId, owner, text }: PlantedRow): Promise<void> {
  const db = new Database(file);
  try {
    db.prepare(
      `INSERT INTO tasks (task_id, owner, tool, status, created_at, last_updated_at, ttl_ms, version, machine_version, record)
       VALUES (?, ?, 'slow_echo', 'working', ?, ?, NULL, 1, 1, ?)`,
    ).run(taskId, owner, Date.now(), Date.now(), text);
  } finally {
    db.close();
  }
  return Promise.resolve();
}

/** postgres: a `tasks` row in `schema`. */
export async function plantPostgres(schema: string, { taskId, owner, text }: PlantedRow): Promise<void> {
  await pgQuery(
    `INSERT INTO "${schema}".tasks (task_id, owner, tool, status, created_at, last_updated_at, ttl_ms, version, machine_version, record)
     VALUES ($1, $2, 'slow_echo', 'working', $3, $3, NULL, 1, 1, $4)`,
    [taskId, owner, Date.now(), text],
  );
}
