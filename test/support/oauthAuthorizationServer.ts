/**
 * A real OAuth 2.1 authorization server for tests: oidc-provider on
 * 127.0.0.1, with dynamic client registration (RFC 7591), PKCE, resource
 * indicators (RFC 8707: access tokens bound to the protected upstream),
 * refresh-token rotation and revocation (RFC 7009). Only the login and consent
 * pages are ours: a test "browser" names the user in a header and the
 * interaction completes at once ({@link browseAuthorization}).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export const UPSTREAM_SCOPE = 'mcp:tools';
/** The header the test browser names its user in. */
const USER_HEADER = 'x-test-user';

export interface TestAuthorizationServer {
  issuer: string;
  provider: Provider;
  /** Access tokens issued so far (by value), with the user they were issued to. */
  close(): Promise<void>;
}

export interface AuthorizationServerOptions {
  /** The protected resource (the upstream's MCP URL) tokens are issued for. */
  resource: () => string;
  /** Access token lifetime in seconds. Default 3600. */
  accessTokenTtlS?: number;
  /** `jwt`: access tokens a resource server verifies with the AS's keys (`<issuer>/jwks`). Default `opaque`. */
  accessTokenFormat?: 'opaque' | 'jwt';
}

export async function startAuthorizationServer(options: AuthorizationServerOptions): Promise<TestAuthorizationServer> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const ttl = options.accessTokenTtlS ?? 3600;
  const provider = new Provider(issuer, {
    clients: [],
    scopes: ['openid', 'offline_access', UPSTREAM_SCOPE],
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => options.resource(),
        useGrantedResource: async () => true,
        getResourceServerInfo: async () => ({
          scope: UPSTREAM_SCOPE,
          audience: options.resource(),
          accessTokenTTL: ttl,
          accessTokenFormat: options.accessTokenFormat ?? 'opaque',
        }),
      },
    },
    // Refresh tokens for every client allowed the grant (the default also wants prompt=consent for offline_access).
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    interactions: { url: async (_ctx, interaction) => `/interaction/${interaction.uid}` },
    cookies: { keys: ['test-only-cookie-key'] },
    ttl: { AccessToken: ttl, AuthorizationCode: 60, Grant: 3600, Interaction: 600, Session: 3600, RefreshToken: 86_400 },
  });
  const callback = provider.callback();
  server.on('request', (req, res) => {
    const match = /^\/interaction\/([^/?]+)/.exec(req.url ?? '');
    if (!match) {
      callback(req, res);
      return;
    }
    void interact(provider, req, res).catch((error: unknown) => {
      res.statusCode = 500;
      res.end(String(error));
    });
  });
  return {
    issuer,
    provider,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Logs in the user the browser names, then grants what the client asked for. */
async function interact(provider: Provider, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  const user = req.headers[USER_HEADER];
  if (typeof user !== 'string' || user === '') {
    res.statusCode = 401;
    res.end('no test user');
    return;
  }
  if (details.prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: user } }, { mergeWithLastSubmission: false });
    return;
  }
  const accountId = details.session?.accountId ?? user;
  const clientId = String(details.params.client_id);
  const grant = details.grantId ? await provider.Grant.find(details.grantId) : new provider.Grant({ accountId, clientId });
  if (!grant) throw new Error('grant vanished');
  const missing = details.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> };
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
    grant.addResourceScope(indicator, scopes.join(' '));
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

/**
 * A user agent following an authorization URL as `user`: redirects are
 * followed by hand (with the AS's cookies) until one leaves the AS; that
 * redirect (taskvisor's callback with `code` and `state`) is fetched and its
 * response returned.
 */
export async function browseAuthorization(authorizationUrl: string, user: string): Promise<Response> {
  const cookies = new Map<string, string>();
  const asOrigin = new URL(authorizationUrl).origin;
  let url = authorizationUrl;
  for (let hop = 0; hop < 20; hop++) {
    if (new URL(url).origin !== asOrigin) return fetch(url);
    const response = await fetch(url, {
      redirect: 'manual',
      headers: { [USER_HEADER]: user, cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    const location = response.headers.get('location');
    if (!location) throw new Error(`the authorization server answered ${response.status} without a redirect: ${await response.text()}`);
    url = new URL(location, url).href;
  }
  throw new Error('too many redirects');
}
