/**
 * The config file format (`taskvisor.yaml` or `.json`). Every object is
 * strict: an unknown key is an error, not a silent no-op.
 */
import { z } from 'zod';
import { UpstreamHeadersSchema } from './headersSchema.js';
import { ConnectionsConfigSchema, IdentityConfigSchema, secureOrLoopback } from './identitySchema.js';
import { LimitsSchema } from './limitsSchema.js';
import { RateLimitsSchema, ToolPolicySchema } from './policySchema.js';
import { CredentialsConfigSchema } from './oauthSchema.js';

const nonNegativeInt = z.number().int().min(0);

export const ToolModuleEntrySchema = z.union(
  [
    z.string().min(1),
    z.strictObject({
      /** Path of a JS/TS module, relative to the config file. */
      module: z.string().min(1),
      /** Export holding the definitions (default: `default`, then the key's name: `tools`, `resources`, `prompts`). */
      export: z.string().min(1).exactOptional(),
    }),
  ],
  { error: 'expected a module path string, or { module: string, export?: string }' },
);

/** Fields every `auth` kind shares (MCP authorization, resource server side; docs/security.md). */
const authCommon = {
  /** Public URL of the MCP endpoint (RFC 9728 `resource`); default: from each request's Host and path. */
  resource: z.url({ protocol: /^https?$/ }).exactOptional(),
  /** Scopes every token must carry (403 `insufficient_scope` otherwise). */
  requiredScopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'expected an OAuth scope token')).exactOptional(),
  /** Authorization servers advertised in the metadata document. Default for `jwt`: the issuer. */
  authorizationServers: z.array(z.url()).exactOptional(),
};

/** Bearer authentication of the HTTP and WebSocket entries; stdio is always the one local principal. */
export const AuthConfigSchema = z
  .discriminatedUnion('kind', [
    z.strictObject({
      kind: z.literal('token-file'),
      /** The token file (YAML/JSON), relative to the config file; must be mode 0600 or stricter. */
      file: z.string().min(1),
      /** Accept a token file group or others may read or write. Default false. */
      allowInsecurePermissions: z.boolean().exactOptional(),
      ...authCommon,
    }),
    z.strictObject({
      kind: z.literal('jwt'),
      /** JWKS URL of the issuer (https; http only for loopback). Exactly one of jwksUrl and keyFile. */
      jwksUrl: z.url().exactOptional(),
      /** Public key file (PEM, JWK or JWKS), relative to the config file. */
      keyFile: z.string().min(1).exactOptional(),
      issuer: z.string().min(1),
      audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
      principalClaim: z.string().min(1).exactOptional(),
      clockToleranceSec: nonNegativeInt.max(3600).exactOptional(),
      algorithms: z
        .array(z.enum(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']))
        .min(1)
        .exactOptional(),
      /** Oldest accepted token by its `iat` claim, ms (then `iat` is required). Default: no limit beyond `exp`. */
      maxTokenAgeMs: z.number().int().positive().exactOptional(),
      ...authCommon,
    }),
    /**
     * No authentication, said explicitly: required to serve HTTP or WebSocket on
     * a non-loopback address without auth. Every caller is the one
     * principal `anonymous`.
     */
    z.strictObject({ kind: z.literal('none') }),
  ])
  .superRefine((auth, ctx) => {
    if (auth.kind === 'jwt' && (auth.jwksUrl === undefined) === (auth.keyFile === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: auth.keyFile === undefined ? ['jwksUrl'] : ['keyFile'],
        message: 'give exactly one of jwksUrl and keyFile',
      });
    }
  });

const taskBehavior = z.enum(['auto', 'always', 'never'], { error: "expected 'auto', 'always' or 'never'" });

/**
 * Server-directed promotion of calls to this upstream's tools that have no
 * task support of their own (docs/aggregator.md "Promoted calls"): for a
 * caller that declared the tasks extension, taskvisor holds the upstream
 * request and the call becomes a taskvisor task.
 */
const promotionSchema = z.strictObject({
  /** `auto` (default): a task once the call outlives promoteAfterMs or asks for input; `always`; `never`: forwarded as is. */
  taskBehavior: taskBehavior.exactOptional(),
  /** How long a call may run before it becomes a task. Default: the server's `tasks.promoteAfterMs` (200). */
  promoteAfterMs: nonNegativeInt.exactOptional(),
  /** How long a held call may wait for the upstream's answer; the task fails after it. Default: none (the task's ttl bounds it). */
  timeoutMs: z.number().int().positive().exactOptional(),
  /** Per upstream tool name (as the upstream lists it). */
  tools: z
    .record(
      z.string().min(1),
      z.strictObject({
        taskBehavior: taskBehavior.exactOptional(),
        promoteAfterMs: nonNegativeInt.exactOptional(),
        /**
         * A held call does not survive a restart: `true` sends it again (resume `replay`), `false` ends the task
         * `failed`. Default: the tool's `idempotentHint` annotation.
         */
        idempotent: z.boolean().exactOptional(),
      }),
    )
    .exactOptional(),
});

/** Upstream names: part of wrapped task ids and `Mcp-Name` headers, so header-safe. */
const upstreamName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'use 1-64 characters of A-Z a-z 0-9 _ -');

