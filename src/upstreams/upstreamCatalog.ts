/**
 * What an upstream offers, read through the SDK client page by page: its
 * tools, and its resources, resource templates and prompts when it
 * advertised them. Each page has the upstream's deadline.
 */
import type { Client } from '@modelcontextprotocol/client';
import type { JsonObject } from '../core/json.js';
import type { ListedTool } from '../tools/ToolRegistry.js';
import { withTimeout } from './withTimeout.js';

/** One upstream tool as its `tools/list` described it: the same shape the registry lists. */
export type UpstreamTool = ListedTool;

/** An upstream's resources, resource templates and prompts, and whether it completes. */
export interface UpstreamListing {
  resources: JsonObject[];
  templates: JsonObject[];
  prompts: JsonObject[];
  completes: boolean;
}

/** At most this many pages of one list: an upstream whose cursor never ends cannot hold the connect forever. */
const MAX_PAGES = 1000;

/** Every tool the upstream lists (all pages). */
export async function listUpstreamTools(client: Client, timeoutMs: number): Promise<UpstreamTool[]> {
  const tools: UpstreamTool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await withTimeout(
      client.listTools(cursor ? { cursor } : undefined),
      timeoutMs,
      () => `tools/list timed out after ${timeoutMs} ms`,
    );
    // Cast: the SDK's Tool type (zod-inferred, exact inputSchema) vs our JSON ListedTool; the SDK validated the listing.
    tools.push(...(result.tools as UpstreamTool[]));
    cursor = result.nextCursor;
    if (!cursor) break;
  }
  return tools;
}

/** The upstream's resources, resource templates and prompts (all pages), each only when it advertised the capability. */
export async function listUpstreamCatalog(client: Client, timeoutMs: number): Promise<UpstreamListing> {
  const capabilities = (client.getServerCapabilities() ?? {}) as JsonObject;
  const all = async (method: string, key: string, list: (cursor?: string) => Promise<JsonObject>): Promise<JsonObject[]> => {
    const items: JsonObject[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await withTimeout(list(cursor), timeoutMs, () => `${method} timed out after ${timeoutMs} ms`);
      if (Array.isArray(result[key])) items.push(...(result[key] as JsonObject[]));
      cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
      if (!cursor) break;
    }
    return items;
  };
  const page = (cursor?: string) => (cursor ? { cursor } : undefined);
  const hasResources = capabilities.resources !== undefined;
  return {
    resources: hasResources ? await all('resources/list', 'resources', async (c) => await client.listResources(page(c))) : [],
    templates: hasResources
      ? await all('resources/templates/list', 'resourceTemplates', async (c) => await client.listResourceTemplates(page(c)))
      : [],
    prompts: capabilities.prompts !== undefined ? await all('prompts/list', 'prompts', async (c) => await client.listPrompts(page(c))) : [],
    completes: capabilities.completions !== undefined,
  };
}
