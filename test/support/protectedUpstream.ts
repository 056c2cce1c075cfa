/**
 * An MCP upstream that requires OAuth: a plain v2 SDK server over Streamable
 * HTTP behind the SDK's own bearer gate (`requireBearerAuth`), serving its
 * protected-resource metadata (RFC 9728) and a 401 `WWW-Authenticate`
 * challenge that names it. Tokens are checked against the test authorization
 * server (`AccessToken.find`, i.e. introspection): unknown, expired, revoked
 * or foreign-audience tokens are refused.
 *
 * Tools: `whoami` (the user the token was issued to) and `slow_whoami`
 * (the same after `ms`), so a test sees which principal acts upstream.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createMcpHandler,
  McpServer,
  OAuthError,
  OAuthErrorCode,
  getOAuthProtectedResourceMetadataUrl,
  oauthMetadataResponse,
  requireBearerAuth,
  type AuthInfo,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { nodeRequestHandler } from '../../src/transports/nodeAdapter.js';
import { UPSTREAM_SCOPE, type TestAuthorizationServer } from './oauthAuthorizationServer.js';

export interface ProtectedUpstream {
  /** The MCP endpoint (the protected resource). */
  url: string;
  /** Every access token a tool call arrived with, in order. */
  readonly tokensSeen: string[];
  close(): Promise<void>;
}

/** Listens first (the AS needs the resource URL), then serves once `authorizationServer` is attached. */
export async function startProtectedUpstream(): Promise<ProtectedUpstream & { attach(as: TestAuthorizationServer): void }> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const tokensSeen: string[] = [];
  let as: TestAuthorizationServer | undefined;

  const verifier = {
    async verifyAccessToken(token: string): Promise<AuthInfo> {
      const found = await as!.provider.AccessToken.find(token);
      if (!found || found.isExpired) throw new OAuthError(OAuthErrorCode.InvalidToken, 'unknown, expired or revoked token');
      return {
        token,
        clientId: found.clientId ?? '',
        scopes: (found.scope ?? '').split(' ').filter(Boolean),
        expiresAt: found.exp ?? Math.floor(Date.now() / 1000) + 60,
        resource: new URL(String(found.aud ?? '')),
        extra: { user: found.accountId },
      };
    },
  };
  const handler = createMcpHandler(() => {
    const mcp = new McpServer({ name: 'protected-upstream', version: '1.0.0' });
    mcp.registerTool('whoami', { description: 'The user this call acts as.' }, async (ctx) => ({
      content: [{ type: 'text', text: String(ctx.http?.authInfo?.extra?.user ?? 'nobody') }],
    }));
    mcp.registerTool(
      'slow_whoami',
      { description: 'The user this call acts as, after ms.', inputSchema: z.object({ ms: z.number() }) },
      async ({ ms }, ctx) => {
        await new Promise((resolve) => setTimeout(resolve, ms));
        return { content: [{ type: 'text', text: String(ctx.http?.authInfo?.extra?.user ?? 'nobody') }] };
      },
    );
    return mcp;
  });
  const serve = nodeRequestHandler({
    fetch: async (request: Request) => {
      const metadata = oauthMetadataResponse(request, {
        oauthMetadata: (await (await fetch(`${as!.issuer}/.well-known/openid-configuration`)).json()) as never,
        resourceServerUrl: new URL(url),
        scopesSupported: [UPSTREAM_SCOPE],
      });
      if (metadata) return metadata;
      const gate = requireBearerAuth({
        verifier,
        requiredScopes: [UPSTREAM_SCOPE],
        resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(url)),
        expectedResource: new URL(url),
      });
      const authInfo = await gate(request);
      if (authInfo instanceof Response) return authInfo;
      tokensSeen.push(authInfo.token);
      return handler.fetch(request, { authInfo });
    },
  });
  server.on('request', (req, res) => void serve(req, res));
  return {
    url,
    tokensSeen,
    attach(authorizationServer) {
      as = authorizationServer;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
