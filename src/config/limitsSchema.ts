/**
 * The `limits:` section of the config file: the same keys as
 * `RuntimeOptions.limits` (see `src/limits/Limits.ts` for meanings and
 * defaults). Every value is a positive integer; `maxTaskTtlMs` may be `null`
 * (no cap).
 */
import { z } from 'zod';

const positiveInt = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

export const LimitsSchema = z.strictObject({
  maxRequestBodyBytes: positiveInt.optional(),
  maxJsonDepth: positiveInt.max(10_000).optional(),
  maxLiveTasksPerPrincipal: positiveInt.optional(),
  maxPendingInputRequestsPerTask: positiveInt.optional(),
  maxListenStreamsPerPrincipal: positiveInt.optional(),
  maxTaskIdsPerListen: positiveInt.optional(),
  /** A timer cannot wait longer than 2^31-1 ms in one step. */
  requestTimeoutMs: positiveInt.max(2 ** 31 - 1).optional(),
  maxTaskTtlMs: positiveInt.nullable().optional(),
  maxOutboundBufferBytes: positiveInt.optional(),
  outboundGraceMs: positiveInt.max(2 ** 31 - 1).optional(),
  maxHttpSessions: positiveInt.optional(),
  maxHttpSessionsPerPrincipal: positiveInt.optional(),
  httpSessionIdleMs: positiveInt.max(2 ** 31 - 1).optional(),
});
