/**
 * `resources/list`, `resources/templates/list` and `resources/read` on one
 * SDK server instance, from the runtime's `ResourceRegistry`. A URI is read
 * from, in order: the resource registered with exactly that URI, the
 * upstream whose reserved prefix it carries (the aggregator's), the first
 * template (registration order) whose RFC 6570 pattern matches it (the SDK's
 * `UriTemplate`). Anything else
 * is the SDK's `ResourceNotFoundError` (-32602 with `data.uri`).
 */
import { ProtocolError, ResourceNotFoundError, UriTemplate, type Server, type ServerContext } from '@modelcontextprotocol/server';
import { clipClientText } from '../core/clientText.js';
import { ErrorCode } from '../core/errors.js';
import type { Logger } from '../runtime/Logger.js';
import type { ReadResourceResult, ResourceContext, ResourceTemplateDefinition } from '../resources/ResourceDefinition.js';
import type { ResourceRegistry } from '../resources/ResourceRegistry.js';
import { mappingErrors } from './errors.js';
import { sdkReadResourceResult, sdkResources, sdkResourceTemplates } from './sdkShapes.js';

export interface ResourcesSurfaceOptions {
  resources: ResourceRegistry;
  principal: string;
  logger?: Logger;
  /**
   * A 2025-11-25 connection's subscribed URIs: `resources/subscribe` and
   * `resources/unsubscribe` are served and keep this set (the runtime sends
   * `notifications/resources/updated` for its URIs). Absent: not offered.
   */
  subscriptions?: Set<string>;
}

/** Compiled templates, kept with their definition (the registry copies a definition once, on add). */
const compiled = new WeakMap<ResourceTemplateDefinition, UriTemplate>();

/** The SDK's matcher for `template` (compiled once). */
export function uriTemplateOf(template: ResourceTemplateDefinition): UriTemplate {
  let matcher = compiled.get(template);
  if (!matcher) {
    matcher = new UriTemplate(template.uriTemplate);
    compiled.set(template, matcher);
  }
  return matcher;
}

export const ResourcesSurface = {
  attach(server: Server, { resources, principal, logger, subscriptions }: ResourcesSurfaceOptions): void {
    const context = (ctx: ServerContext): ResourceContext => ({ principal, signal: ctx.mcpReq.signal });
    // The domain's JSON named as the SDK's types: sdkShapes.ts says why that is an assertion, not a conversion.

    server.setRequestHandler(
      'resources/list',
      mappingErrors(async (_request, ctx) => ({ resources: sdkResources(await resources.list(context(ctx))) }), logger),
    );
    if (subscriptions) {
      // Any URI may be watched, also one not readable yet: its updates are the application's to announce.
      server.setRequestHandler('resources/subscribe', (request) => (subscriptions.add(request.params.uri), {}));
      server.setRequestHandler('resources/unsubscribe', (request) => (subscriptions.delete(request.params.uri), {}));
    }
    server.setRequestHandler('resources/templates/list', () => ({ resourceTemplates: sdkResourceTemplates(resources.listTemplates()) }));
    server.setRequestHandler(
      'resources/read',
      mappingErrors(async (request, ctx) => {
        const { uri } = request.params;
        const fixed = resources.get(uri);
        if (fixed) return sdkReadResourceResult(normalize(fixed.name, uri, fixed.options.mimeType, await fixed.read(uri, context(ctx))));
        // An upstream's prefix is reserved for it: no local template may take its URIs.
        const space = resources.spaceOf(uri);
        if (space) return sdkReadResourceResult(await space.read(uri, context(ctx)));
        for (const template of resources.templateDefinitions()) {
          const variables = uriTemplateOf(template).match(uri);
          if (variables) {
            return sdkReadResourceResult(
              normalize(template.name, uri, template.options.mimeType, await template.read(uri, variables, context(ctx))),
            );
          }
        }
        throw new ResourceNotFoundError(clipClientText(uri));
      }, logger),
    );
  },
};

/** A reader's answer as a `ReadResourceResult`; a string is one text item. A malformed answer is the reader's bug. */
function normalize(name: string, uri: string, mimeType: string | undefined, returned: ReadResourceResult | string): ReadResourceResult {
  if (typeof returned === 'string') return { contents: [{ uri, ...(mimeType !== undefined ? { mimeType } : {}), text: returned }] };
  const contents = (returned as { contents?: unknown } | null)?.contents;
  if (!Array.isArray(contents) || contents.some((item) => item === null || typeof item !== 'object' || typeof item.uri !== 'string')) {
    throw new ProtocolError(
      ErrorCode.InternalError,
      `Resource ${name} returned an invalid result: expected a string or an object with a contents array of { uri, text | blob }`,
    );
  }
  return returned;
}
