import { randomFillSync } from 'node:crypto';

/** CSPRNG bytes drawn 4 KiB at a time: one `randomBytes(16)` per id cost 2 % of a create's CPU. */
const pool = Buffer.alloc(4096);
/** Next unused byte of {@link pool}; at its end the pool is refilled (each byte is handed out once). */
let next = pool.length;

/**
 * A new task id: 128 bits from the CSPRNG as 32 lowercase hex characters.
 * Unguessable (T-09), header-safe ASCII so `Mcp-Name` never needs the Base64
 * sentinel (T-61), and one case only, so ids stay distinct as file names on
 * case-insensitive file systems.
 */
export function newTaskId(): string {
  if (next + 16 > pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  const id = pool.toString('hex', next, next + 16);
  next += 16;
  return id;
}

/** Task ids this server could have issued: what a store lookup may be asked for. */
export const TASK_ID_PATTERN = /^[A-Za-z0-9_-]{1,200}$/;