const upstreamCommon = {
  name: upstreamName,
  /** Prefix of this upstream's tools: `<namespace>_<toolPrefix>_<tool>`. Default: the name (`_` → `-`). */
  toolPrefix: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/, 'use 1-64 characters of A-Z a-z 0-9 - (no _: it separates the parts of a tool name)')
    .exactOptional(),
  /** Per-request timeout in ms. Default 30000. */
  timeout: z.number().int().positive().exactOptional(),
  /** Connect when the server starts. Default true. */
  autoStart: z.boolean().exactOptional(),
  /** Ping period while connected; 0 disables. Default 15000. */
  pingIntervalMs: nonNegativeInt.exactOptional(),
  /** Failed pings in a row before reconnecting. Default 3. */
  maxPingFailures: z.number().int().positive().exactOptional(),
  backoff: z
    .strictObject({
      initialMs: z.number().int().positive().exactOptional(),
      maxMs: z.number().int().positive().exactOptional(),
      factor: z.number().min(1).exactOptional(),
      /** Connection attempts in a row before giving up (`failed`); null = forever. */
      maxAttempts: z.number().int().positive().nullable().exactOptional(),
    })
    .exactOptional(),
  /** Whom the upstream sees behind a call: static (default), passthrough, tokenExchange (docs/aggregator.md "Identity"). */
  identity: IdentityConfigSchema.exactOptional(),
  /** Bounds of the per-principal connections (identity other than static). */
  connections: ConnectionsConfigSchema.exactOptional(),
  /** Calls to tools without task support of their own become taskvisor tasks (docs/aggregator.md). */
  promotion: promotionSchema.exactOptional(),
};

export const UpstreamEntrySchema = z.discriminatedUnion(
  'type',
  [
    z.strictObject({
      ...upstreamCommon,
      type: z.literal('stdio'),
      command: z.string().min(1),
      args: z.array(z.string()).exactOptional(),
      env: z.record(z.string(), z.string()).exactOptional(),
      /** Working directory of the child, relative to the config file. */
      cwd: z.string().min(1).exactOptional(),
    }),
    z.strictObject({
      ...upstreamCommon,
      type: z.literal('streamable-http'),
      url: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL' }),
      /** Sent on every request to the upstream; names and values checked at load (fetch refuses the rest). */
      headers: UpstreamHeadersSchema.exactOptional(),
    }),
  ],
  { error: 'expected type: stdio (with command) or type: streamable-http (with url)' },
);

/** Where an HTTP or WebSocket listener binds and which Host/Origin it admits (DNS-rebinding protection, docs/security.md). */
const listenerFields = {
  host: z.string().min(1).exactOptional(),
  port: z.number().int().min(0).max(65535).exactOptional(),
  path: z.string().startsWith('/').exactOptional(),
  /** Host header names accepted (on the upgrade for `ws`); `false` disables the check. Default: loopback names on loopback binds. */
  allowedHosts: z.union([z.array(z.string().min(1)), z.literal(false)]).exactOptional(),
  /** Browser Origin host names accepted; `false` disables the check. Default: loopback names on loopback binds. */
  allowedOrigins: z.union([z.array(z.string().min(1)), z.literal(false)]).exactOptional(),
};

