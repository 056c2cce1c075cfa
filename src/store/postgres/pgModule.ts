/**
 * `pg`, imported on first use: a server whose store is not
 * PostgreSQL never loads the driver, which keeps `serve --stdio` quick to
 * answer its first request.
 */
import type pg from 'pg';

let loading: Promise<typeof pg> | undefined;

/** The `pg` module (loaded once). */
export function loadPg(): Promise<typeof pg> {
  return (loading ??= import('pg').then((module) => module.default));
}

/** `pg.escapeIdentifier` without loading pg: the name in double quotes, inner quotes doubled. */
export function escapeIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
