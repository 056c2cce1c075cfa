/**
 * The config file format (`taskvisor.yaml` or `.json`). Every object is
 * strict: an unknown key is an error, not a silent no-op.
 */
import { z } from 'zod';
import { LimitsSchema } from './limitsSchema.js';

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
  /** Resource limits (docs/security-limits.md); safe defaults when absent. */
  limits: LimitsSchema.optional(),
});

export type TaskvisorConfig = z.infer<typeof ConfigSchema>;
export type ToolModuleEntry = z.infer<typeof ToolModuleEntrySchema>;
