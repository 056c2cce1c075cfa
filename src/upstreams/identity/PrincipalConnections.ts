/**
 * The per-principal connections of every upstream that acts as the caller
 * (identity other than `static`): one {@link UpstreamConnectionPool} each,
 * with its {@link UpstreamCredentialSource} (passthrough, token exchange, or
 * one given by the embedder, e.g. per-principal OAuth). A principal whose
 * caller token is dropped (expired, revoked) loses its connections.
 */
import type { CallerCredentials } from '../../auth/CallerCredentials.js';
import type { Logger } from '../../runtime/Logger.js';
import type { CachedDiscovery } from '../RuntimeStateFile.js';
import type { UpstreamConnection } from '../UpstreamConnection.js';
import type { UpstreamSpec } from '../UpstreamSpec.js';
import { PassthroughCredentials } from './PassthroughCredentials.js';
import { TokenExchangeCredentials } from './TokenExchangeCredentials.js';
import { UpstreamConnectionPool } from './UpstreamConnectionPool.js';
import type { UpstreamConnectionAuth, UpstreamCredentialSource } from './UpstreamCredentialSource.js';
import { actsAsCaller } from './UpstreamIdentity.js';

export interface PrincipalConnectionsOptions {
  specs: Iterable<UpstreamSpec>;
  /** The callers' bearer tokens (passthrough, tokenExchange). */
  callers?: CallerCredentials;
  /** Credential sources by upstream name, used instead of the built-in ones (e.g. per-principal OAuth). */
  sources?: Readonly<Record<string, UpstreamCredentialSource>>;
  /** The upstream's cached discovery verdict, so a principal's connection needs no era probe. */
  discovery(upstream: string): CachedDiscovery | undefined;
  logger: Logger;
}

export class PrincipalConnections {
  private readonly pools = new Map<string, UpstreamConnectionPool<UpstreamConnection>>();
  private readonly unsubscribe: (() => void) | undefined;

  constructor(options: PrincipalConnectionsOptions) {
    for (const spec of options.specs) {
      const given = options.sources?.[spec.name];
      if (!given && spec.identity?.mode === 'oauth')
        throw new Error(
          `Upstream ${spec.name}: identity oauth needs its OAuth authority as credential source (runtime option upstreamCredentials)`,
        );
      if (!given && !actsAsCaller(spec.identity)) continue;
      if (spec.type !== 'streamable-http')
        throw new Error(`Upstream ${spec.name}: identity ${spec.identity?.mode ?? 'per principal'} needs type streamable-http`);
      const credentials = given ?? builtInSource(spec, options);
      this.pools.set(
        spec.name,
        new UpstreamConnectionPool({
          upstream: spec.name,
          credentials,
          open: (auth) => openConnection(spec, auth, options),
          ...(spec.connections ? { limits: spec.connections } : {}),
        }),
      );
    }
    this.unsubscribe = options.callers?.onForget((principal) => {
      for (const pool of this.pools.values()) pool.closePrincipal(principal);
    });
  }

  /** Whether calls to `upstream` go over per-principal connections. */
  has(upstream: string): boolean {
    return this.pools.has(upstream);
  }

  /** `principal`'s connection to `upstream` (opened now if need be); throws the identity errors (identityErrors.ts). */
  acquire(upstream: string, principal: string): Promise<UpstreamConnection> {
    return this.pools.get(upstream)!.acquire({ id: principal });
  }

  /** `principal`'s open connection to `upstream`, without opening one. */
  peek(upstream: string, principal: string): UpstreamConnection | undefined {
    return this.pools.get(upstream)?.peek(principal);
  }

  /** Open per-principal connections of `upstream`. */
  size(upstream: string): number {
    return this.pools.get(upstream)?.size ?? 0;
  }

  async close(): Promise<void> {
    this.unsubscribe?.();
    await Promise.all([...this.pools.values()].map((pool) => pool.close()));
  }
}

async function openConnection(
  spec: UpstreamSpec,
  auth: UpstreamConnectionAuth,
  options: PrincipalConnectionsOptions,
): Promise<UpstreamConnection> {
  // Loaded on first use, like the shared connections (UpstreamManager).
  const { UpstreamConnection } = await import('../UpstreamConnection.js');
  const connection = new UpstreamConnection(spec, options.logger, auth);
  try {
    await connection.open(options.discovery(spec.name));
  } catch (error) {
    await connection.close();
    throw error;
  }
  return connection;
}

function builtInSource(spec: UpstreamSpec, options: PrincipalConnectionsOptions): UpstreamCredentialSource {
  const identity = spec.identity!;
  const callers = options.callers;
  if (!callers)
    throw new Error(
      `Upstream ${spec.name}: identity ${identity.mode} acts as the caller, which needs bearer authentication (the caller's token)`,
    );
  if (identity.mode === 'tokenExchange')
    return new TokenExchangeCredentials({
      upstream: spec.name,
      identity,
      callers,
      logger: options.logger,
      ...(spec.timeout !== undefined ? { timeoutMs: spec.timeout } : {}),
    });
  return new PassthroughCredentials(callers);
}
