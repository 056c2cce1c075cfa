/**
 * An upstream's tools as registry entries: exposed under
 * `<namespace>_<prefix>_<tool>`, listed with what the listing may show, each
 * forwarding to the upstream tool it came from.
 */
import type { JsonObject } from '../core/json.js';
import type { ListedTool, ToolRegistry } from '../tools/ToolRegistry.js';
import { legacyTaskSupport, type LegacyTaskSupport } from './legacyTaskShapes.js';
import type { UpstreamTool } from './UpstreamConnection.js';
import { forwardedToolName } from './toolNames.js';

type Forward = Parameters<ToolRegistry['addForwarded']>[1];

export interface ForwardedToolOptions {
  namespace: string;
  prefix: string;
  /** Told of each tool left out (invalid or duplicate exposed name). */
  skipped(message: string): void;
  /** The forwarding function of upstream tool `tool`. */
  forward(tool: string, taskSupport: LegacyTaskSupport): Forward;
}

/** The registry entries of `tools` (invalid and duplicate names left out). */
export function forwardedToolEntries(
  tools: UpstreamTool[],
  options: ForwardedToolOptions,
): Array<{ listed: ListedTool; forward: Forward }> {
  const seen = new Set<string>();
  const entries: Array<{ listed: ListedTool; forward: Forward }> = [];
  for (const tool of tools) {
    if (typeof tool?.name !== 'string') continue;
    const exposed = forwardedToolName(options.namespace, options.prefix, tool.name);
    if (!/^[A-Za-z0-9_.-]{1,128}$/.test(exposed) || seen.has(exposed)) {
      options.skipped(`tool ${JSON.stringify(tool.name)} skipped (${seen.has(exposed) ? 'duplicate' : 'invalid'} name ${exposed})`);
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
    // 2025-11-25 task-augmented tools keep their execution.taskSupport for the forwarder; the listing drops it (2026-07-28 has none).
    entries.push({ listed, forward: options.forward(tool.name, legacyTaskSupport(tool as { execution?: unknown })) });
  }
  return entries;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
