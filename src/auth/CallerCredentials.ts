/**
 * The bearer token each principal last authenticated with, held in memory
 * for upstreams that act as the caller (identity `passthrough` and
 * `tokenExchange`, docs/aggregator.md "Identity"): a forwarded call, a
 * `tasks/*` of a forwarded task and a workflow step of the principal's task
 * use it. Only runtimes with such an upstream keep one.
 *
 * Bounded: at most `maxPrincipals` (least recently authenticated dropped
 * first); a token is dropped at its `expiresAt`, and one without an expiry
 * after `idleMs` without a request using it; a token the verifier refuses
 * after a reload (revocation) is dropped on {@link recheck}. Dropping tells
 * the listeners (per-principal upstream connections close). Never written
 * anywhere, never logged.
 */
import type { BearerCredential } from './CredentialSessions.js';
import { InvalidTokenError, type TokenVerifier } from './TokenVerifier.js';

export interface CallerCredentialsOptions {
  /** Principals held at once. Default 10 000. */
  maxPrincipals?: number;
  /** A token without an expiry is dropped after this long unused (ms). Default 3 600 000 (1 h). */
  idleMs?: number;
  now?: () => number;
}

interface Held {
  credential: BearerCredential;
  seenAt: number;
}

export class CallerCredentials {
  private readonly held = new Map<string, Held>();
  private readonly listeners = new Set<(principal: string) => void>();
  private readonly maxPrincipals: number;
  private readonly idleMs: number;
  private readonly now: () => number;

  constructor(options: CallerCredentialsOptions = {}) {
    this.maxPrincipals = options.maxPrincipals ?? 10_000;
    this.idleMs = options.idleMs ?? 3_600_000;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.held.size;
  }

  /** `principal` just authenticated with `credential`. */
  remember(principal: string, credential: BearerCredential): void {
    this.held.delete(principal);
    this.held.set(principal, { credential: { ...credential }, seenAt: this.now() });
    while (this.held.size > this.maxPrincipals) {
      const oldest = this.held.keys().next().value as string;
      this.drop(oldest);
    }
  }

  /** The principal's valid token, or `undefined` (never authenticated here, expired, revoked, idle). */
  current(principal: string): BearerCredential | undefined {
    const held = this.held.get(principal);
    if (!held) return undefined;
    const now = this.now();
    const expired = held.credential.expiresAt !== undefined ? held.credential.expiresAt <= now : held.seenAt + this.idleMs <= now;
    if (expired) {
      this.drop(principal);
      return undefined;
    }
    return held.credential;
  }

  /** Drops `principal`'s token (signed out, revoked). */
  forget(principal: string): void {
    if (this.held.has(principal)) this.drop(principal);
  }

  /** Calls `listener` with each principal whose token is dropped; returns the unsubscribe function. */
  onForget(listener: (principal: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Verifies every held token again (the verifier's tokens changed); drops the refused ones. */
  async recheck(verifier: TokenVerifier): Promise<void> {
    for (const [principal, held] of [...this.held]) {
      try {
        await verifier.verify(held.credential.token);
      } catch (error) {
        // A verifier that cannot decide (identity provider down) revokes nothing.
        if (error instanceof InvalidTokenError && this.held.get(principal) === held) this.drop(principal);
      }
    }
  }

  private drop(principal: string): void {
    this.held.delete(principal);
    for (const listener of this.listeners) listener(principal);
  }
}
