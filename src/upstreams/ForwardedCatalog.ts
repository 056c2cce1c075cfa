/**
 * An upstream's resources, resource templates and prompts as the runtime's
 * registries serve them (docs/aggregator.md): prompts named like tools
 * (`<namespace>_<prefix>_<prompt>`), URIs behind the upstream's scheme prefix
 * (`resourceUris.ts`). Reads, prompt gets and completions go to the upstream
 * with its own names and come back with ours: every URI the upstream returns
 * in `contents` or in an embedded resource is rewritten, and an error naming
 * the upstream's URI or prompt names the client-visible one instead.
 */
import type { JsonObject } from '../core/json.js';
import { ErrorCode, TaskvisorError } from '../core/errors.js';
import type { ForwardedPrompt, ListedPrompt, PromptMessage, PromptResult } from '../prompts/PromptDefinition.js';
import type { ListedResource, ListedResourceTemplate, ReadResourceResult, ResourceContents } from '../resources/ResourceDefinition.js';
import type { CompletionAnswer, ForwardedResourceSpace } from '../resources/ResourceRegistry.js';
import type { RawOutcome } from './UpstreamConnection.js';
import { forwardedResourceUri, upstreamResourceUri } from './resourceUris.js';
import { forwardedToolName } from './toolNames.js';
import { UpstreamUnavailableError } from './UpstreamUnavailableError.js';

/** What the catalog needs of a connection: one raw request at a time (both eras). */
export interface CatalogConnection {
  request(method: string, params: JsonObject, capabilities: JsonObject): Promise<RawOutcome>;
}

export interface UpstreamCatalogListing {
  resources: JsonObject[];
  templates: JsonObject[];
  prompts: JsonObject[];
}

export interface ForwardedCatalogOptions {
  upstream: string;
  namespace: string;
  prefix: string;
  /** The live connection, looked up on every request (it changes on reconnect). */
  connection: () => CatalogConnection | undefined;
  /** Whether the upstream advertised `completions`. */
  completes: boolean;
  /** The error a client gets when the upstream cannot be reached (retryable, with its state). */
  unavailable: (error: UpstreamUnavailableError) => Error;
}

/** The resource space and prompts of one upstream, from its listings. */
export function forwardedCatalog(
  listing: UpstreamCatalogListing,
  options: ForwardedCatalogOptions,
): { space: ForwardedResourceSpace; prompts: ForwardedPrompt[] } {
  const { namespace, prefix } = options;
  const resourcePrefix = forwardedResourceUri(namespace, prefix, '');
  const down = (uri: string) => forwardedResourceUri(namespace, prefix, uri);
  const up = (uri: string) => upstreamResourceUri(resourcePrefix, uri) ?? uri;

  const send = async (method: string, params: JsonObject, names: Array<[upstream: string, downstream: string]>): Promise<JsonObject> => {
    let outcome: RawOutcome;
    try {
      const connection = options.connection();
      if (!connection) throw new UpstreamUnavailableError(options.upstream, `upstream ${options.upstream} is not connected`);
      outcome = await connection.request(method, params, {});
    } catch (error) {
      throw error instanceof UpstreamUnavailableError ? options.unavailable(error) : error;
    }
    if (outcome.kind === 'result') return outcome.result;
    // The upstream's error, in the names the client used.
    let message = outcome.error.message;
    for (const [upstream, downstream] of names) message = message.split(upstream).join(downstream);
    throw new TaskvisorError(outcome.error.code, message, outcome.error.data);
  };

  // An upstream's listing entries are untyped JSON; the guards check the members we rely on (uri/name,
  // uriTemplate/name) and the rest passes through as the upstream sent it, as the client expects.
  const resources: ListedResource[] = listing.resources.filter(isResourceEntry).map((r) => ({ ...r, uri: down(r.uri) }));
  const templates: ListedResourceTemplate[] = listing.templates
    .filter(isTemplateEntry)
    .map((t) => ({ ...t, uriTemplate: down(t.uriTemplate) }));

  const completion = (answer: JsonObject): CompletionAnswer => {
    const completion = (answer.completion ?? {}) as JsonObject;
    return {
      values: Array.isArray(completion.values) ? completion.values.filter((v): v is string => typeof v === 'string') : [],
      ...(typeof completion.total === 'number' ? { total: completion.total } : {}),
      ...(typeof completion.hasMore === 'boolean' ? { hasMore: completion.hasMore } : {}),
    };
  };

  const space: ForwardedResourceSpace = {
    prefix: resourcePrefix,
    resources,
    templates,
    read: async (uri) => {
      const original = up(uri);
      const result = await send('resources/read', { uri: original }, [[original, uri]]);
      return rewriteContents(result, down);
    },
    ...(options.completes
      ? {
          complete: async (uriTemplate: string, argument: { name: string; value: string }, context: Record<string, string>) =>
            completion(
              await send(
                'completion/complete',
                { ref: { type: 'ref/resource', uri: up(uriTemplate) }, argument, context: { arguments: context } },
                [[up(uriTemplate), uriTemplate]],
              ),
            ),
        }
      : {}),
  };

  const seen = new Set<string>();
  const prompts: ForwardedPrompt[] = [];
  for (const prompt of listing.prompts) {
    if (typeof prompt.name !== 'string') continue;
    const original = prompt.name;
    const name = forwardedToolName(namespace, prefix, original);
    if (seen.has(name)) continue;
    seen.add(name);
    // An upstream's prompt entry is untyped JSON passed through; only its name is ours (checked above).
    const listed: ListedPrompt = { ...prompt, name };
    prompts.push({
      listed,
      get: async (args) => {
        const result = await send('prompts/get', { name: original, arguments: args }, [[original, name]]);
        return rewriteMessages(result, down);
      },
      ...(options.completes
        ? {
            complete: async (argument: { name: string; value: string }, context: Record<string, string>) =>
              completion(
                await send(
                  'completion/complete',
                  { ref: { type: 'ref/prompt', name: original }, argument, context: { arguments: context } },
                  [[original, name]],
                ),
              ),
          }
        : {}),
    });
  }
  return { space, prompts };
}

