/**
 * What a transport needs of a runtime: its port into the composition root.
 * Transports are adapters and may not import `src/server/` (layers import one
 * way, docs/architecture.md); `TaskvisorRuntime` satisfies this interface.
 */
import type { McpServerFactory } from '@modelcontextprotocol/server';
import type { CallerCredentials } from '../auth/CallerCredentials.js';
import type { Principal } from '../core/principal.js';
import type { Limits } from '../limits/Limits.js';
import type { Logger } from '../runtime/Logger.js';
import type { TaskRequests } from '../protocol/TaskRequests.js';
import type { ToolCalls } from '../protocol/ToolCalls.js';
import type { SubscriptionHub } from '../protocol/SubscriptionHub.js';

export interface ServingRuntime {
  readonly logger: Logger;
  /** The limits in force; transports take their size limits from here. */
  readonly limits: Readonly<Limits>;
  /**
   * The answers to `tasks/get|update|cancel` the SDK handlers give, and the
   * `serverInfo` stamped on results: what the Streamable HTTP fast lane
   * needs to answer those three itself. Absent: no fast lane.
   */
  readonly taskRequests?: TaskRequests;
  /** The answers to `tools/call` the SDK handler gives: the fast lane answers creates with them. */
  readonly toolCalls?: ToolCalls;
  readonly serverInfo?: { readonly name: string; readonly version: string };
  /**
   * Where the bearer gate leaves each principal's accepted token, for
   * upstreams that act as the caller (identity `passthrough`,
   * `tokenExchange`). Absent: no such upstream, tokens are not kept.
   */
  readonly callerCredentials?: CallerCredentials | undefined;
  /** Open `subscriptions/listen` streams: transports hand every modern listen to it (P8). */
  readonly subscriptions: SubscriptionHub;
  /** One SDK server instance per serving unit, bound to the principal `principalOf` resolves (P7). */
  serverFactory(
    principalOf: (ctx: Parameters<McpServerFactory>[0]) => Principal,
    options?: {
      /** The instances serve a connection (a 2025-11-25 HTTP session): list changes and resource updates are pushed to it. */
      connection?: boolean;
    },
  ): McpServerFactory;
  /**
   * Resolves once the runtime serves (recovery done); rejects when it closed
   * first. A transport bound before recovery holds requests
   * on it. Absent: the runtime was started before the transport was built.
   */
  ready?(): Promise<void>;
  /**
   * True while the runtime recovers its unfinished tasks (store open, not yet
   * serving): a transport may then let `tasks/get|update|cancel` through, which
   * answer from the store or with a retryable error.
   */
  recovering?(): boolean;
  /** Runs `close` (sync or async) when the runtime closes; returns the unregistration. */
  onClose(close: () => void | Promise<void>): () => void;
}
