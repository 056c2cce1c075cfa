/**
 * The owner (principal) of a stored record whose bytes may be damaged,
 * read before anything else of it. A quarantined record keeps its owner so
 * that only that principal learns the id exists and was set aside; every
 * other principal gets what an unknown id gets (I-7, T-14).
 *
 * Read conservatively: from the whole record when it still parses, otherwise
 * only from the record's first two members as every store writes them
 * (`{"taskId":…,"owner":…`, see `recordOf`), and only when the task id there
 * is the expected one. Anything less certain is `undefined`: an owner that
 * cannot be determined is answered as an unknown id to every principal.
 */

/** A JSON string literal (with escapes). */
const STRING = String.raw`"(?:[^"\\]|\\.)*"`;
/** The prefix every record starts with: taskId, then owner. */
const PREFIX = new RegExp(String.raw`^\s*\{\s*"taskId"\s*:\s*(${STRING})\s*,\s*"owner"\s*:\s*(${STRING})`);

/**
 * The owner of `stored` (the record's JSON text, possibly cut short or
 * garbled), or `undefined` when it cannot be told for certain. With
 * `taskId`, bytes naming another task give `undefined`.
 */
export function ownerOfStored(stored: string, taskId?: string): string | undefined {
  try {
    const value: unknown = JSON.parse(stored);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    const record = value as { taskId?: unknown; owner?: unknown };
    if (taskId !== undefined && record.taskId !== taskId) return undefined;
    return typeof record.owner === 'string' ? record.owner : undefined;
  } catch {
    // Not JSON any more: fall through to the prefix.
  }
  const match = PREFIX.exec(stored);
  if (!match) return undefined;
  try {
    const id: unknown = JSON.parse(match[1] as string);
    const owner: unknown = JSON.parse(match[2] as string);
    if (taskId !== undefined && id !== taskId) return undefined;
    return typeof owner === 'string' ? owner : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a quarantined record may be reported as damaged to `principal`:
 * always to an internal caller (`principal` undefined), otherwise only to its
 * known owner. An unknown owner is nobody's: the id stays unknown to every
 * principal (a principal that cannot prove ownership must not learn the id
 * exists, I-7), and operators find it with `taskvisor tasks check`.
 */
export function mayReportDamaged(quarantinedOwner: string | null | undefined, principal: string | undefined): boolean {
  return principal === undefined || (typeof quarantinedOwner === 'string' && quarantinedOwner === principal);
}
