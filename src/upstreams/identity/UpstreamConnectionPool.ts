/**
 * Per-principal connections to one upstream whose identity mode is not
 * `static`: calls of principal P go over a connection (SDK client +
 * transport) opened for (upstream, P), so the upstream sees P, not
 * taskvisor. Connections open lazily on P's first use and are bounded:
 *
 * - at most `maxConnections` per upstream; a new principal beyond that
 *   evicts the least recently used connection that is not busy (no request
 *   or listen in flight), and is refused with a stable, retryable error when
 *   every one is busy;
 * - a connection unused for `idleMs` (and not busy) is closed;
 * - a principal's connection closes when its credential is revoked or
 *   expires ({@link closePrincipal}), and all close on shutdown.
 *
 * Memory is bounded by `maxConnections` × the cost of one SDK client (a few
 * KB plus its in-flight requests). The `static` mode keeps the one shared
 * connection the upstream actor opens; this pool is not used for it.
 */
import type { Principal } from '../../core/principal.js';
import type { UpstreamConnectionAuth, UpstreamCredentialSource } from './UpstreamCredentialSource.js';

/** What the pool needs of a connection (an `UpstreamConnection`). */
export interface PooledConnection {
  readonly isOpen: boolean;
  /** A request or listen is in flight: not closed for idleness nor evicted. */
  readonly busy: boolean;
  close(): Promise<void>;
}

/** Bounds of one upstream's per-principal connections (config `upstreams[].connections`). */
export interface ConnectionPoolLimits {
  /** Connections kept open at once. Default 64. */
  maxConnections: number;
  /** A connection unused this long (ms) is closed. Default 300 000 (5 min). */
  idleMs: number;
}

export const DEFAULT_POOL_LIMITS: ConnectionPoolLimits = { maxConnections: 64, idleMs: 300_000 };

/** Every per-principal connection of the upstream is busy and the pool is full: retry later. */
export class UpstreamPoolFullError extends Error {
  constructor(readonly upstream: string) {
    super(`Upstream ${upstream} has too many principals connected right now; retry later`);
    this.name = 'UpstreamPoolFullError';
  }
}

export interface UpstreamConnectionPoolOptions<C extends PooledConnection> {
  upstream: string;
  credentials: UpstreamCredentialSource;
  /** Opens (connects) a connection with `auth`; rejects when it cannot. */
  open(auth: UpstreamConnectionAuth, principal: Principal): Promise<C>;
  limits?: Partial<ConnectionPoolLimits>;
  now?: () => number;
}

interface Entry<C> {
  auth: UpstreamConnectionAuth;
  opening: Promise<C>;
  connection: C | undefined;
  lastUsed: number;
}

export class UpstreamConnectionPool<C extends PooledConnection> {
  private readonly entries = new Map<string, Entry<C>>();
  private readonly limits: ConnectionPoolLimits;
  private readonly now: () => number;
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: UpstreamConnectionPoolOptions<C>) {
    this.limits = { ...DEFAULT_POOL_LIMITS, ...(options.limits ?? {}) };
    if (!(this.limits.maxConnections >= 1)) throw new RangeError('maxConnections must be at least 1');
    if (!(this.limits.idleMs >= 1)) throw new RangeError('idleMs must be at least 1');
    this.now = options.now ?? Date.now;
  }

  /** Open connections (and ones being opened). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * The connection of `principal`: its credentials are asked first (an
   * unauthorized principal is refused before anything is sent), then its
   * open connection is reused, or one is opened.
   */
  async acquire(principal: Principal): Promise<C> {
    if (this.closed) throw new Error(`the connections to upstream ${this.options.upstream} are closed`);
    const auth = await this.options.credentials.connectionAuth(this.options.upstream, principal);
    const known = this.entries.get(principal.id);
    if (known && sameAuth(known.auth, auth) && (known.connection === undefined || known.connection.isOpen)) {
      this.touch(principal.id, known);
      return known.opening;
    }
    if (known) this.drop(principal.id, known);
    this.makeRoom();
    const entry: Entry<C> = { auth, opening: this.options.open(auth, principal), connection: undefined, lastUsed: this.now() };
    this.entries.set(principal.id, entry);
    this.armSweeper();
    try {
      entry.connection = await entry.opening;
    } catch (error) {
      if (this.entries.get(principal.id) === entry) this.entries.delete(principal.id);
      throw error;
    }
    // Closed or replaced while it was opening: not kept.
    if (this.closed || this.entries.get(principal.id) !== entry) {
      void entry.connection.close();
      throw new Error(`the connection of upstream ${this.options.upstream} was closed while opening`);
    }
    return entry.connection;
  }

  /** `principal`'s open connection, without asking for credentials or opening one. */
  peek(principal: string): C | undefined {
    const connection = this.entries.get(principal)?.connection;
    return connection?.isOpen ? connection : undefined;
  }

  /** Closes `principal`'s connection (its credential was revoked or expired). */
  closePrincipal(principal: string): void {
    const entry = this.entries.get(principal);
    if (entry) this.drop(principal, entry);
  }

  /** Closes connections unused for `idleMs` that are not busy; resolves how many closed. */
  sweep(): number {
    const cutoff = this.now() - this.limits.idleMs;
    let closed = 0;
    for (const [principal, entry] of this.entries) {
      const connection = entry.connection;
      if (connection && !connection.isOpen) {
        this.entries.delete(principal);
        continue;
      }
      if (entry.lastUsed <= cutoff && connection && !connection.busy) {
        this.drop(principal, entry);
        closed++;
      }
    }
    if (this.entries.size === 0) this.stopSweeper();
    return closed;
  }

  /** Closes every connection; the pool takes no more. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopSweeper();
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map((entry) => entry.opening.then((connection) => connection.close()).catch(() => undefined)));
  }

  private touch(principal: string, entry: Entry<C>): void {
    entry.lastUsed = this.now();
    // Map order is the LRU order: most recently used last.
    this.entries.delete(principal);
    this.entries.set(principal, entry);
  }

  /** Below the bound before a new connection: closed ones go, then the least recently used idle one. */
  private makeRoom(): void {
    if (this.entries.size < this.limits.maxConnections) return;
    for (const [principal, entry] of this.entries) {
      if (entry.connection && !entry.connection.isOpen) this.entries.delete(principal);
    }
    if (this.entries.size < this.limits.maxConnections) return;
    for (const [principal, entry] of this.entries) {
      if (entry.connection && !entry.connection.busy) {
        this.drop(principal, entry);
        return;
      }
    }
    throw new UpstreamPoolFullError(this.options.upstream);
  }

  private drop(principal: string, entry: Entry<C>): void {
    if (this.entries.get(principal) === entry) this.entries.delete(principal);
    // An open connection is closed now (nothing more goes out on it); one still opening once it is.
    const closing = entry.connection ? entry.connection.close() : entry.opening.then((connection) => connection.close());
    void closing.catch(() => undefined);
  }

  private armSweeper(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => this.sweep(), Math.max(1_000, Math.min(60_000, Math.floor(this.limits.idleMs / 2))));
    this.sweeper.unref();
  }

  private stopSweeper(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}

/** The same headers and the same auth provider object: the open connection still acts as the principal asked. */
function sameAuth(a: UpstreamConnectionAuth, b: UpstreamConnectionAuth): boolean {
  if (a.authProvider !== b.authProvider) return false;
  const left = Object.entries(a.headers ?? {});
  const right = b.headers ?? {};
  return left.length === Object.keys(right).length && left.every(([name, value]) => right[name] === value);
}
