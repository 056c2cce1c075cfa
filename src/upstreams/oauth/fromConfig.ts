/**
 * The config's OAuth upstreams (`identity: { mode: oauth }`) and its
 * `credentials` section as a running {@link UpstreamOAuth}: the key loaded
 * from its environment variable or private file, the credential store beside
 * the task store, the callback path on the HTTP listener. `taskvisor serve`
 * and `taskvisor upstreams auth|revoke` build it the same way, so both see
 * the same grants.
 */
import { ConfigError, resolveFromConfig, type LoadedConfig } from '../../config/loadConfig.js';
import { CredentialCipher, loadCredentialKey } from '../../store/credentials/CredentialCipher.js';
import type { CredentialStore } from '../../store/credentials/CredentialStore.js';
import { createCredentialStore } from '../../store/credentials/index.js';
import { SealedCredentials } from '../../store/credentials/SealedCredentials.js';
import type { TaskStoreConfig } from '../../store/index.js';
import { OAuthRecords } from './OAuthRecords.js';
import { UpstreamOAuth, type OAuthUpstream } from './UpstreamOAuth.js';

/** A running OAuth authority and what it holds open. */
export interface ConfiguredUpstreamOAuth {
  oauth: UpstreamOAuth;
  /** The upstreams it authorizes, by name. */
  upstreams: string[];
  /** Path of the callback route on the HTTP listener (from `credentials.callbackUrl`), when one is served. */
  callbackPath: string | undefined;
  store: CredentialStore;
  close(): Promise<void>;
}

/** The OAuth upstreams `loaded` configures (empty when none). */
export function oauthUpstreamsOf(loaded: LoadedConfig | undefined, env: NodeJS.ProcessEnv = process.env): OAuthUpstream[] {
  const found: OAuthUpstream[] = [];
  (loaded?.config.upstreams ?? []).forEach((entry, index) => {
    if (entry.type !== 'streamable-http' || entry.identity?.mode !== 'oauth') return;
    const identity = entry.identity;
    let clientSecret: string | undefined;
    if (identity.clientSecretEnv !== undefined) {
      clientSecret = env[identity.clientSecretEnv];
      if (!clientSecret)
        throw new ConfigError(
          `${loaded!.file}${loaded!.positionOf?.(['upstreams', index, 'identity', 'clientSecretEnv']) ?? ''}: upstreams[${index}].identity.clientSecretEnv: environment variable ${identity.clientSecretEnv} is not set`,
        );
    }
    found.push({
      name: entry.name,
      url: entry.url,
      scope: identity.scope,
      clientId: identity.clientId,
      clientSecret,
      clientName: identity.clientName,
      catalogPrincipal: identity.catalogPrincipal,
    });
  });
  return found;
}

/**
 * Opens the OAuth authority of `loaded` over the credential store beside
 * `store`, or `undefined` when no upstream uses OAuth. Errors name the
 * config file and field.
 */
export async function openUpstreamOAuth(
  loaded: LoadedConfig | undefined,
  store: TaskStoreConfig,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ConfiguredUpstreamOAuth | undefined> {
  const upstreams = oauthUpstreamsOf(loaded, env);
  const credentials = loaded?.config.credentials;
  if (upstreams.length === 0 || !loaded || !credentials) return undefined;
  let key: Buffer;
  try {
    key = await loadCredentialKey(
      credentials.keyEnv !== undefined ? { keyEnv: credentials.keyEnv } : { keyFile: resolveFromConfig(loaded, credentials.keyFile!) },
      env,
    );
  } catch (error) {
    const field = credentials.keyEnv !== undefined ? 'keyEnv' : 'keyFile';
    throw new ConfigError(`${loaded.file}${loaded.positionOf?.(['credentials', field]) ?? ''}: ${(error as Error).message}`);
  }
  const credentialStore = createCredentialStore(store);
  await credentialStore.open();
  const oauth = new UpstreamOAuth({
    records: new OAuthRecords(new SealedCredentials(credentialStore, new CredentialCipher(key))),
    upstreams,
    callbackUrl: credentials.callbackUrl,
    ...(credentials.authorizationTtlMs !== undefined ? { pendingTtlMs: credentials.authorizationTtlMs } : {}),
    ...(credentials.refreshBeforeExpiryMs !== undefined ? { refreshSkewMs: credentials.refreshBeforeExpiryMs } : {}),
  });
  return {
    oauth,
    upstreams: upstreams.map((upstream) => upstream.name),
    callbackPath: credentials.callbackUrl !== undefined ? new URL(credentials.callbackUrl).pathname : undefined,
    store: credentialStore,
    close: () => credentialStore.close(),
  };
}
