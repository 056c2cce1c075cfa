import { randomBytes } from 'node:crypto';

/**
 * A new task id: 128 bits from the CSPRNG as 32 lowercase hex characters.
 * Unguessable (T-09), header-safe ASCII so `Mcp-Name` never needs the Base64
 * sentinel (T-61), and one case only, so ids stay distinct as file names on
 * case-insensitive file systems.
 */
export function newTaskId(): string {
  return randomBytes(16).toString('hex');
}

/** Task ids this server could have issued: what a store lookup may be asked for. */
export const TASK_ID_PATTERN = /^[A-Za-z0-9_-]{1,200}$/;
