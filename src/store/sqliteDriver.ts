/**
 * better-sqlite3, for the stores that use it when they open (the sqlite store,
 * and the lock of every embedded store: StoreLock).
 *
 * Two majors of it are installed, and this Node's one is loaded: 12
 * (`better-sqlite3`) on Node 20, 13 (`better-sqlite3-node22`, an npm alias)
 * on Node 22 and later. 12 wraps its objects in Node's own `ObjectWrap`,
 * whose destructor aborts the process on Node 24.19 and later when the garbage
 * collector frees a statement or database outside JavaScript ("Assertion
 * failed: (env) != nullptr"); 13 is built on Node-API and does not, but needs
 * Node 22 (on Node 20 it crashes as it loads).
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

/** The package name of the better-sqlite3 major this Node loads. */
export const SQLITE_DRIVER_PACKAGE = Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3-node22' : 'better-sqlite3';

/** The better-sqlite3 `Database` class for this Node; throws when the package or its addon does not load. */
export function requireSqliteDriver(): typeof Database {
  return createRequire(import.meta.url)(SQLITE_DRIVER_PACKAGE) as typeof Database;
}

/** The better-sqlite3 `Database` class; rejects when the package or its addon does not load. */
export function loadSqliteDriver(): Promise<typeof Database> {
  try {
    return Promise.resolve(requireSqliteDriver());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