export const ConfigSchema = z
  .strictObject({
    server: z
      .strictObject({
        name: z.string().min(1).exactOptional(),
        version: z.string().min(1).exactOptional(),
        instructions: z.string().exactOptional(),
      })
      .exactOptional(),
    http: z
      .strictObject({
        ...listenerFields,
        maxBodyBytes: z.number().int().positive().exactOptional(),
      })
      .exactOptional(),
    /** MCP over WebSocket (served when this section is present and no transport flag is given, or with `--ws`). */
    ws: z
      .strictObject({
        ...listenerFields,
        /** Largest inbound frame; a bigger one closes the socket (1009). */
        maxPayloadBytes: z.number().int().positive().exactOptional(),
      })
      .exactOptional(),
    store: z
      .discriminatedUnion('kind', [
        z.strictObject({ kind: z.literal('memory') }),
        z.strictObject({
          kind: z.literal('lowdb'),
          /** Folder of the store, relative to the config file. Default `./.taskvisor` (relative to the working directory). */
          dir: z.string().min(1).exactOptional(),
        }),
        z.strictObject({
          kind: z.literal('sqlite'),
          /** Database file, relative to the config file. Default `./.taskvisor/tasks.sqlite` (relative to the working directory). */
          file: z.string().min(1).exactOptional(),
        }),
        // Several instances on one PostgreSQL database (docs/scaling.md).
        z.strictObject({
          kind: z.literal('postgres'),
          /** Connection URL; a password may come from PGPASSWORD instead of the file. */
          url: z.string().regex(/^postgres(ql)?:\/\/\S+$/, { error: 'expected a postgres://user@host:port/database URL' }),
          /** Schema holding the tables (created and migrated on start). Default `taskvisor`. */
          schema: z
            .string()
            .regex(/^[a-z_][a-z0-9_]{0,47}$/, {
              error: 'expected a lower-case identifier: a-z, 0-9, _ (at most 48 chars, not starting with a digit)',
            })
            .exactOptional(),
          /** Pooled connections per instance (plus one for LISTEN). Default 10. */
          poolSize: z.number().int().min(1).max(1000).exactOptional(),
          /** An instance's lease; its unfinished tasks are adopted this long after it died. Default 5000. */
          leaseMs: z.number().int().min(500).max(3_600_000).exactOptional(),
        }),
      ])
      .exactOptional(),
    tasks: z
      .strictObject({
        ttlMs: nonNegativeInt.nullable().exactOptional(),
        pollIntervalMs: nonNegativeInt.exactOptional(),
        promoteAfterMs: nonNegativeInt.exactOptional(),
        reapIntervalMs: nonNegativeInt.exactOptional(),
        /** A finished task stays readable at least this long after it finished. */
        finishedRetentionMs: nonNegativeInt.exactOptional(),
        /** A resumable task waiting for input this long, everything stored, leaves memory (passivation); false: never. */
        passivateIdleAfterMs: z.union([nonNegativeInt, z.literal(false)]).exactOptional(),
        /** Adaptive polling hint (T-27): bounds, and growth with a task's age (age / growthDivisor). */
        poll: z
          .strictObject({
            minMs: nonNegativeInt.exactOptional(),
            maxMs: nonNegativeInt.exactOptional(),
            growthDivisor: nonNegativeInt.exactOptional(),
          })
          .exactOptional(),
        /** Pace clients polling much faster than asked; off unless set. */
        pollRateLimit: z
          .union([
            z.literal(false),
            z.strictObject({
              factor: z.number().positive().max(1).exactOptional(),
              maxDelayMs: nonNegativeInt.exactOptional(),
            }),
          ])
          .exactOptional(),
      })
      .exactOptional(),
    tools: z.array(ToolModuleEntrySchema).exactOptional(),
    /** Modules of resources and resource templates (any definition kind is accepted; docs/resources-and-prompts.md). */
    resources: z.array(ToolModuleEntrySchema).exactOptional(),
    /** Modules of prompts (any definition kind is accepted). */
    prompts: z.array(ToolModuleEntrySchema).exactOptional(),
    /** Bearer authentication for `http` and `ws` (docs/security.md). */
    auth: AuthConfigSchema.exactOptional(),
    /** Who may call which tool (docs/security.md). */
    toolPolicy: ToolPolicySchema.exactOptional(),
    /** Per-principal rate limits (docs/configuration.md). */
    rateLimits: RateLimitsSchema.exactOptional(),
    /** YAML workflows served as tools (docs/workflows.md). */
    workflows: z
      .strictObject({
        /** Folder of `*.yaml` workflow files, relative to the config file. */
        dir: z.string().min(1),
        /** Tool name prefix. Default `workflow_`. */
        prefix: z
          .string()
          .regex(/^[A-Za-z0-9_.-]*$/, 'use A-Z a-z 0-9 _ - .')
          .exactOptional(),
        /** Reload the folder when its files change. Default true. */
        watch: z.boolean().exactOptional(),
        /** How long a finished run stays in the run history (docs/workflows.md "Run history"). Default 21 days. */
        historyRetentionMs: z.number().int().min(1).exactOptional(),
        /** At most this many finished runs are kept; the oldest go first. Default 10,000. */
        historyMaxRuns: z.number().int().min(1).max(10_000_000).exactOptional(),
      })
      .exactOptional(),
    /** Resource limits (docs/security-limits.md); safe defaults when absent. */
    limits: LimitsSchema.exactOptional(),
    /** Upstream MCP servers to aggregate (docs/aggregator.md). */
    upstreams: z
      .array(UpstreamEntrySchema)
      .superRefine((entries, ctx) => {
        const seen = new Set<string>();
        entries.forEach((entry, index) => {
          if (seen.has(entry.name))
            ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `duplicate upstream name ${JSON.stringify(entry.name)}` });
          seen.add(entry.name);
        });
      })
      .exactOptional(),
    aggregator: z
      .strictObject({
        /** First part of every upstream tool name; `<namespace>_` is reserved for upstream tools. Default `x`. */
        toolNamespace: z
          .string()
          .regex(/^[A-Za-z][A-Za-z0-9]{0,15}$/, 'use a letter then up to 15 letters or digits')
          .exactOptional(),
      })
      .exactOptional(),
    /** Health, readiness, metrics, the dashboard (docs/operations.md). */
    operations: z
      .strictObject({
        /** Serve Prometheus metrics at /metrics (operators only). Default false. */
        metrics: z.boolean().exactOptional(),
        /** Serve the read-only dashboard at /ui/ and its operator API at /ops/api/ (operators only). Default false. */
        ui: z.boolean().exactOptional(),
        /** Make OpenTelemetry spans through @opentelemetry/api (installed by you, with your SDK). Default false. */
        openTelemetry: z.boolean().exactOptional(),
        /** Scope an operator's bearer token must carry (with auth). Default `taskvisor:operator`. */
        operatorScope: z
          .string()
          .regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'expected an OAuth scope token')
          .exactOptional(),
        /** Whether an upstream that is not ready makes `/readyz` fail. Default false (reported, not gating). */
        upstreamsGateReadiness: z.boolean().exactOptional(),
        /** `/healthz` fails when the event loop's p99 delay exceeds this. Default 2000. */
        maxEventLoopDelayMs: z.number().int().positive().exactOptional(),
        /** Serve the operations routes on a port of their own too (for stdio/WebSocket-only serving). */
        listen: z
          .strictObject({
            host: z.string().min(1).exactOptional(),
            port: z.number().int().min(0).max(65535),
          })
          .exactOptional(),
      })
      .exactOptional(),
    /** The runtime state file (secrets, upstream capability cache and health), relative to the config file. */
    state: z.strictObject({ file: z.string().min(1).exactOptional() }).exactOptional(),
    /** Upstream credentials at rest (the sealing key) and the OAuth callback (docs/configuration.md "credentials"). */
    credentials: CredentialsConfigSchema.exactOptional(),
  })
  .superRefine((config, ctx) => {
    config.upstreams?.forEach((entry, index) => {
      const mode = entry.identity?.mode ?? 'static';
      if (mode === 'static') return;
      const path = ['upstreams', index, 'identity'];
      // A stdio child has no per-request credentials to carry.
      if (entry.type !== 'streamable-http')
        ctx.addIssue({
          code: 'custom',
          path,
          message: `identity ${mode} needs type: streamable-http (a stdio upstream cannot act as each caller)`,
        });
      // Tokens travel to the upstream (callers' own, exchanged ones, or principals' OAuth grants): never in clear over a network.
      else if (!secureOrLoopback(entry.url))
        ctx.addIssue({
          code: 'custom',
          path: ['upstreams', index, 'url'],
          message: `identity ${mode} sends ${mode === 'oauth' ? 'each principal\u2019s OAuth tokens' : "callers' tokens"} to this upstream: use https:// (http:// only to a loopback address)`,
        });
      // Each principal's own grant is stored sealed: no key, no grants. (Any principal may hold one: stdio's local user too.)
      else if (mode === 'oauth') {
        if (config.credentials === undefined)
          ctx.addIssue({
            code: 'custom',
            path,
            message: 'mode oauth needs the top-level credentials section (keyEnv or keyFile) to seal each principal\u2019s grant',
          });
      }
      // Acting as the caller needs the caller's token: only bearer authentication has one.
      else if (config.auth === undefined || config.auth.kind === 'none')
        ctx.addIssue({
          code: 'custom',
          path,
          message: `identity ${mode} forwards the caller's bearer token, but no bearer authentication is configured (auth: token-file or jwt)`,
        });
    });
  });
export type AuthConfig = z.infer<typeof AuthConfigSchema>;

export type TaskvisorConfig = z.infer<typeof ConfigSchema>;
export type ToolModuleEntry = z.infer<typeof ToolModuleEntrySchema>;
export type UpstreamEntry = z.infer<typeof UpstreamEntrySchema>;
