/**
 * The `auth` section of a config file → {@link BearerAuthOptions}. Every
 * problem (token file mode or content, key file, JWKS URL) is a
 * `ConfigError` naming the config file, the position and the field, raised
 * before anything starts listening (no partial start).
 */
import { ConfigError, resolveFromConfig, type LoadedConfig } from '../config/loadConfig.js';
import type { AuthConfig } from '../config/schema.js';
import type { BearerAuthOptions } from './bearer.js';
import { jwtVerifier, JwtConfigError } from './jwt.js';
import { tokenFileVerifier, TokenFileError } from './tokenFile.js';
import { definedProps } from '../core/definedProps.js';

/** Builds the bearer options of `auth`; `loaded` resolves relative paths and positions errors. */
export async function authFromConfig(
  auth: Exclude<AuthConfig, { kind: 'none' }>,
  loaded: LoadedConfig | undefined,
  resourceName?: string,
): Promise<BearerAuthOptions> {
  const where = (field: string) => `${loaded?.file ?? 'config'}${loaded?.positionOf?.(['auth', field]) ?? ''}: auth.${field}`;
  const common = {
    ...definedProps({ resource: auth.resource, requiredScopes: auth.requiredScopes, resourceName }),
  };
  if (auth.kind === 'token-file') {
    try {
      const verifier = await tokenFileVerifier(resolveFromConfig(loaded, auth.file), {
        ...(auth.allowInsecurePermissions !== undefined ? { allowInsecurePermissions: auth.allowInsecurePermissions } : {}),
      });
      return { verifier, ...common, ...(auth.authorizationServers ? { authorizationServers: auth.authorizationServers } : {}) };
    } catch (error) {
      if (error instanceof TokenFileError) throw new ConfigError(`${where('file')}: ${error.message}`);
      throw error;
    }
  }
  try {
    const verifier = await jwtVerifier({
      ...(auth.jwksUrl !== undefined ? { jwksUrl: auth.jwksUrl } : {}),
      ...(auth.keyFile !== undefined ? { keyFile: resolveFromConfig(loaded, auth.keyFile) } : {}),
      issuer: auth.issuer,
      audience: auth.audience,
      ...definedProps({
        principalClaim: auth.principalClaim,
        clockToleranceSec: auth.clockToleranceSec,
        algorithms: auth.algorithms,
        maxTokenAgeMs: auth.maxTokenAgeMs,
      }),
    });
    return { verifier, ...common, authorizationServers: auth.authorizationServers ?? [auth.issuer] };
  } catch (error) {
    if (error instanceof JwtConfigError)
      throw new ConfigError(`${where(auth.jwksUrl !== undefined ? 'jwksUrl' : 'keyFile')}: ${error.message}`);
    throw error;
  }
}
