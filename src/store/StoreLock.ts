/**
 * One store, one owner: an exclusive, OS-level lock on an
 * embedded store (a lowdb folder, a sqlite file), taken by `open()` before
 * anything is read or written and released by `close()`. A second process
 * opening the same store is refused with {@link StoreInUseError} instead of
 * running recovery over the first one's live tasks.
 *
 * The lock is SQLite's own file lock (POSIX `fcntl` byte-range locks on Unix,
 * `LockFileEx` on Windows) on a dedicated lock database, held through
 * `locking_mode=EXCLUSIVE` and a write transaction that is never committed.
 * The kernel drops such locks when the process ends, however it ends
 * (`kill -9`, a crash, power loss): a lock is never stale. The PID written
 * next to it only names the holder in the error; it is not the lock.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import type Database from 'better-sqlite3';
import { loadSqliteDriver } from './sqliteDriver.js';

/** The store is locked by another process (or another store object in this one). */
export class StoreInUseError extends Error {
  constructor(
    readonly store: string,
    /** The holder's process id, when it could be read. */
    readonly pid: number | undefined,
  ) {
    super(`store ${store} is in use by ${pid !== undefined ? `process ${pid}` : 'another process'}`);
    this.name = 'StoreInUseError';
  }
}

/** What the holder writes next to the lock (informational: names it in the error). */
interface Holder {
  pid: number;
  host: string;
  since: string;
}

export class StoreLock {
  private constructor(
    private readonly db: Database.Database,
    private readonly holderFile: string,
  ) {}

  /**
   * Takes the lock on `lockFile` (created if missing) or rejects with
   * {@link StoreInUseError} naming `store` at once (never waits).
   */
  static async acquire(lockFile: string, store: string): Promise<StoreLock> {
    const Driver = await loadSqliteDriver();
    const db = new Driver(lockFile, { timeout: 0 });
    try {
      db.pragma('busy_timeout = 0');
      // Nothing is ever written to it: no journal file next to the lock (OFF still creates one on a new file).
      db.pragma('journal_mode = MEMORY');
      // Never hand the lock back after a transaction: SQLite keeps it until the connection closes.
      db.pragma('locking_mode = EXCLUSIVE');
      db.exec('BEGIN EXCLUSIVE');
    } catch (error) {
      db.close();
      if ((error as { code?: string }).code === 'SQLITE_BUSY' || (error as { code?: string }).code === 'SQLITE_LOCKED') {
        throw new StoreInUseError(store, await readHolder(`${lockFile}.pid`));
      }
      throw error;
    }
    const holderFile = `${lockFile}.pid`;
    const holder: Holder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
    await writeFile(holderFile, `${JSON.stringify(holder)}\n`);
    return new StoreLock(db, holderFile);
  }

  /** Releases the lock (the OS does the same if the process dies first). */
  async release(): Promise<void> {
    if (!this.db.open) return;
    // The holder file goes first: once the lock is free another process may write its own.
    await rm(this.holderFile, { force: true });
    this.db.close();
  }
}

async function readHolder(file: string): Promise<number | undefined> {
  try {
    const holder = JSON.parse(await readFile(file, 'utf8')) as Partial<Holder>;
    return typeof holder.pid === 'number' && Number.isInteger(holder.pid) ? holder.pid : undefined;
  } catch {
    return undefined;
  }
}
