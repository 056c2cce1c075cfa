/**
 * OAuth to protected upstreams, per principal (docs/aggregator.md "Upstreams
 * that require OAuth"): an upstream's `identity: { mode: oauth }`, and the
 * top-level `credentials` section that says where the key sealing every
 * principal's grant comes from and where taskvisor's callback is reachable.
 * Secrets are named, never written inline.
 */
import { z } from 'zod';

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name');

/** `upstreams[].identity` for an upstream whose users each grant taskvisor access (MCP authorization, OAuth 2.1). */
export const OAuthIdentitySchema = z
  .strictObject({
    mode: z.literal('oauth'),
    /** Scopes to ask for, space-separated. Default: the upstream's protected-resource metadata `scopes_supported`. */
    scope: z.string().min(1).exactOptional(),
    /** A client registered by hand with the upstream's authorization server; without it taskvisor registers itself (RFC 7591). */
    clientId: z.string().min(1).exactOptional(),
    /** The environment variable holding that client's secret (a public client has none). */
    clientSecretEnv: envName.exactOptional(),
    /** Whose grant lists the upstream's tools for everyone (its shared connection). Default `local`, the user running the CLI. */
    catalogPrincipal: z.string().min(1).max(256).exactOptional(),
    /** `client_name` of the registration. Default `taskvisor`. */
    clientName: z.string().min(1).max(100).exactOptional(),
  })
  .superRefine((identity, ctx) => {
    if (identity.clientSecretEnv !== undefined && identity.clientId === undefined)
      ctx.addIssue({ code: 'custom', path: ['clientSecretEnv'], message: 'a client secret needs its clientId' });
  });

/** The top-level `credentials` section: sealing of upstream credentials at rest and the OAuth callback. */
export const CredentialsConfigSchema = z
  .strictObject({
    /** Environment variable holding the 32-byte key (hex or base64). */
    keyEnv: envName.exactOptional(),
    /** File holding the key (mode 0600), relative to the config file. */
    keyFile: z.string().min(1).exactOptional(),
    /**
     * taskvisor's OAuth callback as the user's browser reaches it, e.g.
     * `https://gateway.example.com/oauth/callback`; served on the HTTP listener at its path. Without it a caller
     * who has not authorized is told to run `taskvisor upstreams auth`.
     */
    callbackUrl: z
      .url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' })
      .refine((value) => {
        const url = new URL(value);
        return url.protocol === 'https:' || /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i.test(url.hostname);
      }, 'use https:// (http:// only on a loopback address): the authorization code travels in it')
      .exactOptional(),
    /** How long an authorization link can be used (ms). Default 600000. */
    authorizationTtlMs: z.number().int().min(10_000).max(86_400_000).exactOptional(),
    /** Refresh an access token this long before it expires (ms). Default 60000. */
    refreshBeforeExpiryMs: z.number().int().min(0).max(86_400_000).exactOptional(),
  })
  .superRefine((credentials, ctx) => {
    if ((credentials.keyEnv === undefined) === (credentials.keyFile === undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['keyEnv'],
        message: 'give exactly one of keyEnv or keyFile: the key that seals upstream credentials, never kept in the store',
      });
  });

export type OAuthIdentityConfig = z.infer<typeof OAuthIdentitySchema>;
export type CredentialsConfig = z.infer<typeof CredentialsConfigSchema>;
