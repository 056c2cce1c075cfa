/**
 * muster's read-only service and config tools, under its names:
 * `core_service_list` (taskvisor's upstreams as muster's services) and
 * `core_config_get` (a safe view of the served config). The writing ones
 * (`core_service_stop`, …) are not offered: a client does not change the
 * service it talks to.
 */
import { z } from 'zod';
import type { ToolDefinition, ToolResult } from '../../tools/ToolDefinition.js';
import type { JsonObject } from '../../core/json.js';
import type { ServedSetup } from './ServedSetup.js';

export const SERVICE_LIST_TOOL = 'core_service_list';
export const CONFIG_GET_TOOL = 'core_config_get';

const answer = (value: object): ToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(value) }],
  structuredContent: value as JsonObject,
});

/** The two tools over `setup`. */
export function serviceTools(setup: ServedSetup): ToolDefinition[] {
  return [
    {
      name: SERVICE_LIST_TOOL,
      options: {
        title: 'Services',
        description: 'The upstream MCP servers this service aggregates, with their state and health.',
        inputSchema: z.object({}),
        taskBehavior: 'never',
        annotations: { readOnlyHint: true },
      },
      handler: () => Promise.resolve(answer({ services: setup.services() })),
    },
    {
      name: CONFIG_GET_TOOL,
      options: {
        title: 'Configuration',
        description: 'The served configuration: upstream names and kinds, tool namespaces, workflow settings (no secrets).',
        inputSchema: z.object({}),
        taskBehavior: 'never',
        annotations: { readOnlyHint: true },
      },
      handler: () => Promise.resolve(answer({ config: setup.config() })),
    },
  ];
}
