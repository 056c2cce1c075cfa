/**
 * Credentials of the `sqlite` store: a `credentials` table in a file of its
 * own beside the task database (`credentials.sqlite`), so it neither takes
 * part in the task store's migrations nor waits on its lock, and
 * `taskvisor upstreams auth` can write while the server runs (WAL,
 * `synchronous=FULL`: a put resolves once it is durable).
 */
import type Database from 'better-sqlite3';
import { createFileIfMissing, loadDriver } from '../sqlite/databaseFile.js';
import type { CredentialStore } from './CredentialStore.js';

export class SqliteCredentialStore implements CredentialStore {
  readonly #file: string;
  #db: Database.Database | undefined;

  constructor(file: string) {
    this.#file = file;
  }

  async open(): Promise<void> {
    if (this.#db) return;
    const Driver = await loadDriver();
    await createFileIfMissing(this.#file, (message) => process.stderr.write(`taskvisor: warning: ${message}\n`));
    const db = new Driver(this.#file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    db.exec(
      'CREATE TABLE IF NOT EXISTS credentials (name TEXT PRIMARY KEY, sealed TEXT NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID',
    );
    this.#db = db;
  }

  get(name: string): Promise<string | undefined> {
    return this.#run(
      (db) => (db.prepare('SELECT sealed FROM credentials WHERE name = ?').get(name) as { sealed: string } | undefined)?.sealed,
    );
  }

  put(name: string, sealed: string): Promise<void> {
    return this.#run((db) => {
      db.prepare(
        'INSERT INTO credentials (name, sealed, updated_at) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at',
      ).run(name, sealed, Date.now());
    });
  }

  delete(name: string): Promise<boolean> {
    return this.#run((db) => db.prepare('DELETE FROM credentials WHERE name = ?').run(name).changes > 0);
  }

  take(name: string): Promise<string | undefined> {
    // One statement: of two takers (two processes on the file) only one deletes the row and gets it back.
    return this.#run(
      (db) => (db.prepare('DELETE FROM credentials WHERE name = ? RETURNING sealed').get(name) as { sealed: string } | undefined)?.sealed,
    );
  }

  entries(): Promise<Array<[string, string]>> {
    return this.#run((db) =>
      (db.prepare('SELECT name, sealed FROM credentials').all() as { name: string; sealed: string }[]).map((row): [string, string] => [
        row.name,
        row.sealed,
      ]),
    );
  }

  close(): Promise<void> {
    this.#db?.close();
    this.#db = undefined;
    return Promise.resolve();
  }

  /** `work` on the open database, its exception as a rejection (callers await either way). */
  #run<T>(work: (db: Database.Database) => T): Promise<T> {
    try {
      return Promise.resolve(work(this.#open()));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  #open(): Database.Database {
    if (!this.#db) throw new Error('the credential store is not open');
    return this.#db;
  }
}
