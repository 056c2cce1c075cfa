/**
 * The logical credential records of OAuth upstreams, over the sealed store:
 *
 * - `token/<upstream>/<principal>`: a principal's tokens for one upstream, with
 *   the time they were obtained (so expiry is absolute: RFC 6749 gives
 *   `expires_in` relative to the response);
 * - `client/<upstream>/<redirect hash>`: taskvisor's registration (RFC 7591)
 *   with the upstream's authorization server, shared by every principal and
 *   per redirect URL (the server's callback and the CLI's loopback differ);
 * - `pending/<state>`: an authorization a principal started and has not
 *   finished — single-use (`take`) and expiring;
 * - `pending-of/<upstream>/<principal>`: the state of that principal's one
 *   pending authorization, so a client cannot pile up pending records.
 */
import { createHash } from 'node:crypto';
import type { OAuthDiscoveryState, StoredOAuthClientInformation, StoredOAuthTokens } from '@modelcontextprotocol/client';
import type { SealedCredentials } from '../../store/credentials/SealedCredentials.js';

/** Tokens as stored: what the AS answered, plus when. */
export interface StoredGrant {
  tokens: StoredOAuthTokens;
  /** Epoch ms the tokens were received; `tokens.expires_in` counts from here. */
  obtainedAt: number;
  /** The redirect URL of the registration the tokens were issued to: refresh and revocation use that client. */
  redirectUrl: string;
}

/** An authorization a principal started: everything the callback needs to redeem the code for that principal. */
export interface PendingAuthorization {
  upstream: string;
  principal: string;
  redirectUrl: string;
  codeVerifier: string;
  discoveryState: OAuthDiscoveryState | undefined;
  /** Epoch ms after which the callback refuses it. */
  expiresAt: number;
}

/** Principal ids may hold `/`: names join escaped parts, so two records never share a name. */
const part = (value: string): string => encodeURIComponent(value);

export class OAuthRecords {
  constructor(private readonly sealed: SealedCredentials) {}

  grant(upstream: string, principal: string): Promise<StoredGrant | undefined> {
    return this.sealed.get<StoredGrant>(`token/${part(upstream)}/${part(principal)}`);
  }

  saveGrant(upstream: string, principal: string, grant: StoredGrant): Promise<void> {
    return this.sealed.put(`token/${part(upstream)}/${part(principal)}`, grant);
  }

  deleteGrant(upstream: string, principal: string): Promise<boolean> {
    return this.sealed.delete(`token/${part(upstream)}/${part(principal)}`);
  }

  /** The principals holding a grant for `upstream`. */
  async principalsOf(upstream: string): Promise<string[]> {
    const prefix = `token/${part(upstream)}/`;
    return (await this.sealed.names(prefix)).map((name) => decodeURIComponent(name.slice(prefix.length)));
  }

  client(upstream: string, redirectUrl: string): Promise<StoredOAuthClientInformation | undefined> {
    return this.sealed.get<StoredOAuthClientInformation>(clientName(upstream, redirectUrl));
  }

  saveClient(upstream: string, redirectUrl: string, client: StoredOAuthClientInformation): Promise<void> {
    return this.sealed.put(clientName(upstream, redirectUrl), client);
  }

  deleteClient(upstream: string, redirectUrl: string): Promise<boolean> {
    return this.sealed.delete(clientName(upstream, redirectUrl));
  }

  /** Records `pending` under `state`, replacing (and voiding) the principal's previous pending authorization. */
  async savePending(state: string, pending: PendingAuthorization): Promise<void> {
    const index = `pending-of/${part(pending.upstream)}/${part(pending.principal)}`;
    const previous = await this.sealed.get<string>(index);
    if (previous !== undefined) await this.sealed.delete(`pending/${previous}`);
    await this.sealed.put(`pending/${state}`, pending);
    await this.sealed.put(index, state);
  }

  /** The pending authorization of `state`, removed: a second redemption finds nothing. */
  async takePending(state: string): Promise<PendingAuthorization | undefined> {
    const pending = await this.sealed.take<PendingAuthorization>(`pending/${state}`);
    if (pending) await this.sealed.delete(`pending-of/${part(pending.upstream)}/${part(pending.principal)}`);
    return pending;
  }
}

function clientName(upstream: string, redirectUrl: string): string {
  return `client/${part(upstream)}/${createHash('sha256').update(redirectUrl).digest('hex').slice(0, 32)}`;
}
