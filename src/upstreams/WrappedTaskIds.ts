/**
 * Task ids of forwarded upstream tasks, wrapped so routing needs no map:
 *
 *   <upstream>.<base64url(upstream task id)>.<mac>
 *
 * `mac` = HMAC-SHA256(secret, upstream ‖ id ‖ principal), first 16 bytes,
 * base64url. Every character is in `[A-Za-z0-9_.-]`: header-safe for
 * `Mcp-Name` (T-61) whatever the upstream's own id looks like. Local ids
 * (`TASK_ID_PATTERN`) never contain a dot, so the shape alone tells the two
 * apart; the MAC binds the id to the principal it was issued to (I-7, T-10):
 * forged, altered and foreign ids unwrap to nothing.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Names an upstream may have: also its part of a wrapped id. */
export const UPSTREAM_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

const WRAPPED = /^([A-Za-z0-9_-]{1,64})\.([A-Za-z0-9_-]{1,1400})\.([A-Za-z0-9_-]{22})$/;

export interface UnwrappedTaskId {
  upstream: string;
  taskId: string;
}

export class WrappedTaskIds {
  constructor(private readonly secret: Buffer) {
    if (secret.length < 32) throw new Error('The wrapped task id secret must be at least 32 bytes');
  }

  /** Whether `taskId` has the shape of a wrapped id (says nothing about its MAC). */
  static looksWrapped(taskId: unknown): taskId is string {
    return typeof taskId === 'string' && WRAPPED.test(taskId);
  }

  wrap(upstream: string, taskId: string, principal: string): string {
    return `${upstream}.${Buffer.from(taskId, 'utf8').toString('base64url')}.${this.mac(upstream, taskId, principal).toString('base64url')}`;
  }

  /** The upstream and its task id, or `undefined` when the id is not one this server issued to `principal`. */
  unwrap(wrapped: string, principal: string): UnwrappedTaskId | undefined {
    const [, upstream, encoded, mac] = WRAPPED.exec(wrapped) ?? [];
    if (upstream === undefined || encoded === undefined || mac === undefined) return undefined;
    const taskId = Buffer.from(encoded, 'base64url').toString('utf8');
    // Canonical encoding only: two spellings of one id must not both verify.
    if (Buffer.from(taskId, 'utf8').toString('base64url') !== encoded) return undefined;
    // Compared as text: 22 base64url characters carry 132 bits for a 128-bit MAC, so decoding would
    // accept several spellings of one MAC (the last character's spare bits).
    const given = Buffer.from(mac, 'ascii');
    const expected = Buffer.from(this.mac(upstream, taskId, principal).toString('base64url'), 'ascii');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    return { upstream, taskId };
  }

  private mac(upstream: string, taskId: string, principal: string): Buffer {
    // Length-prefixed fields: no two (upstream, id, principal) triples share an input.
    const hmac = createHmac('sha256', this.secret);
    for (const part of [upstream, taskId, principal]) {
      const bytes = Buffer.from(part, 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bytes.length);
      hmac.update(length).update(bytes);
    }
    return hmac.digest().subarray(0, 16);
  }
}
