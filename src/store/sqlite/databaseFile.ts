/**
 * The sqlite store's file: created private and durable before any record in
 * it is acknowledged, and the native driver loaded only when a sqlite store
 * opens (using another store never needs it).
 */
import { constants as fsConstants } from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { errorCode, errorMessage, fsyncDir } from '../DurableJsonFile.js';
import { ensurePrivateDir } from '../privateDir.js';
import { loadSqliteDriver } from '../sqliteDriver.js';

let driver: Promise<typeof Database> | undefined;

/** Loads better-sqlite3 once; a failure (addon not built for this Node) says what is missing. */
export function loadDriver(): Promise<typeof Database> {
  driver ??= loadSqliteDriver().catch((error: unknown) => {
    driver = undefined;
    throw new Error(`the sqlite store needs the better-sqlite3 package, which did not load: ${errorMessage(error)}`, { cause: error });
  });
  return driver;
}

/**
 * Creates `file` empty with mode 0600 (SQLite gives its -wal and -shm files
 * the same mode) and its missing parent folders, and makes the new entries
 * durable before any record in them is acknowledged (I-1).
 */
export async function createFileIfMissing(file: string, warn: (message: string) => void): Promise<void> {
  const folder = dirname(file);
  // 0700 when created; an existing folder open to other users is reported.
  const firstCreated = await ensurePrivateDir(folder, warn);
  let handle;
  try {
    handle = await openFile(file, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o600);
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return;
    throw error;
  }
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  const existing = firstCreated === undefined ? folder : dirname(firstCreated);
  for (let dir = folder; ; dir = dirname(dir)) {
    await fsyncDir(dir);
    if (dir === existing || dir === dirname(dir)) break;
  }
}
