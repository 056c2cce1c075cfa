/**
 * The config's per-principal policy sections: who may call which tool
 * (`toolPolicy`, docs/security.md) and how often (`rateLimits`,
 * docs/configuration.md; docs/scaling.md for several instances).
 */
import { z } from 'zod';

const toolGlobs = z.array(z.string().min(1).max(200)).min(1).max(100);
const names = z.array(z.string().min(1).max(200)).max(1000);
const scopeToken = z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'expected an OAuth scope token');

/** Who may call which tool (docs/security.md, tool policy); the first rule whose `tools` match a name decides. */
export const ToolPolicySchema = z.strictObject({
  /** What a tool no rule matches gets. Default `allow`. */
  default: z.enum(['allow', 'deny']).exactOptional(),
  /** Scopes and groups of the stdio principal (`local`). */
  local: z.strictObject({ scopes: z.array(scopeToken).exactOptional(), groups: names.exactOptional() }).exactOptional(),
  rules: z
    .array(
      z.strictObject({
        /** Tool name globs (`*`, `?`): local tools, workflows, upstream tools under their namespace. */
        tools: toolGlobs,
        principals: names.exactOptional(),
        groups: names.exactOptional(),
        /** All of them required. */
        scopes: z.array(scopeToken).exactOptional(),
      }),
    )
    .max(1000),
});

/** One rate: `limit` per `windowMs`, bursts up to `burst` (default `limit`). */
const RateSchema = {
  limit: z.number().int().positive().max(1_000_000_000),
  windowMs: z.number().int().positive().max(86_400_000),
  burst: z.number().int().positive().max(1_000_000_000).exactOptional(),
};

/** Per-principal rate limits (docs/configuration.md, docs/scaling.md for several instances). */
export const RateLimitsSchema = z.strictObject({
  requests: z.strictObject(RateSchema).exactOptional(),
  taskCreations: z.strictObject(RateSchema).exactOptional(),
  tools: z
    .array(z.strictObject({ tools: toolGlobs, ...RateSchema }))
    .max(1000)
    .exactOptional(),
  maxTrackedPrincipals: z.number().int().positive().max(10_000_000).exactOptional(),
});
