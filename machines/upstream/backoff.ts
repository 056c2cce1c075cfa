import type { BackoffPolicy } from './types.js';

/**
 * Delay before connection attempt `attempt + 1` (attempt ≥ 1): exponential
 * growth capped at `maxMs`, with "equal jitter" — half fixed, half drawn from
 * `random01` — so many upstreams failing together do not retry in lockstep.
 * Pure: the caller passes the random draw.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random01: number): number {
  const exponent = Math.max(0, attempt - 1);
  const capped = Math.min(policy.maxMs, policy.initialMs * policy.factor ** exponent);
  const jitter = Math.min(1, Math.max(0, random01));
  return Math.round(capped / 2 + (capped / 2) * jitter);
}