/** A `resources/list` entry with the members the catalog relies on. */
function isResourceEntry(entry: JsonObject): entry is JsonObject & { uri: string; name: string } {
  return typeof entry.uri === 'string' && typeof entry.name === 'string';
}

/** A `resources/templates/list` entry with the members the catalog relies on. */
function isTemplateEntry(entry: JsonObject): entry is JsonObject & { uriTemplate: string; name: string } {
  return typeof entry.uriTemplate === 'string' && typeof entry.name === 'string';
}

/**
 * `resources/read` contents with every `uri` ours; the upstream's serverInfo `_meta` is dropped (ours is stamped).
 * The upstream's own read result, passed through with its URIs renamed: the items are its (the SDK checked their shape).
 */
function rewriteContents(result: JsonObject, down: (uri: string) => string): ReadResourceResult {
  if (!Array.isArray(result.contents)) {
    throw new TaskvisorError(ErrorCode.InternalError, 'The upstream answered resources/read without a contents array');
  }
  const { _meta: _ignored, resultType: _type, ...rest } = result;
  return {
    ...rest,
    contents: result.contents.map((item: ResourceContents) => (typeof item.uri === 'string' ? { ...item, uri: down(item.uri) } : item)),
  };
}

/** `prompts/get` messages with embedded resources' and resource links' URIs ours; the rest is the upstream's own result. */
function rewriteMessages(result: JsonObject, down: (uri: string) => string): PromptResult {
  if (!Array.isArray(result.messages)) {
    throw new TaskvisorError(ErrorCode.InternalError, 'The upstream answered prompts/get without a messages array');
  }
  const { _meta: _ignored, resultType: _type, ...rest } = result;
  return {
    ...rest,
    messages: result.messages.map((message: PromptMessage): PromptMessage => {
      const content = message.content as PromptMessage['content'] | undefined;
      if (content?.type === 'resource' && content.resource && typeof content.resource === 'object') {
        return { ...message, content: { ...content, resource: withUri(content.resource as JsonObject, down) } };
      }
      if (content?.type === 'resource_link' && typeof content.uri === 'string') {
        return { ...message, content: { ...content, uri: down(content.uri) } };
      }
      return message;
    }),
  };
}

function withUri(item: JsonObject, down: (uri: string) => string): JsonObject {
  return typeof item.uri === 'string' ? { ...item, uri: down(item.uri) } : item;
}
