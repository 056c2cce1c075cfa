/**
 * muster's read-only workflow management tools, under its names, so its
 * clients and its workflows find them: `core_workflow_list`,
 * `core_workflow_get`, `core_workflow_validate` (a definition checked by
 * taskvisor's own loader, nothing written) and `core_workflow_available`.
 * The writing ones (`core_workflow_create` / `update` / `delete`) are not
 * offered: workflows are files, changed by whoever owns the folder.
 */
import { stringify } from 'yaml';
import { z } from 'zod';
import type { JsonObject } from '../../core/json.js';
import type { ToolDefinition, ToolResult } from '../../tools/ToolDefinition.js';
import type { WorkflowDefinition } from '../model/definition.js';
import { toolsCalledBy } from '../model/toolsCalledBy.js';
import { parseWorkflow } from './loadWorkflows.js';

export const WORKFLOW_LIST_TOOL = 'core_workflow_list';
export const WORKFLOW_GET_TOOL = 'core_workflow_get';
export const WORKFLOW_VALIDATE_TOOL = 'core_workflow_validate';
export const WORKFLOW_AVAILABLE_TOOL = 'core_workflow_available';

/** What the tools read: the served workflows and whether a tool exists. */
export interface ServedWorkflows {
  /** The definitions in service. */
  definitions(): readonly WorkflowDefinition[];
  /** The workflow tool name prefix (`workflow_`). */
  prefix(): string;
  /** Whether a tool of this name is served now. */
  hasTool(name: string): boolean;
}

const answer = (value: object): ToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(value) }],
  structuredContent: value as JsonObject,
});

const refusal = (text: string): ToolResult => ({ content: [{ type: 'text', text }], isError: true });

// The name is checked in the handler, not the schema, so a missing one gets muster's words, which its clients match on.
const NameArgs = z.object({ name: z.string().optional().describe('Name of the workflow') });

/** A definition as a client sees it: what its file says, without where the file is (clients never see paths). */
export function publicDefinition(definition: WorkflowDefinition): JsonObject {
  const { file: _file, ...shown } = definition;
  return JSON.parse(JSON.stringify(shown)) as JsonObject;
}

/**
 * muster's availability rule, followed through nested workflows: every tool
 * the workflow calls is served, and every workflow it calls is available too.
 */
export function isAvailable(served: ServedWorkflows, definition: WorkflowDefinition, seen = new Set<string>()): boolean {
  if (seen.has(definition.name)) return true; // A cycle is refused at load time; never loop on one here.
  seen.add(definition.name);
  const byTool = new Map(served.definitions().map((d) => [served.prefix() + d.name, d]));
  return toolsCalledBy(definition).every((tool) => {
    const nested = byTool.get(tool);
    return nested ? isAvailable(served, nested, seen) : served.hasTool(tool);
  });
}

/** The four tools over `served`. */
export function workflowManagementTools(served: ServedWorkflows): ToolDefinition[] {
  const find = (name: string) => served.definitions().find((definition) => definition.name === name);
  const readOnly = { taskBehavior: 'never', annotations: { readOnlyHint: true } } as const;
  return [
    {
      name: WORKFLOW_LIST_TOOL,
      options: {
        title: 'Workflows',
        description: 'Every served workflow, by name, with its description and whether it can run now.',
        inputSchema: z.object({ include_system: z.boolean().optional().describe('Accepted for muster clients; every workflow is listed') }),
        ...readOnly,
      },
      handler: () => {
        const workflows = [...served.definitions()]
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
          .map((definition) => ({
            name: definition.name,
            available: isAvailable(served, definition),
            ...(definition.description ? { description: definition.description } : {}),
          }));
        return Promise.resolve(answer({ workflows }));
      },
    },
    {
      name: WORKFLOW_GET_TOOL,
      options: { title: 'Workflow', description: 'One served workflow: its definition, also as YAML.', inputSchema: NameArgs, ...readOnly },
      handler: (args) => {
        const { name } = args as z.infer<typeof NameArgs>;
        if (!name) return Promise.resolve(refusal('name is required'));
        const definition = find(name);
        if (!definition) return Promise.resolve(refusal(`Failed to get workflow: workflow ${name} not found`));
        const shown = publicDefinition(definition);
        return Promise.resolve(answer({ workflow: shown, yaml: stringify(shown) }));
      },
    },
    {
      name: WORKFLOW_VALIDATE_TOOL,
      options: {
        title: 'Validate a workflow',
        description:
          'Checks a workflow definition (name, description, args, steps, onFailure, output) as the loader would; serves nothing.',
        // The definition is the arguments themselves; the loader, not this schema, judges them.
        inputSchema: z.looseObject({ name: z.string().optional().describe('Name of the workflow') }),
        ...readOnly,
      },
      handler: (args) => {
        const body = args as Record<string, unknown>;
        if (typeof body.name !== 'string' || body.name === '')
          return Promise.resolve(refusal('Validation failed: name argument is required'));
        try {
          parseWorkflow(stringify(body), `${body.name}.yaml`);
        } catch (error) {
          return Promise.resolve(refusal(`Validation failed: ${(error as Error).message}`));
        }
        return Promise.resolve({ content: [{ type: 'text', text: `Validation successful for workflow ${body.name}` }] });
      },
    },
    {
      name: WORKFLOW_AVAILABLE_TOOL,
      options: {
        title: 'Workflow availability',
        description: 'Whether a served workflow can run now: every tool it calls, and every workflow it calls, is available.',
        inputSchema: NameArgs,
        ...readOnly,
      },
      handler: (args) => {
        const { name } = args as z.infer<typeof NameArgs>;
        if (!name) return Promise.resolve(refusal('name argument is required'));
        const definition = find(name);
        if (!definition) return Promise.resolve(refusal(`workflow ${name} not found`));
        return Promise.resolve(answer({ name, available: isAvailable(served, definition) }));
      },
    },
  ];
}
