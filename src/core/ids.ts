import { randomBytes } from 'node:crypto';

/**
 * A new task id: 128 bits from the CSPRNG, base64url (22 characters).
 * Unguessable (T-09) and header-safe ASCII, so `Mcp-Name` never needs the
 * Base64 sentinel (T-61).
 */
export function newTaskId(): string {
  return randomBytes(16).toString('base64url');
}

/** Task ids this server could have issued: what a store lookup may be asked for. */
export const TASK_ID_PATTERN = /^[A-Za-z0-9_-]{1,200}$/;
