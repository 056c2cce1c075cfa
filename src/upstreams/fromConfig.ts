/**
 * The config file's `upstreams`, `aggregator` and `state` sections as
 * runtime options. Paths resolve against the config file's folder, so
 * `taskvisor serve` and `taskvisor upstreams` agree on the state file.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, resolveFromConfig, type LoadedConfig } from '../config/loadConfig.js';
import type { IdentityConfig } from '../config/identitySchema.js';
import type { UpstreamEntry } from '../config/schema.js';
import type { UpstreamIdentity } from './identity/UpstreamIdentity.js';
import { DEFAULT_STORE_DIR } from '../core/constants.js';
import { DEFAULT_SQLITE_FILE } from '../store/index.js';
import type { UpstreamSpec } from './UpstreamSpec.js';

/** Where the runtime state file of this config lives. */
export function stateFileOf(loaded: LoadedConfig | undefined): string {
  const config = loaded?.config;
  if (config?.state?.file) return resolveFromConfig(loaded, config.state.file);
  const store = config?.store;
  if (store?.kind === 'sqlite')
    return path.join(
      path.dirname(store.file ? resolveFromConfig(loaded, store.file) : path.resolve(DEFAULT_SQLITE_FILE)),
      'runtime-state.json',
    );
  if (store?.kind === 'lowdb' && store.dir) return path.join(resolveFromConfig(loaded, store.dir), 'runtime-state.json');
  return path.resolve(DEFAULT_STORE_DIR, 'runtime-state.json');
}

/**
 * The configured upstreams, with `cwd` (and a `./`-relative `command`)
 * resolved against the config file, and each token exchange's client secret
 * read from its environment variable or file (a `ConfigError` naming the
 * field when it cannot be, never showing the secret).
 */
export function upstreamsOf(loaded: LoadedConfig | undefined): UpstreamSpec[] {
  return (loaded?.config.upstreams ?? []).map((configured, index) => {
    const entry = withIdentity(configured, index, loaded);
    if (entry.type !== 'stdio') return { ...entry };
    const relativeCommand = entry.command.startsWith('./') || entry.command.startsWith('../');
    return {
      ...entry,
      command: relativeCommand ? resolveFromConfig(loaded, entry.command) : entry.command,
      cwd: resolveFromConfig(loaded, entry.cwd ?? '.'),
    };
  });
}

/** `entry` with its identity in runtime form (`connections.max` as the pool's `maxConnections`, the secret read). */
function withIdentity(entry: UpstreamEntry, index: number, loaded: LoadedConfig | undefined) {
  const { identity, connections, ...rest } = entry;
  return {
    ...rest,
    ...(identity ? { identity: identityOf(identity, index, loaded) } : {}),
    ...(connections
      ? {
          connections: {
            ...(connections.max !== undefined ? { maxConnections: connections.max } : {}),
            ...(connections.idleMs !== undefined ? { idleMs: connections.idleMs } : {}),
          },
        }
      : {}),
  };
}

function identityOf(identity: IdentityConfig, index: number, loaded: LoadedConfig | undefined): UpstreamIdentity {
  // The OAuth settings go to the OAuth authority (upstreams/oauth/fromConfig.ts), which is this upstream's credential source.
  if (identity.mode === 'oauth') return { mode: 'oauth' };
  if (identity.mode !== 'tokenExchange') return identity;
  const { clientSecretEnv, clientSecretFile, ...rest } = identity;
  const field = clientSecretEnv !== undefined ? 'clientSecretEnv' : 'clientSecretFile';
  const where = `${loaded?.file ?? 'config'}${loaded?.positionOf?.(['upstreams', index, 'identity', field]) ?? ''}: upstreams[${index}].identity.${field}`;
  let secret: string | undefined;
  if (clientSecretEnv !== undefined) {
    secret = process.env[clientSecretEnv];
    if (!secret) throw new ConfigError(`${where}: the environment variable ${clientSecretEnv} is not set or empty`);
  } else {
    try {
      secret = readFileSync(resolveFromConfig(loaded, clientSecretFile!), 'utf8').trim();
    } catch (error) {
      throw new ConfigError(`${where}: cannot read the client secret file (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (!secret) throw new ConfigError(`${where}: the client secret file is empty`);
  }
  return { ...rest, clientSecret: secret };
}
