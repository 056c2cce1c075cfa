/**
 * Who is calling (I-7). Every task is bound to the principal that created it;
 * transports resolve one per request: stdio is one local principal, HTTP asks
 * a pluggable authenticator.
 */
export interface Principal {
  /** Stable identifier; tasks store it as their owner. */
  id: string;
  /** OAuth scopes its credential grants (a JWT's `scope`/`scp`, a token file entry's `scopes`): tool policy rules ask for them. */
  scopes?: readonly string[];
  /** Groups it belongs to (a token file entry's `groups`): tool policy rules may name them. */
  groups?: readonly string[];
}

/** What a principal holds when tool policy asks (see `core/toolPolicy.ts`); kept with a task so its steps run with it. */
export type Grants = Pick<Principal, 'scopes' | 'groups'>;

/** The principal of a stdio connection: the local user who started the process. */
export const LOCAL_PRINCIPAL: Principal = { id: 'local' };

/** The principal of HTTP requests when no authenticator is configured. */
export const ANONYMOUS_PRINCIPAL: Principal = { id: 'anonymous' };

/**
 * Resolves the principal of an HTTP request, or `null` to refuse it with 401.
 * The request is the web-standard `Request` the SDK handler receives.
 */
export type Authenticate = (request: Request) => Principal | null | Promise<Principal | null>;
