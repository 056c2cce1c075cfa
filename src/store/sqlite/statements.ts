/**
 * The sqlite store's SQL: the prepared statements over the `tasks` and
 * `quarantine` tables, and the row a record is written as.
 */
import type Database from 'better-sqlite3';
import type { TaskRecord } from '../../tasks/TaskRecord.js';

/** Named parameters of the write statements. */
export interface Row {
  task_id: string;
  owner: string;
  tool: string;
  status: string;
  created_at: number;
  last_updated_at: number;
  ttl_ms: number | null;
  version: number;
  machine_version: number;
  record: string;
}

export interface Statements {
  insert: Database.Statement<[Row]>;
  update: Database.Statement<[Row]>;
  delete: Database.Statement<[string]>;
  get: Database.Statement<[string], string>;
  getOwned: Database.Statement<[string, string], string>;
  nonTerminal: Database.Statement<[], { task_id: string; record: string }>;
  /** One page of one unfinished status after a rowid (params: status, after, limit): a range of the status index. */
  nonTerminalPage: Database.Statement<[string, number, number], { rowid: number; task_id: string; record: string }>;
  expired: Database.Statement<[number, number], string>;
  /** Copies a tasks row into quarantine (params: reason, at, id). */
  quarantine: Database.Statement<[string, number, string]>;
  quarantined: Database.Statement<[string], { reason: string; owner: string | null }>;
  listQuarantined: Database.Statement<
    [],
    { task_id: string; record: string; reason: string; quarantined_at: number; owner: string | null }
  >;
}

export function prepareStatements(db: Database.Database): Statements {
  return {
    insert: db.prepare<[Row]>(
      `INSERT INTO tasks (task_id, owner, tool, status, created_at, last_updated_at, ttl_ms, version, machine_version, record)
       VALUES (@task_id, @owner, @tool, @status, @created_at, @last_updated_at, @ttl_ms, @version, @machine_version, @record)
       ON CONFLICT (task_id) DO NOTHING`,
    ),
    // A task's owner, tool, createdAt and ttlMs are set once at create (the machine never assigns them): their
    // columns, and the two indexes over them, are left alone, as in the PostgreSQL store. Rewriting them cost a
    // third of each update (recovery writes 100k records).
    update: db.prepare<[Row]>(
      `UPDATE tasks SET status = @status, last_updated_at = @last_updated_at, version = @version, machine_version = @machine_version,
         record = @record
       WHERE task_id = @task_id AND version < @version`,
    ),
    delete: db.prepare<[string]>('DELETE FROM tasks WHERE task_id = ?'),
    get: db.prepare<[string], string>('SELECT record FROM tasks WHERE task_id = ?').pluck(),
    getOwned: db.prepare<[string, string], string>('SELECT record FROM tasks WHERE task_id = ? AND owner = ?').pluck(),
    nonTerminal: db.prepare<[], { task_id: string; record: string }>(
      `SELECT task_id, record FROM tasks WHERE status IN ('working', 'input_required')`,
    ),
    nonTerminalPage: db.prepare<[string, number, number], { rowid: number; task_id: string; record: string }>(
      'SELECT rowid, task_id, record FROM tasks WHERE status = ? AND rowid > ? ORDER BY rowid LIMIT ?',
    ),
    expired: db
      .prepare<[number, number], string>('SELECT task_id FROM tasks WHERE expires_at <= ? ORDER BY expires_at, task_id LIMIT ?')
      .pluck(),
    // The owner column was written with the record but is not part of its bytes: it survives their damage.
    quarantine: db.prepare<[string, number, string]>(
      `INSERT OR REPLACE INTO quarantine (task_id, owner, record, reason, quarantined_at) SELECT task_id, owner, record, ?, ? FROM tasks WHERE task_id = ?`,
    ),
    quarantined: db.prepare<[string], { reason: string; owner: string | null }>('SELECT reason, owner FROM quarantine WHERE task_id = ?'),
    listQuarantined: db.prepare<[], { task_id: string; record: string; reason: string; quarantined_at: number; owner: string | null }>(
      'SELECT task_id, record, reason, quarantined_at, owner FROM quarantine ORDER BY quarantined_at, task_id',
    ),
  };
}

/** The row for `record`; throws for fields SQLite could not store faithfully. */
export function rowOf(record: TaskRecord, file: string): Row {
  const fail = (what: string): never => {
    throw new Error(`cannot store task ${JSON.stringify(record.taskId)} in ${file}: ${what}`);
  };
  const finite = (name: keyof TaskRecord): number => {
    const value = record[name];
    return typeof value === 'number' && Number.isFinite(value) ? value : fail(`${name} is not a finite number`);
  };
  const text = (name: keyof TaskRecord): string => {
    const value = record[name];
    return typeof value === 'string' ? value : fail(`${name} is not a string`);
  };
  const ttl = record.ttlMs;
  if (ttl !== null && (typeof ttl !== 'number' || !Number.isFinite(ttl))) fail('ttlMs is neither a finite number nor null');
  return {
    task_id: record.taskId,
    owner: text('owner'),
    tool: text('tool'),
    status: text('status'),
    created_at: finite('createdAt'),
    last_updated_at: finite('lastUpdatedAt'),
    ttl_ms: ttl,
    version: finite('version'),
    machine_version: finite('machineVersion'),
    record: JSON.stringify(record),
  };
}

/** A listing row: the id and the record as stored. */
export interface RecordRow {
  task_id: string;
  record: string;
}

/** `SELECT … FROM tasks` for a list query, newest first: by owner (index on `(owner, created_at)`) and/or statuses, then a limit. */
export function listStatementSql(byOwner: boolean, statusCount: number | undefined): string {
  const where: string[] = [];
  if (byOwner) where.push('owner = ?');
  if (statusCount !== undefined) where.push(`status IN (${Array.from({ length: statusCount }, () => '?').join(', ')})`);
  return `SELECT task_id, record FROM tasks ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, task_id LIMIT ?`;
}
