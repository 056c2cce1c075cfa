/**
 * An upstream's tools as the runtime's {@link ToolRegistry} serves them:
 * each forwarded to the upstream, and — when it has no task support of its
 * own there — also holdable as a taskvisor task (server-directed promotion
 * of upstream calls, docs/aggregator.md "Promoted calls"), with the
 * `taskBehavior`, `promoteAfterMs` and resume policy its upstream's
 * `promotion` config and its `idempotentHint` give it.
 *
 * What a restart needs to know about the held tools (their upstream names
 * and hints) is kept in the runtime state file, so the tasks of an upstream
 * that is not connected yet at start-up are recovered by their policy:
 * failed, or run again once the upstream is back (`replay`), never silently.
 */
import type { JsonObject } from '../core/json.js';
import { ErrorCode, ToolError } from '../core/errors.js';
import type { Logger } from '../runtime/Logger.js';
import type { ToolCallRequest } from '../tools/ToolCall.js';
import type { ToolDefinition, ToolOptions } from '../tools/ToolDefinition.js';
import type { ForwardedEntry, ListedTool } from '../tools/ToolRegistry.js';
import { resumeOf } from './forwardedResume.js';
import { heldCallHandler } from './HeldUpstreamCall.js';
import { legacyTaskSupport, type LegacyTaskSupport } from './legacyTaskShapes.js';
import type { HeldToolEntry } from './RuntimeStateFile.js';
import type { UpstreamConnection, UpstreamTool } from './UpstreamConnection.js';
import type { UpstreamSpec } from './UpstreamSpec.js';
import { forwardedToolName } from './toolNames.js';

/** What building an upstream's tools needs of the upstream manager. */
export interface ForwardedToolsHost {
  namespace: string;
  logger: Logger;
  prefixOf(spec: UpstreamSpec): string;
  /** Forwards one call as is (passthrough, collapse, plain). */
  forward(upstream: string, tool: string, request: ToolCallRequest, taskSupport: LegacyTaskSupport): ReturnType<ForwardedEntry['forward']>;
  /** Follows a task `upstream` answered a held call with unasked (see `TaskForwarder.collapseUnasked`). */
  collapseUnasked(
    upstream: string,
    connection: UpstreamConnection,
    upstreamId: string,
    first: JsonObject,
    request: ToolCallRequest,
  ): ReturnType<ForwardedEntry['forward']>;
  /** The open connection of `upstream` now, or `undefined`. */
  connection(upstream: string): UpstreamConnection | undefined;
  /** The open connection of `upstream`, waiting for it to be ready (a task run again after a restart); rejects when it cannot be had. */
  heldConnection(upstream: string, signal: AbortSignal): Promise<UpstreamConnection>;
}

/** The registry entries for `tools` of `spec`'s upstream on `connection`, and what a restart must know of the held ones. */
export function forwardedToolEntries(
  host: ForwardedToolsHost,
  spec: UpstreamSpec,
  tools: UpstreamTool[],
  connection: UpstreamConnection,
): { entries: ForwardedEntry[]; held: Record<string, HeldToolEntry> } {
  const name = spec.name;
  const prefix = host.prefixOf(spec);
  const seen = new Set<string>();
  const entries: ForwardedEntry[] = [];
  const held: Record<string, HeldToolEntry> = {};
  for (const tool of tools) {
    if (typeof tool?.name !== 'string') continue;
    const exposed = forwardedToolName(host.namespace, prefix, tool.name);
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(exposed) || seen.has(exposed)) {
      host.logger.error(
        `upstream ${name}: tool ${JSON.stringify(tool.name)} skipped (${seen.has(exposed) ? 'duplicate' : 'invalid'} name ${exposed})`,
      );
      continue;
    }
    seen.add(exposed);
    const listed: ListedTool = {
      name: exposed,
      ...(typeof tool.title === 'string' ? { title: tool.title } : {}),
      ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
      inputSchema: isObject(tool.inputSchema) ? tool.inputSchema : { type: 'object', properties: {} },
      ...(isObject(tool.outputSchema) ? { outputSchema: tool.outputSchema } : {}),
      ...(isObject(tool.annotations) ? { annotations: tool.annotations } : {}),
    };
    const upstreamTool = tool.name;
    // 2025-11-25 task-augmented tools keep their execution.taskSupport for the forwarder; the listing drops it (2026-07-28 has none).
    const taskSupport = legacyTaskSupport(tool as { execution?: unknown });
    const forward = (request: ToolCallRequest) => host.forward(name, upstreamTool, request, taskSupport);
    // A tool with tasks of its own upstream is passed through (or bridged), never held. Nor is a tool of an
    // upstream that sees each caller as themselves: a held call would go over the shared connection, as
    // taskvisor, and a restart could not act as the caller again (docs/aggregator.md "Promoted calls").
    if (connection.tasks || taskSupport !== 'forbidden' || !sharedIdentity(spec)) {
      entries.push({ listed, forward });
      continue;
    }
    const entry: HeldToolEntry = { tool: upstreamTool, ...(tool.annotations?.idempotentHint === true ? { idempotentHint: true } : {}) };
    held[exposed] = entry;
    entries.push({ listed, forward, held: heldParts(host, spec, exposed, entry, listed) });
  }
  return { entries, held };
}

