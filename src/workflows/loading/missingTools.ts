/**
 * A start-up warning for each workflow step that names a tool which does not
 * exist: the file still loads (upstream tools may appear later), but a typo
 * should not wait for the first run to show. A tool under an upstream's
 * prefix is checked once that upstream is ready, against its listed tools.
 */
import type { Logger } from '../../runtime/Logger.js';
import type { ToolRegistry } from '../../tools/ToolRegistry.js';
import type { UpstreamManager } from '../../upstreams/UpstreamManager.js';
import { toolsCalledBy } from '../model/toolsCalledBy.js';
import type { WorkflowDefinition } from '../model/definition.js';

export interface MissingToolCheck {
  definitions: readonly WorkflowDefinition[];
  /** The workflow tool name prefix (`workflow_`). */
  prefix: string;
  tools: ToolRegistry;
  upstreams?: UpstreamManager | undefined;
  /** Tool-name prefix of each upstream's tools (`x_demo_`), by upstream name. */
  upstreamPrefixes?: ReadonlyMap<string, string>;
  logger: Logger;
  /** How long to wait for an upstream before giving up on checking its tools (default 5 min). */
  upstreamWaitMs?: number;
}

/** Logs the warnings; resolves when every deferred check is done (tests), never rejects. */
export async function warnAboutMissingTools(check: MissingToolCheck): Promise<void> {
  const workflowTools = new Set(check.definitions.map((definition) => check.prefix + definition.name));
  const deferred = new Map<string, Array<{ workflow: string; tool: string }>>();
  const warn = (workflow: string, tool: string) =>
    check.logger.info(`warning: workflow ${workflow} calls the tool ${tool}, which does not exist (the step will fail when it runs)`);
  for (const definition of check.definitions) {
    for (const tool of toolsCalledBy(definition)) {
      if (check.tools.has(tool) || workflowTools.has(tool)) continue;
      const upstream = [...(check.upstreamPrefixes ?? [])].find(([, prefix]) => tool.startsWith(prefix))?.[0];
      if (upstream && check.upstreams) {
        const list = deferred.get(upstream) ?? [];
        list.push({ workflow: definition.name, tool });
        deferred.set(upstream, list);
      } else warn(definition.name, tool);
    }
  }
  await Promise.all(
    [...deferred].map(async ([upstream, calls]) => {
      try {
        await check.upstreams!.waitFor(upstream, (s) => s.state === 'ready' || s.state === 'degraded', check.upstreamWaitMs ?? 300_000);
      } catch {
        return; // Never connected: its state and error are reported by the upstream itself.
      }
      for (const { workflow, tool } of calls) if (!check.tools.has(tool)) warn(workflow, tool);
    }),
  );
}
