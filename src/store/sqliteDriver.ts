/**
 * better-sqlite3, for the stores that use it when they open (the sqlite store,
 * and the lock of every embedded store: StoreLock).
 *
 * Loaded with `require`, not `import()`: it is a CommonJS package, and an ES
 * import of it makes Node parse its source for named exports
 * (cjs-module-lexer, compiled on first use) and wrap it in a module record —
 * about 5 ms of a stdio server's cold start for the one value
 * `require` returns as is. Node's require cache keeps it loaded once; a
 * failed load (the addon not built for this Node) is retried on the next call,
 * as the import was.
 */
import { createRequire } from 'node:module';
import type Database from 'better-sqlite3';

/** The better-sqlite3 `Database` class; rejects when the package or its addon does not load. */
export function loadSqliteDriver(): Promise<typeof Database> {
  try {
    return Promise.resolve(createRequire(import.meta.url)('better-sqlite3') as typeof Database);
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