/**
 * The definition of a held tool of `spec`'s upstream that is not listed now
 * (the upstream is not connected yet): what recovery, restore and
 * passivation read. Its run waits for the upstream to be ready.
 */
export function offlineHeldTool(host: ForwardedToolsHost, spec: UpstreamSpec, exposed: string, entry: HeldToolEntry): ToolDefinition {
  const { options, handler, held } = heldParts(host, spec, exposed, entry, { name: exposed, inputSchema: { type: 'object' } });
  return {
    name: exposed,
    options,
    handler,
    held,
    // Not listed, so never called: a call of it would go to the registry's listed tool.
    forward: (request) => host.forward(spec.name, entry.tool, request, 'forbidden'),
  };
}

/** The options, handler and holding rule of one held tool. */
function heldParts(
  host: ForwardedToolsHost,
  spec: UpstreamSpec,
  exposed: string,
  entry: HeldToolEntry,
  listed: ListedTool,
): NonNullable<ForwardedEntry['held']> {
  const name = spec.name;
  const promotion = spec.promotion ?? {};
  const own = promotion.tools?.[entry.tool] ?? {};
  const promoteAfterMs = own.promoteAfterMs ?? promotion.promoteAfterMs;
  // A held request does not survive the process: sent again only for a tool said to be idempotent (config first, then its hint).
  const idempotent = own.idempotent ?? entry.idempotentHint === true;
  const options: ToolOptions = {
    ...(listed.title !== undefined ? { title: listed.title } : {}),
    ...(listed.description !== undefined ? { description: listed.description } : {}),
    taskBehavior: own.taskBehavior ?? promotion.taskBehavior ?? 'auto',
    ...(promoteAfterMs !== undefined ? { promoteAfterMs } : {}),
    resume: idempotent ? 'replay' : 'fail',
  };
  const handler = heldCallHandler({
    upstream: name,
    tool: entry.tool,
    exposed,
    connection: (signal) => host.heldConnection(name, signal),
    collapse: async (connection, upstreamId, first, ctx) => {
      const request: ToolCallRequest = {
        name: exposed,
        args: {},
        principal: ctx.principal,
        declaresTasks: false,
        signal: ctx.signal,
        cannotAnswerInput: true,
      };
      const outcome = await host.collapseUnasked(name, connection, upstreamId, first, request);
      if (outcome.kind === 'result') return outcome.result;
      throw new ToolError(
        ErrorCode.InternalError,
        `The upstream tool ${exposed} answered with a task nobody asked for, and it needs input`,
      );
    },
    ...(promotion.timeoutMs !== undefined ? { timeoutMs: promotion.timeoutMs } : {}),
    logger: host.logger,
  });
  return {
    options,
    handler,
    held: {
      upstream: name,
      // Held only while the upstream has no tasks of its own, and never the MRTR retry of a forwarded round.
      holds: (request) => resumeOf(request) === undefined && host.connection(name)?.tasks === false,
    },
  };
}

/** Whether every caller reaches `spec`'s upstream as taskvisor itself (identity `static`, the default). */
function sharedIdentity(spec: UpstreamSpec): boolean {
  return spec.identity === undefined || spec.identity.mode === 'static';
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
