/**
 * `completion/complete`: values for a prompt argument (`ref/prompt`) or a
 * resource template variable (`ref/resource`, the template named by its
 * `uriTemplate`), from the completer registered with it. An argument without
 * a completer completes to nothing; an unknown prompt or template is `-32602`.
 */
import { ProtocolError, type Server } from '@modelcontextprotocol/server';
import { clipClientText } from '../core/clientText.js';
import { ErrorCode } from '../core/errors.js';
import type { Logger } from '../runtime/Logger.js';
import { MAX_COMPLETION_VALUES, type Completer } from '../resources/Completer.js';
import type { CompletionAnswer, ResourceRegistry } from '../resources/ResourceRegistry.js';
import type { PromptRegistry } from '../prompts/PromptRegistry.js';
import { mappingErrors } from './errors.js';

export interface CompletionsSurfaceOptions {
  resources: ResourceRegistry;
  prompts: PromptRegistry;
  principal: string;
  logger?: Logger;
}

export const CompletionsSurface = {
  attach(server: Server, { resources, prompts, principal, logger }: CompletionsSurfaceOptions): void {
    server.setRequestHandler(
      'completion/complete',
      mappingErrors(async (request) => {
        const { ref, argument } = request.params;
        const given = (request.params.context?.arguments ?? {}) as Record<string, string>;
        const run = async (completer: Completer | undefined): Promise<CompletionAnswer> => {
          if (!completer) return { values: [] };
          const values = await completer(argument.value, { arguments: given, principal });
          if (!Array.isArray(values) || values.some((value) => typeof value !== 'string')) {
            throw new ProtocolError(
              ErrorCode.InternalError,
              `The completer of ${argument.name} returned something other than an array of strings`,
            );
          }
          return values.length > MAX_COMPLETION_VALUES
            ? { values: values.slice(0, MAX_COMPLETION_VALUES), total: values.length, hasMore: true }
            : { values, total: values.length, hasMore: false };
        };
        if (ref.type === 'ref/prompt') {
          const forwarded = prompts.getForwarded(ref.name);
          if (forwarded) return { completion: forwarded.complete ? await forwarded.complete(argument, given) : { values: [] } };
          const prompt = prompts.get(ref.name);
          if (!prompt) throw new ProtocolError(ErrorCode.InvalidParams, `Unknown prompt: ${clipClientText(ref.name)}`);
          return { completion: await run(prompt.options.arguments?.find((a) => a.name === argument.name)?.complete) };
        }
        const template = resources.templateDefinitions().find((t) => t.uriTemplate === ref.uri);
        if (template) return { completion: await run(template.options.complete?.[argument.name]) };
        const space = resources.spaceOf(ref.uri);
        if (space?.templates.some((t) => t.uriTemplate === ref.uri)) {
          return { completion: space.complete ? await space.complete(ref.uri, argument, given) : { values: [] } };
        }
        throw new ProtocolError(ErrorCode.InvalidParams, `Unknown resource template: ${clipClientText(ref.uri)}`);
      }, logger),
    );
  },
};
