/**
 * One SDK server instance per serving unit (one HTTP request, one stdio or
 * WebSocket connection: P7), over the parts of a composed runtime. Nothing
 * here outlives the instance but the listeners a connection registers, and
 * those go when it closes.
 */
import type { Principal } from '../core/principal.js';
import { CompletionsSurface } from '../protocol/CompletionsSurface.js';
import { PromptsSurface } from '../protocol/PromptsSurface.js';
import { ResourcesSurface } from '../protocol/ResourcesSurface.js';
import { TasksExtension } from '../protocol/TasksExtension.js';
import { TaskvisorServer } from '../protocol/TaskvisorServer.js';
import { ToolsSurface } from '../protocol/ToolsSurface.js';
import type { RuntimeParts } from './composeRuntime.js';

/** What an instance is built from. */
export type ServedParts = Pick<
  RuntimeParts,
  'tools' | 'resources' | 'prompts' | 'logger' | 'serverInfo' | 'requestState' | 'upstreams' | 'toolCalls' | 'taskRequests'
>;

/**
 * An instance serving `principal` in `era`. `connection`: it serves a whole
 * connection (stdio, WebSocket), so a 2025-11-25 client on it is sent
 * `notifications/<list>/list_changed` directly (it has no `subscriptions/listen`).
 */
export function createServerInstance(
  parts: ServedParts,
  era: 'modern' | 'legacy',
  principal: Principal,
  connection: boolean,
  instructions: string | undefined,
): TaskvisorServer {
  const { tools, resources, prompts, logger, upstreams } = parts;
  // An aggregator may gain upstream resources and prompts at any time: it always offers the methods.
  const servesResources = resources.size > 0 || upstreams !== undefined;
  const servesPrompts = prompts.size > 0 || upstreams !== undefined;
  const completes = resources.completes || prompts.completes || upstreams !== undefined;
  const server = new TaskvisorServer(parts.serverInfo, {
    // Capabilities only for what is registered now. `logging`: any tool may `ctx.log`, and forwarded upstream
    // log messages are relayed as notifications/message (deprecated in 2026-07-28, still valid).
    capabilities: {
      tools: { listChanged: true },
      logging: {},
      // `subscribe`: 2026-07-28 through listen's resourceSubscriptions; 2025-11-25 only where updates can reach the client.
      ...(servesResources ? { resources: { listChanged: true, ...(era === 'modern' || connection ? { subscribe: true } : {}) } } : {}),
      ...(servesPrompts ? { prompts: { listChanged: true } } : {}),
      ...(completes ? { completions: {} } : {}),
    },
    ...(instructions ? { instructions } : {}),
    requestState: { verify: parts.requestState.verify.bind(parts.requestState) },
  });
  const subscribed = era === 'legacy' && connection ? new Set<string>() : undefined;
  if (servesResources) {
    ResourcesSurface.attach(server, {
      resources,
      principal: principal.id,
      logger,
      ...(subscribed ? { subscriptions: subscribed } : {}),
    });
  }
  if (servesPrompts) PromptsSurface.attach(server, { prompts, principal: principal.id, logger });
  if (completes) CompletionsSurface.attach(server, { resources, prompts, principal: principal.id, logger });
  if (subscribed) sendListChanges(parts, server, servesResources, servesPrompts, subscribed);
  ToolsSurface.attach(server, { tools, calls: parts.toolCalls, principal: principal.id, grants: principal, era, logger });
  // Under 2025-11-25 the extension never enables tasks (T-37): legacy instances get no tasks/*.
  if (era === 'modern') TasksExtension.attach(server, { requests: parts.taskRequests, principal: principal.id, logger });
  return server;
}

/**
 * 2025-11-25 clients on a connection learn of list changes by unsolicited
 * notifications (they have no listen), for the lists whose capability this
 * instance advertised; until the connection closes.
 */
function sendListChanges(parts: ServedParts, server: TaskvisorServer, resources: boolean, prompts: boolean, subscribed: Set<string>): void {
  const send = (method: string, params?: Record<string, unknown>) => (): void => {
    if (!server.transport) return;
    server.notification({ method, ...(params ? { params } : {}) }).catch(() => undefined); // the connection is going away
  };
  const stops = [
    parts.tools.onChange(send('notifications/tools/list_changed')),
    // Only URIs this connection subscribed to (resources/subscribe).
    parts.resources.onUpdated((uri) => subscribed.has(uri) && send('notifications/resources/updated', { uri })()),
    ...(resources ? [parts.resources.onChange(send('notifications/resources/list_changed'))] : []),
    ...(prompts ? [parts.prompts.onChange(send('notifications/prompts/list_changed'))] : []),
  ];
  const onclose = server.onclose;
  server.onclose = () => {
    for (const stop of stops) stop();
    onclose?.();
  };
}
