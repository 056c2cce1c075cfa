/**
 * `upstreams[].identity` and `upstreams[].connections`: whom an upstream
 * sees behind a forwarded call (docs/aggregator.md "Identity"). Secrets are
 * named, never written inline: the token endpoint's client secret comes from
 * an environment variable or a file, and no message ever echoes it.
 */
import { z } from 'zod';
import { OAuthIdentitySchema } from './oauthSchema.js';

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** Whether `value` is an `https://` URL, or an `http://` one to a loopback address (where a token may travel). */
export function secureOrLoopback(value: string): boolean {
  const url = new URL(value);
  return url.protocol === 'https:' || LOOPBACK.test(url.hostname);
}

const tokenEndpoint = z
  .url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' })
  .refine(secureOrLoopback, 'use https:// (http:// only to a loopback address): the exchange sends the caller\u2019s token');

const TokenExchangeSchema = z
  .strictObject({
    mode: z.literal('tokenExchange'),
    /** The RFC 8693 token endpoint. */
    tokenEndpoint,
    /** RFC 8693 `audience`: the upstream as the authorization server names it. */
    audience: z.string().min(1).exactOptional(),
    /** RFC 8693 `resource` (an absolute URI, RFC 8707). */
    resource: z.url().exactOptional(),
    /** Scopes to request, space-separated. */
    scope: z.string().min(1).exactOptional(),
    /** Default `urn:ietf:params:oauth:token-type:access_token`. */
    requestedTokenType: z.string().min(1).exactOptional(),
    /** taskvisor's client id at the token endpoint. */
    clientId: z.string().min(1),
    /** The environment variable holding the client secret. */
    clientSecretEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name')
      .exactOptional(),
    /** A file holding the client secret (trimmed), relative to the config file. */
    clientSecretFile: z.string().min(1).exactOptional(),
    /** Default `client_secret_basic`. */
    clientAuthMethod: z.enum(['client_secret_basic', 'client_secret_post']).exactOptional(),
  })
  .superRefine((identity, ctx) => {
    if (identity.audience === undefined && identity.resource === undefined)
      ctx.addIssue({ code: 'custom', path: ['audience'], message: 'give audience or resource: the upstream the token is exchanged for' });
    if ((identity.clientSecretEnv === undefined) === (identity.clientSecretFile === undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['clientSecretEnv'],
        message: 'give exactly one of clientSecretEnv or clientSecretFile (a secret is never written in the config)',
      });
  });

export const IdentityConfigSchema = z.preprocess(
  (value) => (typeof value === 'string' ? { mode: value } : value),
  z.discriminatedUnion(
    'mode',
    [
      z.strictObject({ mode: z.literal('static') }),
      z.strictObject({ mode: z.literal('passthrough') }),
      TokenExchangeSchema,
      OAuthIdentitySchema,
    ],
    {
      error:
        'expected static, passthrough, oauth, or { mode: tokenExchange, tokenEndpoint, audience, clientId, clientSecretEnv | clientSecretFile }',
    },
  ),
);

/** Bounds of an upstream's per-principal connections. */
export const ConnectionsConfigSchema = z.strictObject({
  /** Connections open at once (one per principal). Default 64. */
  max: z.number().int().min(1).max(10_000).exactOptional(),
  /** A connection unused this long is closed (ms). Default 300000. */
  idleMs: z.number().int().min(1_000).exactOptional(),
});

export type IdentityConfig = z.infer<typeof IdentityConfigSchema>;
