/**
 * The `limits:` section of the config file: the same keys as
 * `RuntimeOptions.limits` (see `src/limits/Limits.ts` for meanings and
 * defaults). Every value is a positive integer; `maxTaskTtlMs` may be `null`
 * (no cap).
 */
import { z } from 'zod';

const positiveInt = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

export const LimitsSchema = z.strictObject({
  maxRequestBodyBytes: positiveInt.exactOptional(),
  maxJsonDepth: positiveInt.max(10_000).exactOptional(),
  maxJsonKeys: positiveInt.exactOptional(),
  maxJsonNodes: positiveInt.exactOptional(),
  maxMetaNodes: positiveInt.exactOptional(),
  maxLiveTasksPerPrincipal: positiveInt.exactOptional(),
  maxPendingInputRequestsPerTask: positiveInt.exactOptional(),
  maxListenStreamsPerPrincipal: positiveInt.exactOptional(),
  maxTaskIdsPerListen: positiveInt.exactOptional(),
  maxListenUriBytes: positiveInt.exactOptional(),
  maxListenUriBytesPerListen: positiveInt.exactOptional(),
  maxListenUriBytesPerPrincipal: positiveInt.exactOptional(),
  /** A timer cannot wait longer than 2^31-1 ms in one step. */
  requestTimeoutMs: positiveInt.max(2 ** 31 - 1).exactOptional(),
  maxTaskTtlMs: positiveInt.nullable().exactOptional(),
  maxOutboundBufferBytes: positiveInt.exactOptional(),
  maxOutboundBytesPerPrincipal: positiveInt.exactOptional(),
  outboundGraceMs: positiveInt.max(2 ** 31 - 1).exactOptional(),
  maxPipelinedRequests: positiveInt.exactOptional(),
  maxHttpSessions: positiveInt.exactOptional(),
  maxHttpSessionsPerPrincipal: positiveInt.exactOptional(),
  httpSessionIdleMs: positiveInt.max(2 ** 31 - 1).exactOptional(),
  maxInboundBodyBytesPerPrincipal: positiveInt.exactOptional(),
  maxInboundBodyBytes: positiveInt.exactOptional(),
  requestBodyTimeoutMs: positiveInt.max(2 ** 31 - 1).exactOptional(),
  maxInflightRequestsPerConnection: positiveInt.exactOptional(),
});
