/**
 * Reading the per-request `_meta` envelope (2026-07-28). Capabilities are
 * checked on each request's own envelope, never remembered (T-01, T-33).
 */
import { CLIENT_CAPABILITIES_META_KEY, type ServerContext } from '@modelcontextprotocol/server';
import type { JsonObject } from '../core/json.js';
import { declaresTasksExtension } from '../core/tasksExtension.js';

/** The client capabilities this request declared (P6: the SDK types the envelope as `{}`). */
export function clientCapabilitiesOf(ctx: ServerContext): JsonObject | undefined {
  return clientCapabilitiesIn(ctx.mcpReq.envelope);
}

/** The client capabilities a request's `_meta` (or the envelope the SDK lifted from it) declares. */
export function clientCapabilitiesIn(meta: Record<string, unknown> | undefined): JsonObject | undefined {
  const capabilities = meta?.[CLIENT_CAPABILITIES_META_KEY];
  return capabilities !== null && typeof capabilities === 'object' ? (capabilities as JsonObject) : undefined;
}

/**
 * Whether this request declared the tasks extension. Any object counts as
 * declared (D-12: `{}` means supported, settings may come later); the legacy
 * `capabilities.tasks` never does (T-37).
 */
export function declaresTasks(ctx: ServerContext): boolean {
  return declaresTasksExtension(clientCapabilitiesOf(ctx));
}
