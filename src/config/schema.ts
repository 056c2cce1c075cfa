/**
 * The config file format (`taskvisor.yaml` or `.json`). Every object is
 * strict: an unknown key is an error, not a silent no-op.
 */
import { z } from 'zod';

const nonNegativeInt = z.number().int().min(0);

export const ToolModuleEntrySchema = z.union([
  z.string().min(1),
  z.strictObject({
    /** Path of a JS/TS module, relative to the config file. */
    module: z.string().min(1),
    /** Export holding the tools (default: `default`, then `tools`). */
    export: z.string().min(1).optional(),
  }),
], { error: 'expected a module path string, or { module: string, export?: string }' });

/** Upstream names: part of wrapped task ids and `Mcp-Name` headers, so header-safe. */
const upstreamName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'use 1-64 characters of A-Z a-z 0-9 _ -');

const upstreamCommon = {
  name: upstreamName,
  /** Prefix of this upstream's tools: `<namespace>_<toolPrefix>_<tool>`. Default: the name (`_` → `-`). */
  toolPrefix: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/, 'use 1-64 characters of A-Z a-z 0-9 - (no _: it separates the parts of a tool name)').optional(),
  /** Per-request timeout in ms. Default 30000. */
  timeout: z.number().int().positive().optional(),
  /** Connect when the server starts. Default true. */
  autoStart: z.boolean().optional(),
  /** Ping period while connected; 0 disables. Default 15000. */
  pingIntervalMs: nonNegativeInt.optional(),
  /** Failed pings in a row before reconnecting. Default 3. */
  maxPingFailures: z.number().int().positive().optional(),
  backoff: z
    .strictObject({
      initialMs: z.number().int().positive().optional(),
      maxMs: z.number().int().positive().optional(),
      factor: z.number().min(1).optional(),
      /** Connection attempts in a row before giving up (`failed`); null = forever. */
      maxAttempts: z.number().int().positive().nullable().optional(),
    })
    .optional(),
};

export const UpstreamEntrySchema = z.discriminatedUnion('type', [
  z.strictObject({
    ...upstreamCommon,
    type: z.literal('stdio'),
    command: z.string().min(1),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    /** Working directory of the child, relative to the config file. */
    cwd: z.string().min(1).optional(),
  }),
  z.strictObject({
    ...upstreamCommon,
    type: z.literal('streamable-http'),
    url: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }),
    headers: z.record(z.string(), z.string()).optional(),
  }),
], { error: 'expected type: stdio (with command) or type: streamable-http (with url)' });

export const ConfigSchema = z.strictObject({
  server: z
    .strictObject({
      name: z.string().min(1).optional(),
      version: z.string().min(1).optional(),
      instructions: z.string().optional(),
    })
    .optional(),
  http: z
    .strictObject({
      host: z.string().min(1).optional(),
      port: z.number().int().min(0).max(65535).optional(),
      path: z.string().startsWith('/').optional(),
      /** Host header names accepted; `false` disables the check. Default: loopback names on loopback binds. */
      allowedHosts: z.union([z.array(z.string().min(1)), z.literal(false)]).optional(),
      maxBodyBytes: z.number().int().positive().optional(),
    })
    .optional(),
  /** MCP over WebSocket (served when this section is present and no transport flag is given, or with `--ws`). */
  ws: z
    .strictObject({
      host: z.string().min(1).optional(),
      port: z.number().int().min(0).max(65535).optional(),
      path: z.string().startsWith('/').optional(),
      /** Host header names accepted on the upgrade; `false` disables the check. Default: loopback names on loopback binds. */
      allowedHosts: z.union([z.array(z.string().min(1)), z.literal(false)]).optional(),
      /** Browser Origin host names accepted; `false` disables the check. Default: loopback names on loopback binds. */
      allowedOrigins: z.union([z.array(z.string().min(1)), z.literal(false)]).optional(),
      /** Largest inbound frame; a bigger one closes the socket (1009). */
      maxPayloadBytes: z.number().int().positive().optional(),
    })
    .optional(),
  store: z
    .discriminatedUnion('kind', [
      z.strictObject({ kind: z.literal('memory') }),
      z.strictObject({
        kind: z.literal('lowdb'),
        /** Folder of the store, relative to the config file. Default `./.taskvisor` (relative to the working directory). */
        dir: z.string().min(1).optional(),
      }),
      z.strictObject({
        kind: z.literal('sqlite'),
        /** Database file, relative to the config file. Default `./.taskvisor/tasks.sqlite` (relative to the working directory). */
        file: z.string().min(1).optional(),
      }),
    ])
    .optional(),
  tasks: z
    .strictObject({
      ttlMs: nonNegativeInt.nullable().optional(),
      pollIntervalMs: nonNegativeInt.optional(),
      promoteAfterMs: nonNegativeInt.optional(),
      reapIntervalMs: nonNegativeInt.optional(),
      /** A finished task stays readable at least this long after it finished. */
      finishedRetentionMs: nonNegativeInt.optional(),
      /** Adaptive polling hint (T-27): bounds, and growth with a task's age (age / growthDivisor). */
      poll: z
        .strictObject({
          minMs: nonNegativeInt.optional(),
          maxMs: nonNegativeInt.optional(),
          growthDivisor: nonNegativeInt.optional(),
        })
        .optional(),
      /** Pace clients polling much faster than asked; off unless set. */
      pollRateLimit: z
        .union([
          z.literal(false),
          z.strictObject({
            factor: z.number().positive().max(1).optional(),
            maxDelayMs: nonNegativeInt.optional(),
          }),
        ])
        .optional(),
    })
    .optional(),
  tools: z.array(ToolModuleEntrySchema).optional(),
  /** Upstream MCP servers to aggregate (docs/aggregator.md). */
  upstreams: z
    .array(UpstreamEntrySchema)
    .superRefine((entries, ctx) => {
      const seen = new Set<string>();
      entries.forEach((entry, index) => {
        if (seen.has(entry.name)) ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `duplicate upstream name ${JSON.stringify(entry.name)}` });
        seen.add(entry.name);
      });
    })
    .optional(),
  aggregator: z
    .strictObject({
      /** First part of every upstream tool name; `<namespace>_` is reserved for upstream tools. Default `x`. */
      toolNamespace: z.string().regex(/^[A-Za-z][A-Za-z0-9]{0,15}$/, 'use a letter then up to 15 letters or digits').optional(),
    })
    .optional(),
  /** The runtime state file (secrets, upstream capability cache and health), relative to the config file. */
  state: z.strictObject({ file: z.string().min(1).optional() }).optional(),
});

export type TaskvisorConfig = z.infer<typeof ConfigSchema>;
export type ToolModuleEntry = z.infer<typeof ToolModuleEntrySchema>;
export type UpstreamEntry = z.infer<typeof UpstreamEntrySchema>;
