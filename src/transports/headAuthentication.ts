/**
 * The bearer outcome the inbound-body gate (httpInboundGate.ts) reached
 * from a POST's head, kept with the Node request so the handlers behind it
 * (the fast lane, admission.ts) use it instead of verifying the same token
 * again: one verification per request (I-7, T-10) — with a JWT verifier,
 * one signature check instead of two or three.
 *
 * Only the bearer gate's outcome is kept: a custom `authenticate` hook is
 * called by the gate with the head alone, and may read the body when
 * admission calls it with the whole request.
 */
import type { IncomingMessage } from 'node:http';
import type { Principal } from '../core/principal.js';

/** The entry's bearer gate said who this is, or how it refused (a refusal is answered once, by admission). */
export type HeadAuthentication = Principal | Response;

const outcomes = new WeakMap<IncomingMessage, HeadAuthentication>();

/** Keeps the gate's bearer outcome for `req` (gone with the request object). */
export function rememberHeadAuthentication(req: IncomingMessage, outcome: HeadAuthentication): void {
  outcomes.set(req, outcome);
}

/** The gate's bearer outcome for `req`, when the gate authenticated it. */
export function headAuthenticationOf(req: IncomingMessage | undefined): HeadAuthentication | undefined {
  return req === undefined ? undefined : outcomes.get(req);
}
