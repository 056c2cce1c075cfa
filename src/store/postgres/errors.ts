/** Messages about a Postgres store: its URL without password, a connection or SQL error as one line. */

/** `postgres://user:secret@host/db` → `postgres://user@host/db`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '(unparseable url)';
  }
}

/** A connection or SQL error as one line: code, message, and what to check. */
export function describePgError(error: unknown): string {
  const e = error as { code?: string; message?: string; errors?: unknown[] };
  if (
    e.code === 'ECONNREFUSED' ||
    (Array.isArray(e.errors) && e.errors.some((inner) => (inner as { code?: string }).code === 'ECONNREFUSED'))
  ) {
    return 'connection refused: is PostgreSQL running and listening there?';
  }
  return `${e.code ? `${e.code} ` : ''}${e.message ?? String(error)}`;
}
