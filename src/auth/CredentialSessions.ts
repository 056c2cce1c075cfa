/**
 * Long-lived sessions opened with a bearer token — WebSocket connections and
 * SSE listen streams — and what ends them when the token stops being valid.
 * A request is authenticated once, at its start; a connection
 * lives on, so without this a token removed from the token file (and
 * SIGHUP) or a JWT past its `exp` kept calling tools on an open WebSocket.
 *
 * - Expiry: a token whose verifier reported `expiresAt` ends its sessions
 *   then, with the reason "credentials expired".
 * - Revocation: when the verifier says its tokens changed (`onChange`, e.g.
 *   a token file reloaded), every distinct token with open sessions is
 *   verified again; a refused one ends its sessions with "credentials
 *   revoked". A verifier that cannot decide (503 case) ends nothing.
 *
 * Tokens are kept in memory only while a session uses them, never logged.
 */
import type { Logger } from '../runtime/Logger.js';
import { InvalidTokenError, type TokenVerifier } from './TokenVerifier.js';

/** What a session was opened with. */
export interface BearerCredential {
  token: string;
  /** Epoch ms after which the token is no longer valid. */
  expiresAt?: number;
}

interface Session {
  principal: string;
  credential: BearerCredential;
  end: (reason: string) => void;
  timer?: NodeJS.Timeout;
}

/** The longest a timer waits in one step. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const REVOKED_REASON = 'credentials revoked';
export const EXPIRED_REASON = 'credentials expired';

export class CredentialSessions {
  private readonly sessions = new Set<Session>();
  private readonly unsubscribe: (() => void) | undefined;

  constructor(
    private readonly verifier: TokenVerifier,
    private readonly logger: Logger,
  ) {
    this.unsubscribe = verifier.onChange?.(() => void this.recheck());
  }

  /** Open sessions. */
  get size(): number {
    return this.sessions.size;
  }

  /**
   * Tracks a session of `principal` opened with `credential`; `end(reason)`
   * closes it. Returns the function to call when the session ends otherwise.
   */
  track(principal: string, credential: BearerCredential, end: (reason: string) => void): () => void {
    const session: Session = { principal, credential, end };
    this.sessions.add(session);
    if (credential.expiresAt !== undefined) this.armExpiry(session);
    return () => this.forget(session);
  }

  /** Verifies every token with open sessions again; ends the sessions of refused ones. Resolves how many ended. */
  async recheck(): Promise<number> {
    const byToken = new Map<string, Session[]>();
    for (const session of this.sessions) {
      const list = byToken.get(session.credential.token) ?? [];
      list.push(session);
      byToken.set(session.credential.token, list);
    }
    let ended = 0;
    for (const [token, sessions] of byToken) {
      try {
        await this.verifier.verify(token);
      } catch (error) {
        if (!(error instanceof InvalidTokenError)) continue; // cannot decide now: leave the sessions alone
        for (const session of sessions) {
          if (!this.sessions.has(session)) continue;
          ended++;
          this.finish(session, REVOKED_REASON);
        }
      }
    }
    return ended;
  }

  /** Stops watching (the listener is closing); sessions are not ended. */
  close(): void {
    this.unsubscribe?.();
    for (const session of this.sessions) clearTimeout(session.timer);
    this.sessions.clear();
  }

  private armExpiry(session: Session): void {
    const wait = session.credential.expiresAt! - Date.now();
    if (wait <= 0) {
      this.finish(session, EXPIRED_REASON);
      return;
    }
    session.timer = setTimeout(
      () => {
        if (!this.sessions.has(session)) return;
        if (Date.now() >= session.credential.expiresAt!) this.finish(session, EXPIRED_REASON);
        else this.armExpiry(session);
      },
      Math.min(wait, MAX_TIMER_MS),
    );
    session.timer.unref();
  }

  private finish(session: Session, reason: string): void {
    this.forget(session);
    this.logger.info(`ending a session of ${session.principal}: ${reason}`);
    try {
      session.end(reason);
    } catch (error) {
      this.logger.error('ending a session failed', error);
    }
  }

  private forget(session: Session): void {
    clearTimeout(session.timer);
    this.sessions.delete(session);
  }
}
